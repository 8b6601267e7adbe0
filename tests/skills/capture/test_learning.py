"""Learning as part of the runtime: `policy: {learn: true}` through the CLI, `workflow.agent(learn=True)` from
Python, on a real store."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from sherpa_skills import SkillStore
from sherpa_skills.cli import main
from sherpa_skills.engine.agent import Agent
from sherpa_skills.engine.runstore import RunStore
from sherpa_skills.errors import UsageError, WorkflowError
from sherpa_skills.runtime import load_workflow, load_workflow_text
from sherpa_skills.skills.capture.lesson import Lesson
from sherpa_skills.skills.capture.run_hook import LearningHook
from sherpa_skills.skills.store.branches import branches
from sherpa_skills.skills.store.database import ProcedureDatabase

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "ticket_learning"
WORKFLOW = str(EXAMPLE / "workflow.yaml")
REFUND = "Please refund my order, it arrived damaged"


class LooksLikeAStore:
    """Has a `learner()`, as a SkillStore has, but what it gives is not a Learner."""

    def learner(self) -> str:
        return "a learner"


def cli_text(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    code = main([*args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else None


def refund(capsys: pytest.CaptureFixture[str], home: Path, order: str, *extra: str) -> dict[str, Any]:
    code, result = cli(
        capsys, "run", WORKFLOW, "--home", str(home), "-i", f"ticket={REFUND}", "-i", f"order={order}", *extra
    )
    assert code == 0, result
    return result


class TestYamlWorkflowThroughTheCli:
    def test_a_yaml_workflow_with_replay_learns_and_replays_with_no_llm_call(self, capsys, tmp_path):
        first, second = refund(capsys, tmp_path, "4417"), refund(capsys, tmp_path, "4418")
        assert (first["llm_calls"], second["llm_calls"], first["tokens_saved"]) == (
            2,
            2,
            0,
        )  # planned: one success is not proof
        third = refund(capsys, tmp_path, "4419")
        assert (third["state"], third["llm_calls"], third["tokens"], third["replayed_decisions"]) == ("closed", 0, 0, 2)
        assert third["context"]["refunded"] == 4419  # this ticket's order (a number, as typed), not the recorded one
        assert third["tokens_saved"] == first["tokens"] and third["llm_calls_saved"] == 2

    def test_a_guard_that_now_fails_hands_over_to_the_llm_in_the_same_run_and_is_a_branch(self, capsys, tmp_path):
        refund(capsys, tmp_path, "4417")
        refund(capsys, tmp_path, "4418")
        disputed = refund(capsys, tmp_path, "4420", "-i", "disputed=yes")
        assert (disputed["state"], disputed["replayed_decisions"], disputed["llm_calls"]) == ("disputed", 1, 1)
        assert (
            disputed["diverged_at"]["state"] == "checked"
            and "trigger 'close' available" in disputed["diverged_at"]["expected"]
        )
        code, [proc] = cli(capsys, "learn", "procedures", "--all", "--home", str(tmp_path))
        code, shown = cli(capsys, "learn", "show", proc["id"], "--home", str(tmp_path))
        # An exception is a branch of the routine, not its replacement: the routine replays again at once.
        assert (shown["kind"], shown["version"]) == ("trajectory", 1)
        assert [d["trigger"] for d in shown["decisions"]] == ["refund", "close"]
        [branch] = shown["branches"]
        assert [d["trigger"] for d in branch["decisions"]] == ["refund", "hand_to_disputes"] and branch["runs"] == 1
        assert [e["outcome"] for e in shown["recent_executions"]] == ["branch"]  # an exception, not a failure
        routine = refund(capsys, tmp_path, "4421")
        assert (routine["state"], routine["llm_calls"], routine["replayed_decisions"]) == ("closed", 0, 2)
        code, text = cli_text(capsys, "learn", "show", proc["id"], "--home", str(tmp_path))
        assert (
            "branch taken by 1 run(s), leaving at decision 1 in checked: assess: refund → checked: hand_to_disputes"
            in text
        )

    def test_learn_lists_trajectory_procedures_beside_shell_ones(self, capsys, tmp_path):
        refund(capsys, tmp_path, "4417")
        refund(capsys, tmp_path, "4418")
        steps = tmp_path / "steps.yaml"
        steps.write_text("- command: echo packed\n")
        assert (
            cli(capsys, "learn", "capture-success", "pack", "--steps-file", str(steps), "--home", str(tmp_path))[0] == 0
        )
        code, listed = cli(capsys, "learn", "procedures", "--all", "--home", str(tmp_path))
        assert sorted((p["task_type"], p["steps"]) for p in listed) == [("pack", 1), ("ticket-learning", 0)]
        code, health = cli(capsys, "learn", "health", "--home", str(tmp_path))
        assert {r["procedure_id"].split("-")[0] for r in health} == {"pack", "ticket"}
        assert main(["learn", "procedures", "--all", "--home", str(tmp_path)]) == 0
        assert "ticket-learning" in capsys.readouterr().out

    def test_learn_stats_says_what_was_saved_per_procedure_workflow_and_run(self, capsys, tmp_path):
        runs = [refund(capsys, tmp_path, str(order)) for order in (4417, 4418, 4419, 4421)]
        disputed = refund(capsys, tmp_path, "4420", "-i", "disputed=yes")
        code, stats = cli(capsys, "learn", "stats", "--home", str(tmp_path))
        assert code == 0
        [workflow] = stats["per_workflow"]
        planned = runs[0]["tokens"]
        assert workflow["task_type"] == "ticket-learning" and (workflow["replays"], workflow["diverged"]) == (2, 1)
        assert workflow["tokens_saved"] == 2 * planned + disputed["tokens_saved"] and workflow["llm_calls_saved"] == 5
        by_run = {r["run_id"]: r for r in stats["per_run"]}
        assert set(by_run) == {
            runs[2]["run_id"],
            runs[3]["run_id"],
            disputed["run_id"],
        }  # planned runs followed no procedure
        assert by_run[disputed["run_id"]]["outcome"] == "branch" and by_run[disputed["run_id"]]["llm_calls_saved"] == 1
        assert [p["kind"] for p in stats["per_procedure"]] == ["trajectory"]
        assert main(["learn", "stats", "--runs", "2", "--home", str(tmp_path)]) == 0
        out = capsys.readouterr().out
        assert "per workflow" in out and "last 2 of 3 runs" in out

    def test_learn_stats_refuses_a_count_of_runs_that_is_not_positive(self, capsys, tmp_path):
        with pytest.raises(SystemExit) as exit_:
            main(["learn", "stats", "--runs", "0", "--home", str(tmp_path)])
        assert exit_.value.code == 2 and "must be at least 1" in capsys.readouterr().err

    def test_validate_refuses_learning_without_an_llm_to_hand_over_to(self, capsys, tmp_path):
        path = tmp_path / "rules_only.yaml"
        path.write_text((EXAMPLE / "workflow.yaml").read_text().replace("type: chain ", "type: rule  "))
        assert main(["validate", str(path)]) == 2
        out = capsys.readouterr().out
        line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if text.strip().startswith("learn: "))
        assert f"rules_only.yaml:{line}: policy 'learn: true' needs an LLM to hand over to" in out
        assert main(["validate", WORKFLOW]) == 0

    def test_learn_must_be_a_boolean(self, tmp_path):
        text = (EXAMPLE / "workflow.yaml").read_text().replace("learn: {error_bound: 0.05}", "learn: often")
        with pytest.raises(WorkflowError, match="policy.learn"):
            load_workflow_text(text, base_dir=EXAMPLE)

    def test_the_policy_key_is_learn_not_replay(self, tmp_path):
        """`replay` names shell replay and the replay policy; the flag that turns learning on is `learn`."""
        text = (EXAMPLE / "workflow.yaml").read_text().replace("learn: {error_bound: 0.05}", "replay: true")
        with pytest.raises(WorkflowError, match=r":19: unknown key 'replay'"):
            load_workflow_text(text, base_dir=EXAMPLE)


class TestPythonApi:
    def test_learn_true_uses_the_skill_store_of_the_run_stores_home(self, tmp_path):
        workflow = load_workflow(WORKFLOW)
        runs = RunStore(home=tmp_path)
        try:
            results = [
                workflow.agent(store=runs, learn=True).run({"ticket": REFUND, "order": str(n)})
                for n in (1001, 1002, 1003)
            ]
        finally:
            runs.close()
        assert [r.llm_calls for r in results] == [2, 2, 0]
        store = ProcedureDatabase(home=tmp_path)
        try:
            [proc] = store.procedures(status=None)
            assert proc.kind == "trajectory" and proc.success_count == 3  # two planned, one replayed
        finally:
            store.close()

    def test_a_skill_store_given_as_learn_is_the_one_learned_in(self, tmp_path):
        workflow = load_workflow(WORKFLOW)
        store = ProcedureDatabase(path=tmp_path / "elsewhere.db")
        try:
            agent = workflow.agent(learn=store, home=tmp_path)
            assert isinstance(agent, Agent)
            [hook] = [h for h in agent.hooks if isinstance(h, LearningHook)]
            assert hook.learner.store is store
            agent.run({"ticket": REFUND, "order": "1001"})
            assert len(store.procedures(status=None)) == 1
        finally:
            store.close()

    def test_learn_false_turns_off_what_the_workflow_asks_for(self, tmp_path):
        workflow = load_workflow(WORKFLOW)
        agent = workflow.agent(learn=False, home=tmp_path)
        assert not any(isinstance(h, LearningHook) for h in agent.hooks)
        result = agent.run({"ticket": REFUND, "order": "1001"})
        assert result.tokens_saved is None and "tokens_saved" not in result.to_dict()
        assert not (tmp_path / "skills.db").exists()

    def test_learn_refuses_what_is_not_true_false_or_a_learner(self, tmp_path):
        with pytest.raises(UsageError, match="learn must be True, False, a SkillStore or a Learner"):
            load_workflow(WORKFLOW).agent(learn="yes", home=tmp_path)

    def test_learn_takes_a_skill_store_and_learns_in_it(self, tmp_path):
        with SkillStore(tmp_path / "skills") as skills:
            agent = load_workflow(WORKFLOW).agent(learn=skills, home=tmp_path)
            [hook] = [h for h in agent.hooks if isinstance(h, LearningHook)]
            assert hook.learner.store is skills.store and hook.learner.matcher is skills.matcher

    @pytest.mark.parametrize(
        ("learn", "shown"),
        [
            ("yes", "'yes' (str)"),
            (1, "1 (int)"),
            (SkillStore, "the class SkillStore"),  # the class, not a store: nothing to call learner() on
            (LooksLikeAStore(), "(LooksLikeAStore)"),  # has learner(), but what it gives is no Learner
        ],
    )
    def test_learn_of_the_wrong_type_is_refused_naming_the_argument_and_what_it_got(self, tmp_path, learn, shown):
        with pytest.raises(UsageError) as refused:
            load_workflow(WORKFLOW).agent(learn=learn, home=tmp_path)
        message = str(refused.value)
        assert message.startswith("learn must be True, False, a SkillStore or a Learner, not ") and shown in message

    def test_what_a_finished_run_teaches_is_one_typed_report_the_result_carries(self, tmp_path):
        workflow = load_workflow(WORKFLOW)
        agent = workflow.agent(learn=True, home=tmp_path)
        [hook] = [h for h in agent.hooks if isinstance(h, LearningHook)]
        result = agent.run({"ticket": REFUND, "order": "1001"})
        lesson = hook.lesson
        assert isinstance(lesson, Lesson) and lesson.captured is not None and lesson.captured.new
        assert lesson.examples_saved == 2 and lesson.execution is None  # nothing was replayed: no execution
        assert result.learning is not None
        assert {k: result.learning[k] for k in ("captured", "examples_saved")} == {
            "captured": {"procedure": lesson.captured.procedure, "new": True},
            "examples_saved": 2,
        }
        # The second run of the same task replays nothing yet (one success is no proof): the twin is credited.
        again = workflow.agent(learn=True, home=tmp_path)
        [hook] = [h for h in again.hooks if isinstance(h, LearningHook)]
        again.run({"ticket": REFUND, "order": "1002"})
        assert hook.lesson is not None and hook.lesson.captured is not None and not hook.lesson.captured.new

    def test_the_reported_alias_keeps_its_source_key_when_a_person_made_it(self):
        """An alias someone confirmed has no run as its source: the result still says `source: null`, as it did."""
        from sherpa_skills.skills.capture.lesson import AliasLearned

        lesson = Lesson(examples_saved=0, alias=AliasLearned(id="a1", procedure="p1", source=None))
        assert lesson.learned() == {"examples_saved": 0, "alias": {"id": "a1", "procedure": "p1", "source": None}}


class TestExample:
    def test_twenty_tickets_of_three_kinds_are_planned_then_replayed_and_one_diverges(self, tmp_path, monkeypatch):
        monkeypatch.syspath_prepend(str(EXAMPLE))
        sys.modules.pop("stream", None)
        import stream

        rows = stream.stream(tmp_path)
        assert len(rows) == 20 and all(r["status"] == "final" for r in rows)
        first_two = [r for r in rows if r["ticket"] < 6]
        # The first of each kind is planned; from the second on, the decision memory takes what its examples agree
        # on (the `checked` state closes whatever the kind), and where it cannot take a ticket's first decision and
        # a procedure of another kind plausibly matches, the workflow's model is asked once ("none of these").
        assert [r["llm_calls"] for r in first_two] == [2, 2, 2, 1, 2, 2]
        assert [r["replayed_decisions"] for r in first_two] == [0, 0, 0, 1, 1, 1]
        replayed = [r for r in rows[6:15]]
        assert all((r["llm_calls"], r["replayed_decisions"], r["diverged_at"]) == (0, 2, None) for r in replayed)
        disputed = rows[stream.DISPUTED]
        assert (disputed["state"], disputed["replayed_decisions"], disputed["llm_calls"]) == ("disputed", 1, 1)
        assert disputed["diverged_at"]["step"] == 1
        # The exception is a branch: the routine refunds after it replay with no LLM call.
        assert [(r["llm_calls"], r["state"]) for r in rows[16:]] == [(0, "closed")] * 4
        # Without replay every ticket asks the LLM twice, and ends in the same state.
        workflow = load_workflow(WORKFLOW)
        planned = [workflow.agent(learn=False).run(inputs) for _, inputs in stream.tickets()]
        assert [p.state for p in planned] == [r["state"] for r in rows]
        assert [p.context for p in planned] == [r["context"] for r in rows]
        assert (sum(p.llm_calls for p in planned), sum(r["llm_calls"] for r in rows)) == (40, 12)
        store = ProcedureDatabase(home=tmp_path)
        try:
            [routine] = [p for p in store.procedures(status=None) if p.decisions[0].trigger == "refund"]
            assert routine.version == 1 and [d.trigger for d in routine.decisions] == ["refund", "close"]
            [branch] = branches(store, routine.id)
            assert [d["trigger"] for d in branch["decisions"]] == ["refund", "hand_to_disputes"]
        finally:
            store.close()


class TestTeams:
    def test_a_team_member_whose_workflow_learns_still_handles_its_events(self, tmp_path):
        """A member's run starts from events, not from inputs a task is matched by:
        it runs without learning, never breaks."""
        from sherpa_skills.agents.team import TeamRunner, load_team

        (tmp_path / "player.yaml").write_text("""
name: player
context: {hits: 0}
llm: {model: scripted/none.yaml}
policy: {type: chain, rules: [], learn: true}
initial: ready
states:
  ready: {waiting: true}
  done: {final: true}
transitions:
  - trigger: ball
    source: ready
    dest: ready
    arguments: {n: {type: integer}}
    conditions: {context_lt: {key: hits, value: 2}}
    after: [{increment: {key: hits}}, {emit: {name: ball, topic: back, payload: {n: "{{ args.n + 1 }}"}}}]
  - {trigger: ball, source: ready, dest: done, unless: {context_lt: {key: hits, value: 2}}}
""")
        (tmp_path / "team.yaml").write_text(
            "name: solo\nagents:\n  p: {workflow: player.yaml, subscribe: [back]}\n"
            "initial_event: {name: ball, topic: back, payload: {n: 0}}\nmax_events: 10\n"
        )
        store = RunStore(home=tmp_path)
        try:
            result = TeamRunner(load_team(tmp_path / "team.yaml"), store=store).run()
        finally:
            store.close()
        assert result.status == "done" and result.counters["delivered"] == 3
        assert not (tmp_path / "skills.db").exists() or not ProcedureDatabase(home=tmp_path).procedures(status=None)


def test_learner_is_public_where_the_docs_say_and_from_the_package() -> None:
    import sherpa_skills
    from sherpa_skills.skills.capture.learning import Learner

    assert "Learner" in sherpa_skills.__all__ and sherpa_skills.Learner is Learner
