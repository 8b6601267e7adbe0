"""The run's accounting: its counters, and the log entries of what it spent (a policy's model calls, the actions)."""

from __future__ import annotations

import time
from time import perf_counter
from typing import TYPE_CHECKING, Any

from ...errors import PolicyError
from ...policy.base import Decision
from ..belief import log_entry
from ..compiler import BoundAction
from ..registry import ActionResult
from .dispatch import tell

if TYPE_CHECKING:
    from ..agent import Agent

COUNTERS = (
    "steps",
    "llm_calls",
    "tokens",
    "cost",
    "fast_forwards",
    "rule_decisions",
    "llm_decisions",
    "user_decisions",
    "actions",
    "estimated_tokens",
    "replayed_decisions",
)


def count_decision(agent: Agent, decision: Decision) -> None:
    """A decision counted by who made it; one that called a model is also counted in the log, with its cost."""
    c = agent.counters
    by = decision.decided_by
    if by == "rule":
        c["rule_decisions"] += 1
    elif by == "llm":
        c["llm_decisions"] += 1
    elif by == "replay":
        c["replayed_decisions"] += 1
    elif by in ("user", "event"):
        c["user_decisions"] += 1
    if decision.llm_calls:
        c["llm_calls"] += decision.llm_calls
        c["tokens"] += decision.tokens
        c["cost"] += decision.cost
        if decision.tokens_estimated:
            c["estimated_tokens"] += decision.tokens
        # The validated arguments too: a captured trajectory replays them.
        outputs: dict[str, Any] = {
            "trigger": decision.trigger,
            "args": dict(decision.args),
            "reason": decision.reason,
        }
        outputs |= _llm_extras(decision.llm_calls, decision.rejected, decision.tokens_estimated)
        agent._append_log(
            log_entry(
                tick=agent._tick + 1,
                action="policy:llm",
                inputs=agent._recorded({"state": agent.state}),
                outputs=agent._recorded(outputs),
                status="ok",
                started=time.time(),
                duration_ms=0.0,
                tokens=decision.tokens,
                cost=decision.cost,
                error=None,
            )
        )


def log_failed_decision(agent: Agent, exc: PolicyError) -> None:
    """A decision that failed is in the log too, with the answers it rejected (its cost is counted by `_fail`)."""
    calls = getattr(exc, "llm_calls", 0)
    if not calls:
        return
    if getattr(exc, "tokens_estimated", False):
        agent.counters["estimated_tokens"] += getattr(exc, "tokens", 0)
    agent._append_log(
        log_entry(
            tick=agent._tick + 1,
            action="policy:llm",
            inputs=agent._recorded({"state": agent.state}),
            outputs=_llm_extras(calls, getattr(exc, "rejected", []), getattr(exc, "tokens_estimated", False)),
            status="error",
            started=time.time(),
            duration_ms=0.0,
            tokens=getattr(exc, "tokens", 0),
            cost=getattr(exc, "cost", 0.0),
            error=str(exc),
        )
    )


def log_action(
    agent: Agent,
    bound: BoundAction,
    inputs: dict[str, Any],
    outputs: Any,
    status: str,
    started: float,
    t0: float,
    error: str | None,
    result: ActionResult | None = None,
    *,
    repeated: bool = False,
) -> None:
    """An action's call counted and logged (secrets scrubbed, values frozen), and told to the hooks watching steps."""
    duration = (perf_counter() - t0) * 1000
    tokens = result.tokens if result else 0
    cost = result.cost if result else 0.0
    agent.counters["actions"] += 1
    if result is not None and (result.llm_calls or tokens):
        agent.counters["llm_calls"] += result.llm_calls
        agent.counters["tokens"] += tokens
        agent.counters["cost"] += cost
    error = agent._scrub(error)
    agent._append_log(
        log_entry(
            tick=agent._tick,
            action=bound.name,
            inputs=agent._recorded(inputs),
            outputs=agent._recorded(outputs),
            status=status,
            started=started,
            duration_ms=duration,
            tokens=tokens,
            cost=cost,
            error=error,
            repeated=repeated,
        )
    )
    if agent.watchers:
        tell(agent, "on_action", action=bound.name, status=status, duration_ms=duration, error=error, state=agent.state)


def _llm_extras(calls: int, rejected: list[dict[str, str]], estimated: bool) -> dict[str, Any]:
    """What a policy:llm log entry adds beyond the choice: requests sent, answers rejected, estimated tokens."""
    extras: dict[str, Any] = {"llm_calls": calls}
    if rejected:
        extras["rejected"] = rejected
    if estimated:
        extras["tokens_estimated"] = True
    return extras
