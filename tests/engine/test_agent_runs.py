"""Durable runs through the public API, on real SQLite:
commits per tick, waiting and resuming, and every way a run fails."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sherpa_skills.engine.agent import Agent, RunResult
from sherpa_skills.engine.registry import ActionResult, default_registry
from sherpa_skills.engine.runstore import RunStore
from sherpa_skills.engine.workflow import Workflow, load_workflow_text


def _trajectory(belief: Any) -> list[tuple[str, str | None, str]]:
    return [(t.state, t.trigger, t.decided_by) for t in belief.trajectory]


def _assert_store_matches(path: Path, agent: Agent, status: str) -> None:
    """A second connection to the same file sees exactly what the agent holds."""
    other = RunStore(path=path)
    try:
        row = other.get_run(agent.run_id)
        assert (row.status, row.state) == (status, agent.state)
        assert row.counters == agent.counters
        assert other.load_belief(agent.run_id).model_dump() == agent.belief.model_dump()
    finally:
        other.close()


# ---------------------------------------------------------------- every tick is committed

DURABLE = """
name: durable
initial: one
states:
  one:
    transitions: [{trigger: next, dest: two, before: peek}]
  two:
    transitions: [{trigger: next, dest: three, before: peek}]
  three:
    on_enter: {set: {reached: {three: [1, 2, 3]}}}
    transitions: [{trigger: next, dest: done, before: peek}]
  done:
    final: true
"""


class TestDurability:
    def test_each_tick_is_committed_before_the_next_one_runs(self, tmp_path, runner):
        """During tick N another connection already sees ticks 0..N-1: position, trajectory and log."""
        db = tmp_path / "store.db"
        seen: list[tuple[int, int, int, str, str]] = []
        registry = default_registry.child()

        @registry.action("peek")
        def peek(args: Any, ctx: Any) -> ActionResult:
            """Looks at the run through a second connection, as another process would."""
            other = RunStore(path=db)
            try:
                row = other.get_run(ctx.run_id)
                belief = other.load_belief(ctx.run_id)
            finally:
                other.close()
            seen.append((ctx.tick, row.tick, len(belief.trajectory), row.state, row.status))
            return ActionResult(outputs={"committed_tick": row.tick})

        agent = load_workflow_text(DURABLE, name="durable.yaml", registry=registry).agent(store=RunStore(path=db))
        result = runner(agent)
        assert result.status == "final"
        assert seen == [(1, 0, 1, "one", "running"), (2, 1, 2, "two", "running"), (3, 2, 3, "three", "running")]

    def test_after_the_run_the_stored_rows_equal_the_belief(self, tmp_path, runner):
        """Trajectory, execution log, context and counters read back from SQLite equal the agent's own."""
        db = tmp_path / "store.db"
        registry = default_registry.child()
        registry.action("peek")(lambda args, ctx: {"ok": True})
        agent = load_workflow_text(DURABLE, name="durable.yaml", registry=registry).agent(store=RunStore(path=db))
        runner(agent)
        _assert_store_matches(db, agent, "final")
        belief = RunStore(path=db).load_belief(agent.run_id)
        assert _trajectory(belief) == [
            ("one", None, "start"),
            ("two", "next", "fast_forward"),
            ("three", "next", "fast_forward"),
            ("done", "next", "fast_forward"),
        ]
        assert belief.context["reached"] == {"three": [1, 2, 3]}
        assert [e.action for e in belief.log] == ["peek", "peek", "set", "peek"]


# ---------------------------------------------------------------- waiting and resuming

APPROVAL = """
name: approval
initial: draft
inputs:
  topic: {required: true, description: what the draft is about}
states:
  draft:
    on_enter: {increment: {key: drafts}}
    transitions: [{trigger: submit, dest: review}]
  review:
    waiting: true
    transitions:
      - trigger: approve
        dest: done
        conditions: {context_true: {key: approved}}
      - trigger: revise
        dest: draft
        unless: {context_true: {key: approved}}
        arguments: {note: {type: string}}
        after: {set: {note: {from_arg: note}}}
  done:
    final: true
"""


@pytest.fixture
def approval() -> Workflow:
    return load_workflow_text(APPROVAL, name="approval.yaml")


def _waiting_run(tmp_path: Path, workflow: Workflow, runner: Callable[..., RunResult]) -> str:
    store = RunStore(path=tmp_path / "store.db")
    result = runner(workflow.agent(store=store), {"topic": "tests"})
    assert (result.status, result.state, result.available) == ("waiting", "review", ["revise"])
    store.close()
    return result.run_id


class TestWaitingAndResuming:
    def test_a_waiting_state_stops_the_run_with_status_waiting(self, tmp_path, approval, runner):
        """The run stops in the waiting state, and the store says so."""
        run_id = _waiting_run(tmp_path, approval, runner)
        row = RunStore(path=tmp_path / "store.db").get_run(run_id)
        assert (row.status, row.state, row.inputs) == ("waiting", "review", {"topic": "tests"})

    def test_resuming_with_input_moves_on(self, tmp_path, approval, runner):
        """Outside input makes the guarded transition available, and the resumed run finishes."""
        run_id = _waiting_run(tmp_path, approval, runner)
        store = RunStore(path=tmp_path / "store.db")
        agent = Agent.resume(store, run_id, approval.machine, approval.policy)
        result = runner(agent, {"approved": True})
        assert (result.status, result.state) == ("final", "done")
        assert result.context["approved"] is True and result.context["topic"] == "tests"
        assert _trajectory(agent.belief)[-1] == ("done", "approve", "user")
        _assert_store_matches(tmp_path / "store.db", agent, "final")

    def test_resuming_with_an_explicit_trigger_fires_it_with_its_arguments(self, tmp_path, approval, runner):
        """A human decision (trigger + args) goes back to draft, which runs again and waits once more."""
        run_id = _waiting_run(tmp_path, approval, runner)
        store = RunStore(path=tmp_path / "store.db")
        agent = Agent.resume(store, run_id, approval.machine, approval.policy)
        result = runner(agent, trigger="revise", args={"note": "shorter"})
        assert (result.status, result.state) == ("waiting", "review")
        assert result.context["note"] == "shorter" and result.context["drafts"] == 2
        assert result.user_decisions == 1
        _assert_store_matches(tmp_path / "store.db", agent, "waiting")

    def test_resuming_without_the_needed_input_keeps_waiting(self, tmp_path, approval, runner):
        """Input that enables nothing new leaves the run waiting where it was."""
        run_id = _waiting_run(tmp_path, approval, runner)
        agent = Agent.resume(RunStore(path=tmp_path / "store.db"), run_id, approval.machine, approval.policy)
        result = runner(agent, {"approved": False})
        assert (result.status, result.state) == ("waiting", "review")

    def test_an_unavailable_trigger_is_a_clear_error_and_the_run_can_still_resume(self, tmp_path, approval, runner):
        """Firing a trigger whose guard fails names the available ones; the run stays resumable."""
        run_id = _waiting_run(tmp_path, approval, runner)
        store = RunStore(path=tmp_path / "store.db")
        result = runner(Agent.resume(store, run_id, approval.machine, approval.policy), trigger="approve")
        assert result.status == "error"
        assert "trigger 'approve' is not available in state 'review'; available: revise" in result.error
        assert (store.get_run(run_id).status, store.get_run(run_id).error) == ("waiting", None), (
            "a refusal records nothing"
        )
        again = runner(Agent.resume(store, run_id, approval.machine, approval.policy), {"approved": True})
        assert again.status == "final"

    def test_resuming_a_finished_run_is_refused_and_leaves_it_finished(self, tmp_path, approval, runner):
        """A finished run cannot be resumed; the refusal does not rewrite its stored status."""
        run_id = _waiting_run(tmp_path, approval, runner)
        store = RunStore(path=tmp_path / "store.db")
        assert (
            runner(Agent.resume(store, run_id, approval.machine, approval.policy), {"approved": True}).status == "final"
        )
        result = runner(Agent.resume(store, run_id, approval.machine, approval.policy))
        assert result.status == "error" and "already finished" in result.error
        assert RunStore(path=tmp_path / "store.db").get_run(run_id).status == "final"

    def test_a_missing_required_input_is_a_clear_error(self, tmp_path, approval, runner):
        """The run ends with status error naming the input and how to pass it."""
        store = RunStore(path=tmp_path / "store.db")
        agent = approval.agent(store=store)
        result = runner(agent)
        assert result.status == "error"
        assert "input 'topic' (what the draft is about)" in result.error
        assert "--input" in result.error


# ---------------------------------------------------------------- ways a run fails

LOOP = """
name: loop
initial: ping
max_steps: 5
states:
  ping:
    transitions: [{trigger: hit, dest: pong}]
  pong:
    transitions: [{trigger: hit, dest: ping}]
"""

FLAKY = """
name: flaky
initial: a
states:
  a:
    transitions:
      - trigger: go
        dest: b
        before: {set: {tried: true}}
        after: flaky
  b:
    final: true
"""


class TestFailures:
    def test_the_step_limit_ends_the_run_with_an_error_naming_it(self, tmp_path, runner):
        """A machine that never ends stops after max_steps with status error, the limit in the message."""
        agent = load_workflow_text(LOOP, name="loop.yaml").agent(store=RunStore(path=tmp_path / "store.db"))
        result = runner(agent)
        assert result.status == "error"
        assert "step limit reached (5 steps)" in result.error and "max_steps" in result.error
        assert result.steps == 5
        _assert_store_matches(tmp_path / "store.db", agent, "error")

    def test_the_agents_max_steps_overrides_the_workflows(self, runner):
        """max_steps given to the agent wins over the workflow's."""
        result = runner(load_workflow_text(LOOP, name="loop.yaml").agent(max_steps=3))
        assert "step limit reached (3 steps)" in result.error and result.steps == 3

    def test_an_action_raising_ends_the_run_in_error_consistently_stored_and_resumable(self, tmp_path, runner):
        """The error is logged on the action, the store equals the belief, and a resumed run retries and finishes."""
        broken = {"on": True}
        registry = default_registry.child()

        @registry.action("flaky")
        def flaky(args: Any, ctx: Any) -> dict[str, Any]:
            """Fails while the disk is full."""
            if broken["on"]:
                raise RuntimeError("disk full")
            return {"written": True}

        workflow = load_workflow_text(FLAKY, name="flaky.yaml", registry=registry)
        db = tmp_path / "store.db"
        agent = workflow.agent(store=RunStore(path=db))
        result = runner(agent)
        assert (result.status, result.state) == ("error", "a")
        assert result.error == "action 'flaky': RuntimeError: disk full"
        last = agent.belief.log[-1]
        assert (last.action, last.status) == ("flaky", "error") and "disk full" in last.error
        _assert_store_matches(db, agent, "error")
        assert RunStore(path=db).get_run(agent.run_id).error == result.error

        broken["on"] = False
        resumed = Agent.resume(RunStore(path=db), agent.run_id, workflow.machine, workflow.policy)
        again = runner(resumed)
        assert (again.status, again.state) == ("final", "b")
        assert [(e.action, e.status) for e in resumed.belief.log] == [
            ("set", "ok"),
            ("flaky", "error"),
            ("set", "ok"),
            ("flaky", "ok"),
        ]
        _assert_store_matches(db, resumed, "final")

    @pytest.mark.parametrize("template", ["hello {{ name }}", "{{ name }}", "{{ name.first }}"])
    def test_a_template_reading_a_missing_context_key_names_the_argument(self, template: str, runner):
        """Rendering an argument from an absent key is an ActionError naming the action, the argument and the key."""
        text = f"""
name: greet
initial: a
states:
  a:
    transitions:
      - trigger: go
        dest: b
        after: {{set: {{greeting: "{template}"}}}}
  b:
    final: true
"""
        result = runner(load_workflow_text(text, name="greet.yaml").agent())
        assert result.status == "error"
        assert "action 'set'" in result.error and "argument 'greeting'" in result.error
        assert "'name' is undefined" in result.error
        assert "greeting" not in result.context

    def test_a_template_with_the_key_present_renders(self, runner):
        """The same template, with the key given as input, renders into the context."""
        text = """
name: greet
initial: a
states:
  a:
    transitions:
      - trigger: go
        dest: b
        after: {set: {greeting: "hello {{ name }}", copy: "{{ name }}", n: "{{ count + 1 }}"}}
  b:
    final: true
"""
        result = runner(load_workflow_text(text, name="greet.yaml").agent(), {"name": "Ada", "count": 1})
        assert (result.context["greeting"], result.context["copy"], result.context["n"]) == ("hello Ada", "Ada", 2)


# ---------------------------------------------------------------- shell quoting of template values

QUOTING = """
name: quoting
initial: a
states:
  a:
    transitions:
      - trigger: go
        dest: b
        after:
          - action: shell
            args:
              command: "printf '%s\\\\n' {{ value }}"
              cwd: {from_context: workdir}
            save_as: out
          - {set: {said: "said {{ value }}"}}
  b:
    final: true
"""


class TestShellQuoting:
    @pytest.mark.parametrize(
        "value",
        ["x; touch pwned", "$(touch pwned)", "`touch pwned`", 'it\'s "quoted" && touch pwned', "a  b\ttab", "--flag"],
    )
    def test_a_hostile_value_reaches_the_command_as_one_literal_argument(self, tmp_path, value: str, runner):
        """Template values in a shell command are shell-quoted: printed verbatim, nothing else runs."""
        agent = load_workflow_text(QUOTING, name="quoting.yaml").agent()
        result = runner(agent, {"value": value, "workdir": str(tmp_path)})
        assert result.status == "final", result.error
        assert result.context["out"]["exit_code"] == 0
        assert result.context["out"]["stdout"] == value + "\n"
        assert not (tmp_path / "pwned").exists()

    def test_values_outside_shell_commands_are_not_quoted(self, tmp_path, runner):
        """Only the shell command is quoted; other template arguments get the value as it is."""
        result = runner(
            load_workflow_text(QUOTING, name="quoting.yaml").agent(), {"value": "x; y", "workdir": str(tmp_path)}
        )
        assert result.context["said"] == "said x; y"
