"""The event bus: who receives an event. In-process (the default) routes into one FIFO queue,
so a team run is deterministic."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import structlog

from ..engine.events import Event, EventError, parse_event

__all__ = ["Bus", "InProcessBus", "Published"]

log = structlog.get_logger("sherpa_skills.agents.bus")


@dataclass
class Published:
    """What publishing one event did: who it is routed to, or why nobody gets it (malformed, unknown topic or agent)."""

    event: Event | None
    receivers: list[str] = field(default_factory=list)
    problem: str | None = None  # set when the event is malformed or routed to nobody
    kind: str = "routed"  # routed | malformed | unrouted

    @property
    def ok(self) -> bool:
        return self.kind == "routed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "receivers": self.receivers,
            "problem": self.problem,
            "event": self.event.body() if self.event is not None else None,
        }


@runtime_checkable
class Bus(Protocol):
    """Agents register with their topics; publishing validates an event and routes it (recipient first, else topic)."""

    def register(self, agent: str, topics: list[str]) -> None: ...

    def publish(self, event: Event | dict[str, Any]) -> Published: ...


class InProcessBus:
    """Publish/subscribe by topic and direct delivery by recipient, into one FIFO queue of (agent, event).

    Nothing is dropped silently: a malformed event and an event nobody can receive are counted and kept in `problems`.
    """

    def __init__(self) -> None:
        self.subscribers: dict[str, list[str]] = {}
        self.agents: list[str] = []
        self.queue: deque[tuple[str, Event]] = deque()
        self.counters = {"published": 0, "routed": 0, "malformed": 0, "unrouted": 0}
        self.problems: list[Published] = []

    def register(self, agent: str, topics: list[str]) -> None:
        if agent not in self.agents:
            self.agents.append(agent)
        for topic in topics:
            names = self.subscribers.setdefault(topic, [])
            if agent not in names:
                names.append(agent)

    def route(self, event: Event) -> tuple[list[str], str | None]:
        """Receivers of an event (a recipient alone when given, else the topic's subscribers), or why there are none."""
        if event.recipient is not None:
            if event.recipient in self.agents:
                return [event.recipient], None
            return [], f"no agent named '{event.recipient}' (agents: {', '.join(self.agents) or 'none'})"
        receivers = self.subscribers.get(event.topic or "", [])
        if receivers:
            return list(receivers), None
        return (
            [],
            f"no agent subscribes to topic '{event.topic}' (topics: {', '.join(sorted(self.subscribers)) or 'none'})",
        )

    def publish(self, event: Event | dict[str, Any]) -> Published:
        self.counters["published"] += 1
        try:
            checked = parse_event(event)
        except EventError as exc:
            return self._problem(Published(None, problem=str(exc), kind="malformed"), event)
        receivers, problem = self.route(checked)
        if problem is not None:
            return self._problem(Published(checked, problem=problem, kind="unrouted"), event)
        for name in receivers:
            self.queue.append((name, checked))
        self.counters["routed"] += 1
        return Published(checked, receivers)

    def _problem(self, published: Published, raw: object) -> Published:
        self.counters[published.kind] += 1
        self.problems.append(published)
        name = raw.get("name") if isinstance(raw, dict) else getattr(raw, "name", None)
        log.warning(f"event_{published.kind}", event_name=name, problem=published.problem)
        return published

    def pending(self) -> int:
        return len(self.queue)

    def next(self) -> tuple[str, Event] | None:
        """The oldest undelivered (agent, event), or None when nothing is pending."""
        return self.queue.popleft() if self.queue else None
