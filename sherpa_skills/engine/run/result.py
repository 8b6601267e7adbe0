"""How a run (or a resumed stretch of it) ended: `RunResult`, whose `to_dict` is the stable `--json` shape."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
    # A learning run's savings (None when the run does not learn): what planning the procedure it replayed cost,
    # less what it spent.
    tokens_saved: int | None = None
    llm_calls_saved: int | None = None
    #: What a learning run's learning did: the procedure it followed, the decisions its memory answered and where it
    #: abstained, the examples and branch it saved (None when the run does not learn).
    learning: dict[str, Any] | None = None

    def __getattr__(self, name: str) -> Any:
        counters = self.__dict__.get("counters", {})
        if name in counters:
            return counters[name]
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
            | ({"learning": self.learning} if self.learning is not None else {})
        )
