"""How a run (or a resumed stretch of it) ended: `RunResult`, whose `to_dict` is the stable `--json` shape."""

from __future__ import annotations

from dataclasses import dataclass, field
from time import perf_counter
from typing import TYPE_CHECKING, Any

from ...errors import ClaimLost, RefusedError, SherpaError, UsageError
from .dispatch import stop_hooks
from .journal import commit

if TYPE_CHECKING:
    from ..agent import Agent


@dataclass
class RunResult:
    """How a run (or a resumed stretch of it) ended; `to_dict` is the stable `--json` shape."""

    run_id: str
    status: str  # final | waiting | error (a run store also shows running, and interrupted: stopped by a signal)
    state: str
    counters: dict[str, Any]
    error: str | None = None
    context: dict[str, Any] = field(default_factory=dict)
    available: list[str] = field(default_factory=list)
    interrupted: list[dict[str, Any]] = field(default_factory=list)
    duration_ms: float = 0.0
    waiting_for: str = ""
    event: dict[str, Any] | None = (
        None  # for `handle`: the event's id, name, outcome (handled|duplicate|unavailable|invalid) and why
    )
    diverged_at: dict[str, Any] | None = (
        None  # a replayed procedure's first divergence: step, state, expected, observed
    )
    # What a replay saved (None when no hook replays): what planning the procedure it replayed cost, less what it spent.
    tokens_saved: int | None = None
    llm_calls_saved: int | None = None
    #: Named sections the run's hooks added (`HookReport.sections`), each read as an attribute and shown last in
    #: `to_dict`: what the hook that learns did is the section of its name.
    sections: dict[str, Any] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        counters = self.__dict__.get("counters", {})
        if name in counters:
            return counters[name]
        sections = self.__dict__.get("sections", {})
        if name in sections:
            return sections[name]
        from ..hooks import SECTION_NAMES

        if name in SECTION_NAMES:  # a run its hook did not take part in: nothing to say, as an unset field
            return None
        raise AttributeError(name)

    def to_dict(self) -> dict[str, Any]:
        return (
            {
                "run_id": self.run_id,
                "status": self.status,
                "state": self.state,
                **self.counters,
                "error": self.error,
                "available_triggers": self.available,
                "interrupted": self.interrupted,
                "duration_ms": round(self.duration_ms, 3),
                "waiting_for": self.waiting_for,
                "context": self.context,
            }
            | ({"event": self.event} if self.event is not None else {})
            | ({"diverged_at": self.diverged_at} if self.diverged_at is not None else {})
            | (
                {"tokens_saved": self.tokens_saved, "llm_calls_saved": self.llm_calls_saved}
                if self.tokens_saved is not None
                else {}
            )
            | {name: value for name, value in self.sections.items() if value is not None}
        )


def run_result(agent: Agent, status: str, error: str | None, t0: float, ended: bool = True) -> RunResult:
    interrupted = [{"tick": i.tick, "action": i.action, "started": i.started} for i in agent.journal.interrupted]
    try:
        available = [e.trigger for e in agent.available_transitions()] if status in ("waiting", "error") else []
    except SherpaError:  # the guards themselves may be what failed the run
        available = []
    result = RunResult(
        agent.run_id,
        status,
        agent.state,
        dict(agent.counters),
        error,
        dict(agent.belief.context),
        available,
        interrupted,
        (perf_counter() - t0) * 1000,
        agent.machine.describe(agent._leaf) if status == "waiting" else "",
        agent._event_report,
        # Each named hook's section reads None until the hook adds it (a run whose hook had nothing to say).
        sections=dict.fromkeys(h.name for h in agent.hooks if h.name) if agent.hooks else {},
    )
    if ended:  # a refused resume did not stop the run: its hooks do not hear of it
        stop_hooks(agent, result)
    agent._log.info("run_stopped", status=status, state=agent.state, steps=agent.counters["steps"], error=error)
    return result


def fail(agent: Agent, exc: SherpaError, t0: float) -> RunResult:
    message = agent._scrub(str(exc))
    for attr in ("llm_calls", "tokens", "cost"):
        extra = getattr(exc, attr, None)
        if extra:
            agent.counters[attr] += extra
    agent._log.error("run_failed", state=agent.state, error=message, kind=type(exc).__name__)
    # A refused resume changes nothing stored: a finished run stays finished, a waiting one waits as it was.
    # A run another process claimed meanwhile is that process's to record (see run_claims).
    refused = isinstance(exc, (RefusedError, ClaimLost)) or (agent.is_final() and isinstance(exc, UsageError))
    try:
        if not refused:
            commit(agent, "error", message)
    except SherpaError as store_exc:
        message = f"{message}; and the store refused the record: {store_exc}"
    return run_result(agent, "error", message, t0, ended=not refused)
