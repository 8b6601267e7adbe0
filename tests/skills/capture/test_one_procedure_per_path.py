"""One procedure per path, not per wording: tickets of one kind in customers' own words, through the example workflow
that learns (`examples/ticket_learning`, its scripted model), are one procedure whose other wordings are aliases naming
the run each came from; a run of another path is another procedure; a near miss of an alias is not replayed; a failed
run adds nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sherpa_skills import SkillStore
from sherpa_skills.cli import main
from sherpa_skills.engine.agent import RunResult
from sherpa_skills.runtime import load_workflow, load_workflow_text
from sherpa_skills.skills.store.scoring import replay_refusal

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "ticket_learning"
WORKFLOW = "ticket-learning"
#: Four refund tickets as four customers wrote them (the first is the example's own).
WORDINGS = [
    "Please refund my order, it arrived damaged",
    "I was sent a broken kettle, I want a refund",
    "Refund my order please, half the plates were shattered",
    "Need a refund - the headphones arrived crushed",
]


def ticket(skills: SkillStore, text: str, order: str, workflow: Any = None, **more: Any) -> RunResult:
    workflow = workflow or load_workflow(EXAMPLE / "workflow.yaml")
    return workflow.agent(learn=skills).run({"ticket": text, "order": order, **more})


def described(text: str) -> str:
    return f"{text} {{{{ order }}}}"  # as a run's task is described: its one-word input as a parameter


@pytest.fixture
def four(tmp_path: Path) -> tuple[SkillStore, list[RunResult]]:
    skills = SkillStore(tmp_path)
    results = [ticket(skills, text, str(4400 + n)) for n, text in enumerate(WORDINGS)]
    assert [(r.status, r.state) for r in results] == [("final", "closed")] * 4
    return skills, results


class TestFourWordingsOfOneKind:
    def test_are_one_procedure_whose_other_wordings_are_aliases_naming_their_runs(self, four):
        """The second wording took the first's path on its own (its LLM decided): a counted success of that procedure
        and an alias whose source and confirmation are that run; the third and fourth were asked about (the judge
        chose it) and replayed it: each alias names its run. Four counted successes, proven, replayable."""
        skills, results = four
        [proc] = skills.procedures(WORKFLOW)
        assert (proc.description, [d.trigger for d in proc.decisions]) == (described(WORDINGS[0]), ["refund", "close"])
        assert (proc.success_count, proc.failure_count, proc.proven) == (4, 0, True)
        assert replay_refusal(proc, skills.store.health(proc.id)) is None
        aliases = skills.aliases(proc.id)
        assert [(a.kind, a.text, a.source) for a in aliases] == [
            ("alias", described(text), f"run:{r.run_id}") for text, r in zip(WORDINGS[1:], results[1:], strict=True)
        ]
        assert aliases[0].by == aliases[0].source  # that run's success on the same path is the confirmation
        assert all(a.by in (a.source, "model:scripted/tickets.script.yaml") for a in aliases)
        assert results[1].learning["alias"] == {"id": aliases[0].id, "procedure": proc.id, "source": aliases[0].source}

    def test_an_aliased_wording_replays_its_procedure_with_no_llm_call(self, four):
        skills, _ = four
        again = ticket(skills, WORDINGS[1], "4499")
        assert (again.state, again.llm_calls, again.replayed_decisions) == ("closed", 0, 2)
        assert again.context["refunded"] == "4499"
        assert len(skills.procedures(WORKFLOW)) == 1 and len(skills.aliases()) == 3  # the same wording: no new alias

    @pytest.mark.parametrize(
        "near_miss",
        [
            "I was sent a broken kettle, I want a replacement",  # object swapped
            "I was sent a broken kettle, I want a repair",
            "I was sent a broken kettle, cancel my refund",  # verb swapped
            "Replace my order please, half the plates were shattered",
            "Need a replacement - the headphones arrived crushed",
        ],
    )
    def test_a_near_miss_of_an_alias_is_not_replayed(self, four, near_miss):
        """An alias helps its own wording match; it does not lower the bar for the wordings near it."""
        skills, _ = four
        decision = skills.match(described(near_miss), WORKFLOW, params={"order": "4498"})
        assert decision.decision != "match", decision.selected

    def test_a_near_miss_run_follows_no_procedure_and_adds_no_alias(self, four):
        skills, _ = four
        [proc] = skills.procedures(WORKFLOW)
        missed = ticket(skills, "I was sent a broken kettle, I want a replacement", "4497")
        assert missed.learning["procedure"] is None and missed.diverged_at is None
        assert [a.text for a in skills.aliases(proc.id) if a.kind == "alias"] == [described(t) for t in WORDINGS[1:]]


def test_a_runs_alias_vouches_for_no_wording_close_to_it(tmp_path: Path) -> None:
    """No judge said what a run's wording means: it matches itself only. Vouched for by meaning (close to the alias
    and to the description), an unrelated question was replayed as a refund in bench/ticket_wordings_bench.py."""
    skills = SkillStore(tmp_path)
    ticket(skills, "I was sent a broken kettle, I want a refund", "4400")
    ticket(skills, "Can you refund the order? The frame glass was smashed", "4401")
    [proc] = skills.procedures(WORKFLOW)
    [alias] = skills.aliases(proc.id)
    assert alias.by == alias.source and proc.proven
    unrelated = skills.match(described("Do you sell refurbished phones?"), WORKFLOW, params={"order": "4402"})
    assert unrelated.decision != "match", unrelated.selected
    [row] = skills.matcher.answers.alias_rows(WORKFLOW)
    assert row.exact_only
    itself = skills.match(described("Can you refund the order? The frame glass was smashed"), WORKFLOW)
    assert (itself.decision, itself.procedure_id) == ("match", proc.id)


def test_a_run_names_itself_the_source_only_of_an_alias_it_made(tmp_path: Path) -> None:
    """A wording a person already confirmed keeps no source when a run later takes the procedure's path in it: the run
    did not bring that wording, so `learn show` does not name it and deleting the run is not refused for it."""
    from sherpa_skills.skills.capture.wordings import alias_from_run
    from sherpa_skills.skills.store.models import CapturedProcedure, ProcedureStep

    skills = SkillStore(tmp_path)
    proc = skills.store.add_procedure(
        CapturedProcedure(
            id="", task_type=WORKFLOW, description="refund a damaged order", steps=[ProcedureStep(command="true")]
        )
    )
    person = skills.matcher.confirm("give me my money back", proc.id, task_type=WORKFLOW, by="alice")
    alias = alias_from_run(skills.learner(), proc, "give me my money back", "run-x")
    assert alias is not None and (alias.id, alias.by, alias.source) == (person.id, "alice", None)
    made = alias_from_run(skills.learner(), proc, "the parcel arrived broken", "run-y")
    assert made is not None and (made.by, made.source) == ("run:run-y", "run:run-y")


QUESTIONS = [
    "What time do you close on Saturdays?",
    "Do you deliver on weekends?",
    "How can I track my parcel?",
    "Do you have this sofa in green?",
    "How do I delete my account?",
    "What's the warranty on laptops?",
]


@pytest.mark.parametrize(
    "unrelated", ["Are you hiring?", "Where can I find my invoices?", "Is there free shipping over a certain amount?"]
)
def test_wordings_merged_into_one_procedure_still_stand_as_its_rivals(tmp_path: Path, unrelated: str) -> None:
    """Six questions are one procedure now, five of them aliases rather than descriptions of their own: they still say
    how close that procedure stands, so a judge's alias of the refund procedure does not vouch for another question
    (without them every one of these replayed as a refund)."""
    skills = SkillStore(tmp_path)
    for n, question in enumerate(QUESTIONS):
        ticket(skills, question, str(4300 + n))
    ticket(skills, WORDINGS[1], "4400")
    ticket(skills, WORDINGS[3], "4401")
    [refund] = [p for p in skills.procedures(WORKFLOW) if p.decisions[0].trigger == "refund"]
    skills.confirm(described("Order came damaged, requesting money back"), refund.id, WORKFLOW, by="model:judge")
    assert len(skills.procedures(WORKFLOW)) == 2 and refund.id in {a.procedure_id for a in skills.aliases()}
    decision = skills.match(described(unrelated), WORKFLOW, params={"order": "4402"})
    assert decision.decision != "match", decision.selected


def test_a_run_of_another_path_stays_another_procedure(tmp_path: Path) -> None:
    """A refund whose charge is disputed goes to the disputes team: another path in other words is another
    procedure, not an alias of the routine refund."""
    skills = SkillStore(tmp_path)
    ticket(skills, WORDINGS[0], "4400")
    disputed = ticket(skills, WORDINGS[1], "4401", disputed=True)
    assert (disputed.state, disputed.learning["captured"]["new"]) == ("disputed", True)
    by_path = {tuple(d.trigger for d in p.decisions): p for p in skills.procedures(WORKFLOW)}
    assert set(by_path) == {("refund", "close"), ("refund", "hand_to_disputes")}
    assert [p.success_count for p in by_path.values()] == [1, 1]
    assert skills.aliases() == []


def test_a_failed_run_of_the_path_adds_no_alias_and_no_success(tmp_path: Path) -> None:
    """The same workflow whose closing step now fails: the run took the routine's path and failed, so neither its
    wording nor a success is kept."""
    skills = SkillStore(tmp_path)
    ticket(skills, WORDINGS[0], "4400")
    text = (EXAMPLE / "workflow.yaml").read_text()
    broken = text.replace("on_enter: {set: {outcome: closed}}", 'on_enter: {set: {outcome: "{{ missing.key }}"}}')
    assert broken != text
    failed = ticket(skills, WORDINGS[1], "4401", workflow=load_workflow_text(broken, base_dir=EXAMPLE))
    assert failed.status == "error" and "alias" not in failed.learning and "captured" not in failed.learning
    [proc] = skills.procedures(WORKFLOW)
    assert (proc.success_count, skills.aliases()) == (1, [])


def test_learn_show_and_learn_aliases_say_where_each_alias_came_from(four, capsys, tmp_path):
    skills, results = four
    [proc] = skills.procedures(WORKFLOW)
    assert main(["learn", "show", proc.id, "--home", str(tmp_path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [a["source"] for a in shown["aliases"]] == [f"run:{r.run_id}" for r in results[1:]]
    assert main(["learn", "show", proc.id, "--home", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert f"from run:{results[1].run_id}, which took this path" in text
    assert f"from run:{results[2].run_id}, confirmed by model:" in " ".join(text.split())
    assert main(["learn", "aliases", proc.id, "--home", str(tmp_path), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [a["source"] for a in listed] == [f"run:{r.run_id}" for r in results[1:]]
