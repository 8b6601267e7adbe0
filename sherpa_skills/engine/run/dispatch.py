"""Calling an agent's hooks: their names checked, their advisors put before the policy's model, what they keep with
the run collected for a commit, and the run's start and stop told to each."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...errors import UsageError
from ...policy.base import Policy
from ..events import Event
from ..hooks import RunHook

if TYPE_CHECKING:
    from structlog.typing import FilteringBoundLogger

    from ..agent import Agent
    from .result import RunResult

_MISSING = object()


def check_hook_names(hooks: Sequence[RunHook]) -> None:
    """UsageError when two hooks would keep their state with the run under one name."""
    names = [h.name for h in hooks if h.name]
    if len(set(names)) != len(names):
        raise UsageError(f"two hooks of one agent keep state under the same name: {', '.join(sorted(names))}")


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


def start_hooks(agent: Agent, start: dict[str, Any], event: Event | None) -> dict[str, Any]:
    """The inputs to start with, after each hook added its own (a domain's decisions and status, a learning's match);
    the run's inputs win a clash."""
    for hook in agent.hooks:
        start = {**(hook.on_start(agent, start, event) or {}), **start}
    return start


def stop_hooks(agent: Agent, result: RunResult, log: FilteringBoundLogger) -> None:
    """Each hook hears how the run stopped; what one raises is logged, and the run's outcome stands."""
    for hook in agent.hooks:
        try:
            hook.on_stop(agent, result)
        except Exception as exc:  # the hook's failure is reported beside the outcome, never instead of it
            log.warning("run_hook_failed", hook=type(hook).__name__, error=f"{type(exc).__name__}: {exc}")
