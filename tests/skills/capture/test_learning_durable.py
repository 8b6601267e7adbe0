"""Learning inside the durable run: a run that waits and is resumed, an async run, a team member and a run killed with
SIGKILL and resumed each learn, then replay — through the CLI and the API, on a real store, with real processes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from sherpa_skills import SkillStore
from sherpa_skills.engine.agent import Agent
from sherpa_skills.engine.runstore import RunStore
from sherpa_skills.errors import StoreError, UsageError
from sherpa_skills.runtime import load_workflow
from sherpa_skills.skills.capture.learning import Learner
from sherpa_skills.skills.capture.run_hook import LearningHook
from sherpa_skills.skills.store.database import ProcedureDatabase

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
CRASH = "The app crashes when I open the settings page"


def cli(home: Path, *args: str, timeout: float = 60) -> tuple[int, Any, str]:
    done = subprocess.run(
        [sys.executable, "-m", "sherpa_skills.cli", *args, "--home", str(home), "--json"],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else None, done.stderr


def procedures(home: Path) -> list[Any]:
    store = ProcedureDatabase(home=home)
    try:
        return store.procedures(status=None)
    finally:
        store.close()


@pytest.fixture
def triage(tmp_path: Path) -> Path:
    """examples/support_triage, learning: technical tickets wait for a person's approval before they are sent."""
    folder = tmp_path / "triage"
    shutil.copytree(EXAMPLES / "support_triage", folder)
    path = folder / "workflow.yaml"
    text = path.read_text()
    assert "  rules: triage.rules.yaml\n" in text
    path.write_text(text.replace("  rules: triage.rules.yaml\n", "  rules: triage.rules.yaml\n  learn: true\n"))
    return path


class TestResumedFromTheCli:
    def test_runs_that_wait_and_are_resumed_by_the_cli_are_captured_and_the_next_one_replays(self, tmp_path, triage):
        home = tmp_path / "home"
        results = []
        for customer in ("Ada", "Grace", "Linus", "Barbara"):
            code, waiting, err = cli(home, "run", str(triage), "-i", f"ticket={CRASH}", "-i", f"customer={customer}")
            assert (code, waiting["status"]) == (0, "waiting"), err
            code, done, err = cli(home, "resume", waiting["run_id"], "--input", "approved=yes")
            assert (code, done["state"]) == (0, "sent"), err
            results.append((waiting, done))
        # Two successes prove the routine; the third and fourth replay the triage the LLM decided the first two times.
        assert [w["llm_decisions"] for w, _ in results] == [1, 1, 0, 0]
        assert [w["replayed_decisions"] for w, _ in results] == [0, 0, 1, 1]
        [proc] = procedures(home)
        assert proc.kind == "trajectory" and proc.task_type == "support-triage"
        assert proc.success_count == 4 and [d.trigger for d in proc.decisions] == ["technical"]
        code, listed, _ = cli(home, "learn", "procedures", "--all")
        assert code == 0 and [p["id"] for p in listed] == [proc.id]

    def test_a_replay_stopped_by_a_procedure_replaced_while_the_run_waited_hands_over_told_why(self, tmp_path, triage):
        """A run keeps the version it matched; replaced meanwhile, the replay stops there and the LLM decides."""
        home = tmp_path / "home"
        for customer in ("Ada", "Grace"):
            _, waiting, _ = cli(home, "run", str(triage), "-i", f"ticket={CRASH}", "-i", f"customer={customer}")
            cli(home, "resume", waiting["run_id"], "--input", "approved=yes")
        # A ticket that replays up to the approval, then waits.
        code, waiting, _ = cli(home, "run", str(triage), "-i", f"ticket={CRASH}", "-i", "customer=Linus")
        assert (code, waiting["status"], waiting["replayed_decisions"]) == (0, "waiting", 1)
        store = ProcedureDatabase(home=home)
        try:
            [proc] = store.procedures(status=None)
            store.conn.execute("UPDATE procedures SET version = version + 1 WHERE id = ?", (proc.id,))
            store.conn.commit()
        finally:
            store.close()
        # Nothing is left to decide but the approval: the stop is kept with the run and shown as its divergence.
        code, done, err = cli(home, "resume", waiting["run_id"], "--input", "approved=yes")
        assert (code, done["state"]) == (0, "sent"), err
        assert "replaced by version 2 while the run waited" in done["diverged_at"]["observed"]


class TestPython:
    def test_workflow_resume_learns_and_agent_resume_without_the_hooks_refuses(self, tmp_path, triage):
        workflow = load_workflow(triage)
        runs = RunStore(home=tmp_path)
        try:
            started = workflow.agent(store=runs).run({"ticket": CRASH, "customer": "Ada"})
            assert started.status == "waiting"
            with pytest.raises(UsageError, match=r"without its hooks \(it learns\).*workflow.resume"):
                Agent.resume(runs, started.run_id, workflow.machine, workflow.policy)
            done = workflow.resume(runs, started.run_id).run({"approved": True})
            assert done.state == "sent" and done.tokens_saved == 0
        finally:
            runs.close()
        [proc] = procedures(tmp_path)
        assert proc.success_count == 1 and proc.context["run_id"] == started.run_id

    async def test_arun_captures_and_replays(self, tmp_path):
        workflow = load_workflow(EXAMPLES / "ticket_learning" / "workflow.yaml")
        runs, skills = RunStore(home=tmp_path), ProcedureDatabase(home=tmp_path)
        try:
            learner = Learner(skills)
            results = [
                await workflow.agent(store=runs, learn=learner).arun(
                    {"ticket": "Please refund my order, it arrived damaged", "order": order}
                )
                for order in ("1001", "1002", "1003")
            ]
        finally:
            runs.close()
        assert [(r.state, r.llm_calls, r.replayed_decisions) for r in results] == [
            ("closed", 2, 0),
            ("closed", 2, 0),
            ("closed", 0, 2),
        ]
        assert results[2].context["refunded"] == "1003"
        [proc] = skills.procedures(status=None)
        assert proc.success_count == 3
        skills.close()

    def test_the_learning_state_is_written_with_the_tick_only_when_it_changes(self, tmp_path):
        """A replaying run writes its state at creation, and again only where it diverges."""
        workflow = load_workflow(EXAMPLES / "ticket_learning" / "workflow.yaml")
        runs = RunStore(home=tmp_path)
        writes: list[str] = []
        try:
            for order in ("1001", "1002"):
                workflow.agent(store=runs).run({"ticket": "Please refund my order, it arrived damaged", "order": order})
            runs.conn.set_trace_callback(lambda sql: writes.append(sql) if "SET hooks" in sql else None)
            replayed = workflow.agent(store=runs).run(
                {"ticket": "Please refund my order, it arrived damaged", "order": "7"}
            )
            assert (replayed.replayed_decisions, writes) == (2, [])
            diverged = workflow.agent(store=runs).run(
                {"ticket": "Please refund my order, it arrived damaged", "order": "8", "disputed": True}
            )
            assert diverged.diverged_at is not None and len(writes) == 1
            saved = runs.get_run(diverged.run_id).hooks["learning"]
            assert saved["divergence"]["state"] == "checked" and saved["version"] == 1
        finally:
            runs.close()


class TestTeams:
    TRIAGER = """
name: triager
inputs: {ticket: {}, order: {}}
llm: {model: scripted/tickets.script.yaml}
policy: {type: chain, rules: [], learn: true}
initial: inbox
states:
  inbox: {waiting: true}
  assess: {description: Read the ticket and decide what it needs.}
  refunding: {on_enter: {set: {refunded: "{{ event.payload.order }}"}}}
  answering: {}
  done: {final: true}
transitions:
  - {trigger: ticket, source: inbox, dest: assess, arguments: {ticket: {type: string}, order: {type: string}},
     after: {set: {ticket: "{{ args.ticket }}", order: "{{ args.order }}"}}}
  - {trigger: refund, source: assess, dest: refunding, arguments: {order: {type: string}}}
  - {trigger: answer, source: assess, dest: answering}
  - {trigger: verify, source: [refunding, answering], dest: checked}
  - {trigger: close, source: checked, dest: done}
  - {trigger: escalate, source: checked, dest: done}
"""

    def test_a_team_member_whose_workflow_learns_matches_what_its_event_carries_and_replays(self, tmp_path):
        from sherpa_skills.agents.team import TeamRunner, load_team

        shutil.copy(EXAMPLES / "ticket_learning" / "tickets.script.yaml", tmp_path)
        (tmp_path / "triager.yaml").write_text(
            self.TRIAGER.replace("  done: {final: true}\n", "  checked: {}\n  done: {final: true}\n")
        )
        (tmp_path / "team.yaml").write_text(
            "name: desk\ninputs: {ticket: {}, order: {}}\n"
            "agents:\n  t: {workflow: triager.yaml, subscribe: [tickets]}\n"
            "initial_event: {name: ticket, topic: tickets, payload: {ticket: '{{ ticket }}', order: '{{ order }}'}}\n"
        )
        team = load_team(tmp_path / "team.yaml")
        store = RunStore(home=tmp_path)
        try:
            results = []
            for order in ("2001", "2002", "2003"):
                result = TeamRunner(team, store=store).run({"ticket": "Please refund my broken kettle", "order": order})
                assert result.status == "done", result.to_dict()
                [run] = result.runs["t"].values()
                results.append(run)
        finally:
            store.close()
        assert [(r.state, r.llm_calls, r.replayed_decisions) for r in results] == [
            ("done", 2, 0),
            ("done", 2, 0),
            ("done", 0, 2),
        ]
        [proc] = procedures(tmp_path)
        assert proc.task_type == "triager" and proc.success_count == 3


KILLED = """
  refunding:
    on_enter:
      - set: {refunded: "{{ order }}"}
      - shell: {command: "test -f {{ marker }} || (touch {{ marker }} && sleep 30)", timeout_secs: 60}
"""


def kill_during_the_shell_step(home: Path, workflow: Path, order: str, marker: Path) -> str:
    proc = subprocess.Popen(
        [sys.executable, "-m", "sherpa_skills.cli", "run", str(workflow), "--home", str(home), "-i",
         "ticket=Please refund my order, it arrived damaged", "-i", f"order={order}", "-i", f"marker={marker}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.time() + 30
    while not marker.exists() and time.time() < deadline:
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with sqlite3.connect(home / "store.db") as conn:
        return str(conn.execute("SELECT run_id FROM runs ORDER BY created DESC LIMIT 1").fetchone()[0])


@pytest.mark.slow
def test_a_run_killed_during_an_action_and_resumed_is_captured_and_a_killed_replay_goes_on_replaying(tmp_path):
    folder = tmp_path / "wf"
    shutil.copytree(EXAMPLES / "ticket_learning", folder)
    path = folder / "workflow.yaml"
    text = path.read_text()
    old = '  refunding:\n    on_enter: {set: {refunded: "{{ order }}"}}\n'
    assert old in text
    path.write_text(text.replace(old, KILLED).replace("inputs:\n", "inputs:\n  marker: {required: true}\n", 1))
    home = tmp_path / "home"

    run_id = kill_during_the_shell_step(home, path, "3001", tmp_path / "m1")
    code, done, err = cli(home, "resume", run_id)
    assert (code, done["state"], done["llm_calls"]) == (0, "closed", 2), err
    assert [p.success_count for p in procedures(home)] == [1]  # captured after the crash

    marker = tmp_path / "m2"
    marker.touch()  # this one runs through
    code, second, err = cli(
        home, "run", str(path), "-i", "ticket=Please refund my order, it arrived damaged", "-i", "order=3002",
        "-i", f"marker={marker}",
    )  # fmt: skip
    assert (code, second["llm_calls"]) == (0, 2), err

    run_id = kill_during_the_shell_step(home, path, "3003", tmp_path / "m3")  # proven now: it replays, and is killed
    code, done, err = cli(home, "resume", run_id)
    assert (code, done["state"], done["context"]["refunded"]) == (0, "closed", 3003), err
    assert (done["llm_calls"], done["replayed_decisions"], done.get("diverged_at")) == (0, 2, None)
    [proc] = procedures(home)
    assert proc.success_count == 3


def test_a_fork_of_a_learning_run_learns_like_any_run_of_its_workflow(tmp_path):
    """The fork carries the parent's learning state: it replays from the fork point and is captured at its end."""
    from sherpa_skills.engine.fork import fork_run

    workflow = load_workflow(EXAMPLES / "ticket_learning" / "workflow.yaml")
    ticket = "Please refund my order, it arrived damaged"
    runs = RunStore(home=tmp_path)
    try:
        for order in ("1001", "1002"):
            workflow.agent(store=runs).run({"ticket": ticket, "order": order})
        replayed = workflow.agent(store=runs).run({"ticket": ticket, "order": "1003"})
        assert (replayed.replayed_decisions, replayed.llm_calls) == (2, 0)
        fork = fork_run(runs, replayed.run_id, 1, workflow)
        assert (fork.state, fork.llm_calls, fork.replayed_decisions) == ("closed", 0, 2)
        assert runs.get_run(fork.run_id).hooks["learning"]["procedure"] is not None
    finally:
        runs.close()
    [proc] = procedures(tmp_path)
    assert proc.success_count == 4  # two planned, the replay and its fork


class TestTheWorkflowsModelJudges:
    """A plausible match is asked of the workflow's own model where the decision memory cannot take the run's first
    decision itself: its choice replays and becomes an alias, its "none" is remembered, its garbage is a no that
    remembers nothing."""

    DAMAGED = "Please refund my order, it arrived damaged"
    CRUSHED = "I want my money back for my order, the box was crushed"
    # A question about an order among the memory's examples: the crushed box's nearest decisions disagree, so the
    # memory abstains at the first decision and the judge is asked.
    QUESTION = "Can I change the delivery address of my order?"

    def seed(self, workflow: Any, runs: RunStore) -> None:
        # Seeded with the example's own stand-in, whose judge answers by the ticket's words, as a real model would.
        seeding = load_workflow(EXAMPLES / "ticket_learning" / "workflow.yaml")
        for order in ("1001", "1002"):
            self.run(seeding, runs, self.DAMAGED, order)
        question, _ = self.run(seeding, runs, self.QUESTION, "1000")
        assert question.state == "closed" and question.context.get("answered") is True

    def workflow(self, tmp_path: Path, answer: str) -> Any:
        folder = tmp_path / "wf"
        shutil.copytree(EXAMPLES / "ticket_learning", folder)
        script = folder / "tickets.script.yaml"
        # The judge's question on top of the example's stand-in model (which routes tickets by their words).
        script.write_text(
            script.read_text().replace("answers:\n", f"answers:\n  - match: 'Task: '\n    respond: '{answer}'\n", 1)
        )
        return load_workflow(folder / "workflow.yaml")

    def run(self, workflow: Any, runs: RunStore, ticket: str, order: str) -> Any:
        agent = workflow.agent(store=runs)
        result = agent.run({"ticket": ticket, "order": order})
        [hook] = [h for h in agent.hooks if isinstance(h, LearningHook)]
        return result, hook

    def test_the_models_choice_replays_and_the_wording_replays_directly_next_time(self, tmp_path):
        workflow = self.workflow(tmp_path, '{"choice": 1, "params": {}}')
        runs = RunStore(home=tmp_path)
        try:
            self.seed(workflow, runs)
            judged, hook = self.run(workflow, runs, self.CRUSHED, "1003")
            assert hook.match.decision == "needs-confirmation"
            # The memory abstains at the first decision (uncalibrated under the default bound): the judge is asked.
            assert judged.learning["memory_abstained"][0].startswith("assess: ")
            assert (judged.state, judged.replayed_decisions, judged.llm_calls) == ("closed", 2, 1)  # one question
            saved = runs.get_run(judged.run_id).hooks["learning"]
            assert saved["confirmation"]["procedure"] == saved["procedure"] and saved["confirmation"]["calls"] == 1
            again, hook = self.run(workflow, runs, self.CRUSHED, "1004")
            assert (hook.match.decision, again.replayed_decisions, again.llm_calls) == ("match", 2, 0)
        finally:
            runs.close()

    def test_none_of_these_is_remembered_and_garbage_is_a_no_that_remembers_nothing(self, tmp_path):
        for answer, remembered in (('{"choice": 0, "params": {}}', True), ("I think the first one, maybe", False)):
            home = tmp_path / ("none" if remembered else "garbage")
            workflow = self.workflow(home, answer)
            runs = RunStore(home=home)
            try:
                self.seed(workflow, runs)
                asked, hook = self.run(workflow, runs, self.CRUSHED, "1003")
                # Judged no: the LLM takes the first decision, the memory the second (every kind closes there).
                assert hook.match.decision == "needs-confirmation" and asked.replayed_decisions == 1
                assert asked.state == "closed" and asked.llm_calls == 1 + (1 if remembered else 2)  # garbage: re-asked
                answers = SkillStore(home).aliases()
                judged = [a.kind for a in answers if a.by.startswith("model:") and "crushed" in a.text]
                assert judged == (["rejection"] if remembered else [])  # garbage remembers nothing
                # The LLM took the question's path for it: the run's own success makes its wording that procedure's
                # alias (issue 40), so the same wording replays that path next time, whatever the judge said.
                [alias] = [a for a in answers if a.kind == "alias"]
                assert alias.by == alias.source == f"run:{asked.run_id}"
                assert "delivery address" in SkillStore(home).get(alias.procedure_id).description
                again, hook = self.run(workflow, runs, self.CRUSHED, "1004")
                assert (hook.match.decision, again.llm_calls, again.replayed_decisions) == ("match", 0, 2)
            finally:
                runs.close()


#: A replaying run's learning state exactly as the untyped code saved it (no version; nothing asked of the decision
#: memory, so no "taken" either): what a run waiting in a store written before the typed state carries.
def untyped_replaying(procedure: str) -> dict[str, Any]:
    return {
        "task": {"ticket": CRASH, "customer": "Linus"},
        "procedure": procedure,
        "version": 1,
        "params": {"customer": "Linus"},
        "score": 1.0,
        "started": 1795892833.9000564,
        "divergence": None,
        "confirmation": None,
        "judge": None,
        "asked": {},
    }


#: A planned run's state as the untyped code saved it: no procedure matched, the LLM's first decision asked of the
#: decision memory (kept by position, a string key as JSON has it), nothing taken.
UNTYPED_PLANNED: dict[str, Any] = {
    "task": {"ticket": CRASH, "customer": "Ada"},
    "procedure": None,
    "version": None,
    "params": {},
    "score": None,
    "started": 1795892832.4982443,
    "divergence": None,
    "confirmation": None,
    "judge": None,
    "asked": {
        "0": {
            "state": "triage/assess",
            "features": {
                "ctx:approved": None,
                "ctx:cancelled": None,
                "ctx:customer": "{{ customer }}",
                "ctx:received": True,
                "outcome:set": "ok",
                "options": "billing,general,technical",
            },
            "path": "",
        }
    },
    "taken": {},
}


def keep_state(runs: RunStore, run_id: str, state: Any) -> None:
    """Overwrite what run `run_id` keeps for its learning, as another version of the code would have written it."""
    conn = sqlite3.connect(runs.path)
    try:
        conn.execute("UPDATE runs SET hooks = ? WHERE run_id = ?", (json.dumps({"learning": state}), run_id))
        conn.commit()
    finally:
        conn.close()


def taught(workflow: Any, runs: RunStore, *customers: str) -> None:
    for customer in customers:
        waiting = workflow.agent(store=runs).run({"ticket": CRASH, "customer": customer})
        assert workflow.resume(runs, waiting.run_id).run({"approved": True}).state == "sent"


class TestSavedState:
    """The learning state kept with a run is typed and versioned; a run saved by the untyped code still resumes."""

    def test_a_replaying_run_saved_by_the_untyped_code_resumes_replaying_and_is_credited(self, tmp_path, triage):
        workflow = load_workflow(triage)
        runs = RunStore(home=tmp_path)
        try:
            taught(workflow, runs, "Ada", "Grace")
            [proc] = procedures(tmp_path)
            started = workflow.agent(store=runs).run({"ticket": CRASH, "customer": "Linus"})
            assert (started.status, started.replayed_decisions) == ("waiting", 1)
            keep_state(runs, started.run_id, untyped_replaying(proc.id))
            done = workflow.resume(runs, started.run_id).run({"approved": True})
            kept = runs.get_run(started.run_id).hooks["learning"]
        finally:
            runs.close()
        assert done.state == "sent" and done.learning is not None and done.learning["procedure"] == proc.id
        [after] = procedures(tmp_path)
        assert after.success_count == 3  # the replayed procedure's execution was recorded
        # Written back in the typed form, its version now said.
        assert kept["state_version"] == 1 and kept["procedure"] == proc.id and kept["task"]["customer"] == "Linus"

    def test_a_planned_run_saved_by_the_untyped_code_resumes_and_teaches_what_it_asked(self, tmp_path, triage):
        workflow = load_workflow(triage)
        runs = RunStore(home=tmp_path)
        try:
            started = workflow.agent(store=runs).run({"ticket": CRASH, "customer": "Ada"})
            assert started.status == "waiting"
            keep_state(runs, started.run_id, UNTYPED_PLANNED)
            done = workflow.resume(runs, started.run_id).run({"approved": True})
        finally:
            runs.close()
        assert done.state == "sent" and done.learning is not None
        assert done.learning["examples_saved"] == 1 and done.learning["captured"]["new"] is True
        [proc] = procedures(tmp_path)
        assert proc.context["run_id"] == started.run_id

    def test_the_judges_answer_saved_by_the_untyped_code_is_reported_on_resume(self, tmp_path, triage):
        workflow = load_workflow(triage)
        runs = RunStore(home=tmp_path)
        try:
            taught(workflow, runs, "Ada", "Grace")
            [proc] = procedures(tmp_path)
            started = workflow.agent(store=runs).run({"ticket": CRASH, "customer": "Linus"})
            confirmation = {
                "by": "model:fake",
                "offered": [proc.id],
                "procedure": proc.id,
                "reason": None,
                "calls": 1,
                "tokens": 42,
            }
            keep_state(
                runs, started.run_id, {**untyped_replaying(proc.id), "judge": "asked", "confirmation": confirmation}
            )
            done = workflow.resume(runs, started.run_id).run({"approved": True})
        finally:
            runs.close()
        assert done.state == "sent" and done.learning is not None and done.learning["judged"] == confirmation

    @pytest.mark.parametrize(
        ("change", "named"),
        [
            ({"version": "two"}, "version"),
            ({"asked": ["not", "by", "position"]}, "asked"),
            ({"judge": "maybe"}, "judge"),
            ({"started": None, "extra": 1}, "extra"),
        ],
    )
    def test_an_unreadable_saved_state_is_refused_naming_the_run_and_the_field(self, tmp_path, triage, change, named):
        workflow = load_workflow(triage)
        runs = RunStore(home=tmp_path)
        try:
            taught(workflow, runs, "Ada", "Grace")
            [proc] = procedures(tmp_path)
            started = workflow.agent(store=runs).run({"ticket": CRASH, "customer": "Linus"})
            keep_state(runs, started.run_id, {**untyped_replaying(proc.id), **change})
            with pytest.raises(StoreError, match=rf"run {started.run_id}: its learning state .*{named}"):
                workflow.resume(runs, started.run_id)
            # The refusal leaves the run as it was: resumable once its state is readable again.
            keep_state(runs, started.run_id, untyped_replaying(proc.id))
            assert workflow.resume(runs, started.run_id).run({"approved": True}).state == "sent"
        finally:
            runs.close()

    def test_a_state_saved_by_a_newer_version_is_refused_not_guessed_at(self, tmp_path, triage):
        home = tmp_path / "home"
        code, waiting, err = cli(home, "run", str(triage), "-i", f"ticket={CRASH}", "-i", "customer=Ada")
        assert (code, waiting["status"]) == (0, "waiting"), err
        runs = RunStore(home=home)
        try:
            keep_state(runs, waiting["run_id"], {**UNTYPED_PLANNED, "state_version": 99})
        finally:
            runs.close()
        code, out, err = cli(home, "resume", waiting["run_id"], "--input", "approved=yes")
        assert code != 0 and out is None and "Traceback" not in err  # under --json, nothing but JSON on stdout
        assert f"run {waiting['run_id']}" in err and "state_version 99" in err and "newer" in err

    def test_a_task_the_store_cannot_keep_fails_the_run_with_the_stores_error(self, tmp_path, triage):
        """The typed state hands the store what the run was given, so a value that is not JSON is the store's clear
        refusal, as before the state was typed, not a serialisation traceback."""
        runs = RunStore(home=tmp_path)
        try:
            result = load_workflow(triage).agent(store=runs).run({"ticket": CRASH, "customer": object()})
        finally:
            runs.close()
        assert result.status == "error" and result.error is not None and "not JSON-serialisable" in result.error
