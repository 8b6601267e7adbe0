"""The parts of a run in engine/run/, each at its door: what the drivers, the journal (resume), the hook dispatch and
the result refuse or report, through a real Agent and, where a store is involved, a real SQLite RunStore."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from sherpa_skills.engine.agent import Agent, RunResult
from sherpa_skills.engine.hooks import RunHook
from sherpa_skills.engine.registry import default_registry
from sherpa_skills.engine.runstore import RunStore
from sherpa_skills.engine.workflow import load_workflow_text
from sherpa_skills.errors import StoreError, UsageError

ASYNC_STEP = """
name: async_step
initial: start
states:
  start:
    transitions: [{trigger: go, dest: done, before: fetch_later}]
  done:
    final: true
"""

WAITS = """
name: waits
initial: wait
states:
  wait:
    waiting: true
    transitions: [{trigger: go, dest: done}]
  done:
    final: true
"""

WAITS_ELSEWHERE = """
name: waits
initial: hold
states:
  hold:
    waiting: true
    transitions: [{trigger: go, dest: done}]
  done:
    final: true
"""


class Notes(RunHook):
    """A hook that keeps state with the run under its name."""

    name = "notes"

    def __init__(self) -> None:
        self.state: dict[str, Any] = {"seen": 1}
        self.resumed_with: Any = None

    def saved(self) -> Any:
        return self.state

    def on_resume(self, agent: Agent, saved: Any) -> None:
        self.resumed_with = saved


class Adds(RunHook):
    """A hook that adds context keys at the start, one of which clashes with the run's inputs."""

    def on_start(self, agent: Agent, inputs: dict[str, Any], event: Any) -> dict[str, Any] | None:
        return {"from_hook": True, "topic": "the hook's"}


class FailsOnStop(RunHook):
    def on_stop(self, agent: Agent, result: RunResult) -> None:
        raise RuntimeError("the hook broke")


def _waiting(tmp_path: Path, hooks: list[RunHook]) -> tuple[RunStore, str]:
    store = RunStore(path=tmp_path / "store.db")
    result = load_workflow_text(WAITS, name="waits.yaml").agent(store=store, hooks=hooks).run()
    assert result.status == "waiting"
    return store, result.run_id


class TestDrive:
    async def test_a_sync_run_inside_an_event_loop_refuses_an_async_action_and_names_arun(self) -> None:
        """`run()` cannot start a second event loop for an async action: the run fails naming the action and
        `await agent.arun()`, and the async driver runs the same action."""
        registry = default_registry.child()

        @registry.action("fetch_later")
        async def fetch_later(args: Any, ctx: Any) -> dict[str, Any]:
            return {"fetched": True}

        workflow = load_workflow_text(ASYNC_STEP, name="async_step.yaml", registry=registry)
        result = workflow.agent().run()
        assert result.status == "error" and result.state == "start"
        assert "fetch_later" in (result.error or "") and "await agent.arun()" in (result.error or "")
        result = await workflow.agent().arun()
        assert (result.status, result.state) == ("final", "done")


class TestJournal:
    def test_resuming_without_a_hook_whose_state_the_run_keeps_is_refused(self, tmp_path: Path) -> None:
        """A run that kept a named hook's state is not resumed without that hook; nothing is claimed or written,
        so resuming it with the hook afterwards works and hands the hook back its state."""
        store, run_id = _waiting(tmp_path, [Notes()])
        machine = load_workflow_text(WAITS, name="waits.yaml").machine
        with pytest.raises(UsageError, match=r"without its hooks \(it keeps state for hook\(s\) notes\)"):
            Agent.resume(store, run_id, machine)
        hook = Notes()
        agent = Agent.resume(store, run_id, machine, hooks=[hook])
        assert hook.resumed_with == {"seen": 1}
        assert agent.run(trigger="go").status == "final"
        store.close()

    def test_resuming_under_a_machine_without_the_runs_state_is_refused(self, tmp_path: Path) -> None:
        """The stored state must exist in the machine it is resumed with: the error names the state and the
        workflow, and the run stays as it was."""
        store, run_id = _waiting(tmp_path, [])
        other = load_workflow_text(WAITS_ELSEWHERE, name="waits.yaml").machine
        with pytest.raises(StoreError, match="is in state 'wait', which workflow 'waits' no longer has"):
            Agent.resume(store, run_id, other)
        row = store.get_run(run_id)
        assert (row.status, row.state) == ("waiting", "wait")
        store.close()


class TestDispatch:
    def test_two_hooks_keeping_state_under_one_name_are_refused(self) -> None:
        machine = load_workflow_text(WAITS, name="waits.yaml").machine
        with pytest.raises(UsageError, match="two hooks of one agent keep state under the same name: notes, notes"):
            Agent(machine, hooks=[Notes(), Notes()])

    def test_a_hook_that_raises_on_stop_is_logged_and_the_outcome_stands(self) -> None:
        workflow = load_workflow_text(WAITS, name="waits.yaml")
        with capture_logs() as logs:
            result = workflow.agent(hooks=[FailsOnStop()]).run()
        assert (result.status, result.error) == ("waiting", None)
        failed = [e for e in logs if e["event"] == "run_hook_failed"]
        assert failed == [
            {
                "event": "run_hook_failed",
                "run_id": result.run_id,  # the warning names the run it was about
                "agent": "waits",
                "hook": "FailsOnStop",
                "error": "RuntimeError: the hook broke",
                "log_level": "warning",
            }
        ]

    def test_what_a_hook_adds_at_the_start_loses_a_clash_with_the_runs_inputs(self) -> None:
        result = load_workflow_text(WAITS, name="waits.yaml").agent(hooks=[Adds()]).run({"topic": "the run's"})
        assert result.context["topic"] == "the run's" and result.context["from_hook"] is True


class TestResult:
    def test_counters_read_as_attributes_and_nothing_else_does(self) -> None:
        result = RunResult("r1", "final", "done", {"steps": 3})
        assert result.steps == 3
        with pytest.raises(AttributeError, match="tokenz"):
            _ = result.tokenz

    def test_the_json_shape_leaves_out_what_a_run_did_not_have(self) -> None:
        shape = RunResult("r1", "final", "done", {"steps": 3}).to_dict()
        assert not {"event", "diverged_at", "tokens_saved", "llm_calls_saved", "learning"} & set(shape)
        assert shape["steps"] == 3 and shape["available_triggers"] == []
