"""Hooks see a run, not the Agent: a read-only run view, keyword arguments, and what they add returned (counters, a
named section of the result); a hook written to the earlier signature still works, warned once per class. Through a
real Agent and, where a store is involved, a real SQLite RunStore."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from sherpa_skills.engine.agent import Agent, RunResult
from sherpa_skills.engine.hooks import HookReport, RunHook
from sherpa_skills.engine.run.view import RunView
from sherpa_skills.engine.runstore import RunStore
from sherpa_skills.engine.workflow import load_workflow_text

TWO_STEPS = """
name: two_steps
initial: start
states:
  start:
    on_enter: {set: {seen: 1}}
    transitions: [{trigger: go, dest: middle}]
  middle:
    transitions: [{trigger: on, dest: done}]
  done:
    final: true
"""


def _agent(hooks: list[RunHook], **kwargs: Any) -> Agent:
    return load_workflow_text(TWO_STEPS, name="two_steps.yaml").agent(hooks=hooks, learn=False, **kwargs)


class Watches(RunHook):
    """Reads the run it is shown, and tries to write it."""

    def __init__(self) -> None:
        self.heard: list[tuple[str, Any]] = []
        self.refused: list[str] = []

    def on_start(self, *, run: RunView, inputs: dict[str, Any], event: Any) -> dict[str, Any] | None:
        self.heard.append(("start", (run.run_id, run.workflow, run.state, dict(inputs))))
        for attempt in (
            lambda: setattr(run, "state", "done"),
            lambda: run.counters.__setitem__("steps", 99),  # type: ignore[attr-defined]
            lambda: run.belief.context.__setitem__("seen", 2),  # type: ignore[attr-defined]
        ):
            try:
                attempt()
            except (AttributeError, TypeError, Exception) as exc:
                self.refused.append(type(exc).__name__)
        return {"from_hook": True}

    def on_transition(self, *, run: RunView, state: str, trigger: str | None, **_: Any) -> None:
        self.heard.append(("transition", (state, trigger)))

    def on_action(self, *, run: RunView, action: str, status: str, **_: Any) -> None:
        self.heard.append(("action", (action, status)))

    def on_stop(self, *, run: RunView, result: RunResult) -> HookReport | None:
        self.heard.append(("stop", (result.status, run.counters["steps"])))
        return HookReport(counters={"tokens": 5}, sections={"watched": {"steps": run.counters["steps"]}})


class TestTheRunView:
    def test_a_hook_reads_the_run_and_adds_what_it_returns(self) -> None:
        hook = Watches()
        result = _agent([hook]).run({"who": "me"})
        assert result.status == "final" and result.context["from_hook"] is True
        assert hook.heard[0] == ("start", (result.run_id, "two_steps", "start", {"who": "me"}))
        assert ("transition", ("middle", "go")) in hook.heard and ("transition", ("done", "on")) in hook.heard
        assert hook.heard[-1] == ("stop", ("final", 2))
        # What it returned: a counter added, a named section read as an attribute and shown in the JSON shape.
        assert result.tokens == 5 and result.watched == {"steps": 2}
        assert result.to_dict()["watched"] == {"steps": 2} and list(result.to_dict())[-1] == "watched"

    def test_the_view_refuses_every_write(self) -> None:
        hook = Watches()
        result = _agent([hook]).run()
        assert len(hook.refused) == 3  # the state, a counter, the belief: each refused
        assert result.state == "done" and result.context["seen"] == 1 and result.steps == 2


class Overreaches(RunHook):
    def __init__(self, report: Any) -> None:
        self.report = report

    def on_stop(self, *, run: RunView, result: RunResult) -> Any:
        return self.report


class TestWhatAHookMayAdd:
    @pytest.mark.parametrize(
        ("report", "why"),
        [
            (HookReport(sections={"status": "final"}), "section 'status' would overwrite"),
            (HookReport(sections={"steps": 0}), "section 'steps' would overwrite"),
            (HookReport(sections={"to_dict": None}), "section 'to_dict' would overwrite"),
            (HookReport(counters={"invented": 1}), "counter 'invented' is not one of the run's"),
            (HookReport(counters={"steps": "many"}), "counter 'steps'"),
            ({"status": "final"}, "not a HookReport"),
        ],
    )
    def test_a_report_that_would_overwrite_the_runs_outcome_is_refused_and_logged(self, report: Any, why: str) -> None:
        with capture_logs() as logs:
            result = _agent([Overreaches(report)]).run()
        assert (result.status, result.state, result.steps, result.error) == ("final", "done", 2, None)
        failed = [e for e in logs if e["event"] == "run_hook_failed"]
        assert len(failed) == 1 and why in failed[0]["error"] and failed[0]["hook"] == "Overreaches"

    @pytest.mark.parametrize(
        "report",
        [
            HookReport(counters={"tokens": 5}, sections=["extra"]),  # type: ignore[arg-type]
            HookReport(counters=None),  # type: ignore[arg-type]
            HookReport(counters={"tokens": 5}, sections={"extra": 1, 7: 2}),  # type: ignore[dict-item]
        ],
    )
    def test_a_malformed_report_is_refused_whole_and_logged(self, report: Any) -> None:
        # Its parts not mappings of names: nothing of it applied (not its counters before its sections fail).
        with capture_logs() as logs:
            result = _agent([Overreaches(report)]).run()
        assert (result.status, result.tokens, result.sections) == ("final", 0, {})
        failed = [e for e in logs if e["event"] == "run_hook_failed"]
        assert len(failed) == 1 and failed[0]["hook"] == "Overreaches"

    def test_what_a_hook_spent_is_stored_with_the_tick(self, tmp_path: Path) -> None:
        class Spends(RunHook):
            def __init__(self) -> None:
                self.bill: dict[str, int] | None = {"llm_calls": 1, "tokens": 40}

            def spent(self) -> dict[str, int] | None:
                bill, self.bill = self.bill, None
                return bill

        store = RunStore(tmp_path / "runs.db")
        result = _agent([Spends()], store=store).run()
        assert (result.llm_calls, result.tokens) == (1, 40)
        assert store.get_run(result.run_id).counters["tokens"] == 40  # counted once, and stored

    def test_a_hook_that_fails_watching_a_step_is_logged_and_the_run_goes_on(self) -> None:
        class Breaks(RunHook):
            def on_transition(self, *, run: RunView, **_: Any) -> None:
                raise RuntimeError("printer gone")

        with capture_logs() as logs:
            result = _agent([Breaks()]).run()
        assert result.status == "final"
        assert [e["error"] for e in logs if e["event"] == "run_hook_failed"] == ["RuntimeError: printer gone"] * 3


class Earlier(RunHook):
    """A hook written to the signature documented before: handed the Agent, writing into the result."""

    name = "earlier"

    def on_start(self, agent: Agent, inputs: dict[str, Any], event: Any) -> dict[str, Any] | None:
        return {"started_by": agent.name}

    def on_resume(self, agent: Agent, saved: Any) -> None:
        self.resumed = (agent.run_id, saved)

    def saved(self) -> Any:
        return {"kept": True}

    def on_stop(self, agent: Agent, result: RunResult) -> None:
        result.tokens_saved = 7


class TestTheEarlierSignature:
    def test_an_earlier_hook_still_works_and_is_warned_once_per_class(self, tmp_path: Path) -> None:
        from sherpa_skills.engine.run import dispatch

        dispatch._WARNED.discard(Earlier)
        store = RunStore(tmp_path / "runs.db")
        waits = load_workflow_text(TWO_STEPS.replace("  middle:\n", "  middle:\n    waiting: true\n"), name="w.yaml")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            first = waits.agent(hooks=[Earlier()], store=store, learn=False).run()
            second = _agent([Earlier()]).run()
            hook = Earlier()
            done = waits.resume(store, first.run_id, hooks=[hook], learn=False).run()
        assert first.context["started_by"].startswith("two_steps@") and first.tokens_saved == 7
        assert second.tokens_saved == 7 and done.status == "final" and done.tokens_saved == 7
        assert hook.resumed == (first.run_id, {"kept": True})
        ours = [w for w in caught if issubclass(w.category, DeprecationWarning) and "Earlier" in str(w.message)]
        assert len(ours) == 1 and "keyword arguments and a read-only run view" in str(ours[0].message)

    def test_a_script_with_an_earlier_hook_sees_the_warning_under_pythons_default_filters(self) -> None:
        # A DeprecationWarning is shown by default only where it is attributed to __main__: it must name the hook's
        # own code, not the engine's line that found it (which the default filters hide).
        import subprocess
        import sys

        script = (
            "import sherpa_skills as sk\n"
            "class Old(sk.RunHook):\n"
            "    def on_stop(self, agent, result):\n"
            "        pass\n"
            f"sk.load_workflow_text({TWO_STEPS!r}, name='two_steps.yaml').agent(hooks=[Old()], learn=False).run()\n"
        )
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stderr.count("DeprecationWarning: Old.on_stop") == 1 and "<string>:3" in done.stderr


def test_a_run_without_the_hook_that_keeps_a_section_reads_none_there_and_a_typo_is_still_an_error() -> None:
    import sherpa_skills

    workflow = sherpa_skills.load_workflow_text(
        "name: two\ninitial: a\nstates: {a: {}, b: {final: true}}\ntransitions: [{trigger: go, source: a, dest: b}]\n"
    )
    result = workflow.agent(learn=False).run({})
    assert result.status == "final"
    assert result.learning is None, "as the field it was: a run that does not learn has nothing there"
    with pytest.raises(AttributeError):
        result.lerning  # noqa: B018
