"""Calling an agent's hooks, in one place: their names checked, their advisors put before the policy's model, what
they keep with the run and what they spent collected for a commit, and the run's start, resume, steps and stop told to
each (through a read-only run view; a hook written to the earlier signature is handed the Agent, warned once). What
a hook raises is logged here: at the start or a resume it then refuses the run, at a step or the stop it never fails
it."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from ...errors import UsageError
from ...policy.base import Policy
from ..events import Event
from ..hooks import HookReport, RunHook

if TYPE_CHECKING:
    from ..agent import Agent
    from .result import RunResult

_MISSING = object()
#: The methods a hook may override to hear of a run's steps (the progress a printer, a tracer or a relay follows).
STEP_METHODS = ("on_decision", "on_transition", "on_action", "on_event")
#: What a hook may not set on a result: the run's own outcome.
_THE_RUNS = frozenset(
    (
        "run_id",
        "status",
        "state",
        "counters",
        "error",
        "context",
        "available",
        "interrupted",
        "duration_ms",
        "waiting_for",
        "event",
    )
)
# Hook classes written to the earlier signature (hook.on_start(agent, inputs, event), ...): warned once each.
_WARNED: set[type] = set()


def check_hook_names(hooks: Sequence[RunHook]) -> None:
    """UsageError when two hooks would keep their state with the run under one name."""
    names = [h.name for h in hooks if h.name]
    if len(set(names)) != len(names):
        raise UsageError(f"two hooks of one agent keep state under the same name: {', '.join(sorted(names))}")


def learner_names() -> set[str]:
    """The names the hooks that learn keep their state under (any RunHook subclass defined so far with `learns`)."""
    found: set[str] = set()
    classes: list[type[RunHook]] = [RunHook]
    while classes:
        cls = classes.pop()
        classes.extend(cls.__subclasses__())
        if cls.learns and cls.name:
            found.add(cls.name)
    return found


def watchers(hooks: Sequence[RunHook]) -> tuple[RunHook, ...]:
    """The hooks that hear of a run's steps: the tick tells only these (most runs have none: the check is one test)."""
    return tuple(h for h in hooks if any(getattr(type(h), m) is not getattr(RunHook, m) for m in STEP_METHODS))


def advised(policy: Policy, hooks: Sequence[RunHook]) -> Policy:
    """The policy with its hooks' advisors (a replay) after its rules and before its LLM."""
    advisors = [a for h in hooks if (a := h.advisor()) is not None]
    if advisors:
        from ...policy.advised import with_advisors

        return with_advisors(policy, advisors)
    return policy


def saved_by_hooks(hooks: Sequence[RunHook], hook_state: dict[str, Any]) -> dict[str, Any] | None:
    """What the named hooks keep with the run, when one of them saved something new since the last commit
    (`hook_state`, what each last saved, is brought up to date)."""
    changed = False
    for hook in hooks:
        if hook.name:
            state = hook.saved()
            if state is not hook_state.get(hook.name, _MISSING):
                hook_state[hook.name] = state
                changed = True
    return dict(hook_state) if changed else None


def spent_by_hooks(agent: Agent) -> None:
    """What the hooks spent since asked (a model call of theirs), added to the run's counters before a commit."""
    counters = agent.counters
    for hook in agent.hooks:
        spent = hook.spent()
        if spent:
            for key, value in spent.items():
                if key in counters and not isinstance(value, bool) and isinstance(value, (int, float)):
                    counters[key] += value
                else:
                    agent._log.warning("run_hook_spent_refused", hook=type(hook).__name__, counter=key)


def start_hooks(agent: Agent, start: dict[str, Any], event: Event | None) -> dict[str, Any]:
    """The inputs to start with, after each hook added its own (a domain's decisions and status, a match's procedure);
    the run's inputs win a clash."""
    for hook in agent.hooks:
        if _earlier(hook, "on_start"):
            added = _call(agent, hook, "on_start", agent, start, event)
        else:
            added = _call(agent, hook, "on_start", run=agent.run_view, inputs=start, event=event)
        start = {**(added or {}), **start}
    return start


def resume_hooks(agent: Agent, saved: dict[str, Any]) -> None:
    """Each hook gets back what it saved with the run; what one raises refuses the resume."""
    for hook in agent.hooks:
        kept = saved.get(hook.name) if hook.name else None
        if _earlier(hook, "on_resume"):
            _call(agent, hook, "on_resume", agent, kept)
        else:
            _call(agent, hook, "on_resume", run=agent.run_view, saved=kept)


def tell(agent: Agent, method: str, **what: Any) -> None:
    """A step told to the hooks that hear of steps (`watchers`); what one raises is logged, the run goes on."""
    run = agent.run_view
    for hook in agent.watchers:
        try:
            getattr(hook, method)(run=run, **what)
        except Exception as exc:  # a printer or tracer that fails must not fail the run it watches
            _failed(agent, hook, exc)


def stop_hooks(agent: Agent, result: RunResult) -> None:
    """Each hook hears how the run stopped and adds what it returns; what one raises is logged, and the run's
    outcome stands."""
    for hook in agent.hooks:
        try:
            if _earlier(hook, "on_stop"):
                _call(agent, hook, "on_stop", agent, result)
                continue
            report = _call(agent, hook, "on_stop", run=agent.run_view, result=result)
            if report is not None:
                _add(agent, hook, report, result)
        except (
            Exception
        ):  # logged by _call/_add; the hook's failure is reported beside the outcome, never instead of it
            continue


def _add(agent: Agent, hook: RunHook, report: Any, result: RunResult) -> None:
    """A hook's report put into the result: its counters added, its sections set (a field a hook may fill, or a
    section of its own); anything that would overwrite the run's own outcome is refused, and nothing of it applied."""
    if not isinstance(report, HookReport):
        raise _refused(agent, hook, f"on_stop returned {type(report).__name__}, not a HookReport or None")
    for part in ("counters", "sections"):  # checked before anything is applied: a list here failed half-way through
        if not isinstance(getattr(report, part), Mapping):
            raise _refused(agent, hook, f"its report's {part} is {type(getattr(report, part)).__name__}, not a mapping")
    fillable = {f.name for f in fields(result)} - _THE_RUNS - {"sections"}
    taken = _THE_RUNS | set(result.counters) | {"available_triggers", "sections", "to_dict"}
    for name in report.sections:
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("_") or name in taken:
            raise _refused(agent, hook, f"section '{name}' would overwrite the run's own result")
    for key, value in report.counters.items():
        if key not in result.counters or isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _refused(agent, hook, f"counter '{key}' is not one of the run's, or {value!r} is not a number")
    for key, value in report.counters.items():
        result.counters[key] += value
    for name, value in report.sections.items():
        if name in fillable:
            setattr(result, name, value)
        else:
            result.sections[name] = value


def _refused(agent: Agent, hook: RunHook, why: str) -> UsageError:
    exc = UsageError(f"hook {type(hook).__name__}: {why}")
    _failed(agent, hook, exc)
    return exc


def _call(agent: Agent, hook: RunHook, method: str, *args: Any, **kwargs: Any) -> Any:
    try:
        return getattr(hook, method)(*args, **kwargs)
    except Exception as exc:
        _failed(agent, hook, exc)
        raise


def _failed(agent: Agent, hook: RunHook, exc: Exception) -> None:
    agent._log.warning("run_hook_failed", hook=type(hook).__name__, error=f"{type(exc).__name__}: {exc}")


def _earlier(hook: RunHook, method: str) -> bool:
    """Whether `hook`'s `method` is written to the earlier signature (the Agent first, positionally); warned once per
    hook class, the first time it is found so."""
    fn = getattr(type(hook), method, None)
    if fn is None or fn is getattr(RunHook, method):
        return False
    try:
        params = list(inspect.signature(fn).parameters.values())[1:]  # past self
    except (TypeError, ValueError):
        return False
    if not params or params[0].kind not in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD):
        return False
    if params[0].name == "run":
        return False
    cls = type(hook)
    if cls not in _WARNED:
        _WARNED.add(cls)
        code = getattr(fn, "__code__", None)
        # Said at the hook's own method: Python's default filters show a DeprecationWarning only where it is
        # attributed to the user's code (__main__), never at the engine line that found it.
        warnings.warn_explicit(
            f"{cls.__qualname__}.{method}: a run hook's methods now take keyword arguments and a read-only run view "
            f"(on_start(*, run, inputs, event), on_resume(*, run, saved), on_stop(*, run, result) returning a "
            f"HookReport); the earlier signature, handed the Agent, still works for now",
            DeprecationWarning,
            filename=code.co_filename if code is not None else "<unknown>",
            lineno=code.co_firstlineno if code is not None else 0,
            module=cls.__module__,
        )
    return True
