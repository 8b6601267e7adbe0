"""One agent as its own process on the Redis bus: read, handle, commit, publish what it emitted, then acknowledge.

The order is what makes a crash lose nothing: an entry is acknowledged only after the tick that consumed it (and the
events it emitted, kept in the run store's outbox) are committed, and the outbox is published before the entry is
acknowledged. On start the agent first republishes its committed-but-unpublished outbox, then re-reads its own pending
entries, then claims entries other consumers of the same agent left idle too long; the run store skips what it already
consumed.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog

from ..logs import ensure_configured
from .bus import Published
from .redis_bus import Message, RedisBus
from .team import AgentHost, Delivery

if TYPE_CHECKING:
    from ..engine.runstore import RunStore
    from ..engine.workflow import Workflow

__all__ = ["AgentService", "ServiceResult"]

log = structlog.get_logger("sherpa_skills.agents.service")


@dataclass
class ServiceResult:
    """What one agent process did before it stopped."""

    agent: str
    consumer: str
    stopped: str  # max_events | idle | signal
    counters: dict[str, int]
    deliveries: list[Delivery] = field(default_factory=list)
    problems: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "consumer": self.consumer,
            "stopped": self.stopped,
            "counters": self.counters,
            "deliveries": [d.to_dict() for d in self.deliveries],
            "problems": self.problems,
        }


class AgentService:
    """Serve one named agent from a Redis bus until a limit, an idle timeout, or a stop request."""

    def __init__(
        self,
        name: str,
        workflow: Workflow,
        topics: list[str],
        bus: RedisBus,
        store: RunStore,
        *,
        consumer: str | None = None,
        model: str | None = None,
        claim_idle: float = 60.0,
        batch: int = 16,
        on_delivery: Callable[[Delivery], None] | None = None,
        on_problem: Callable[[dict[str, Any]], None] | None = None,
    ):
        self.name, self.topics, self.bus, self.store = name, list(topics), bus, store
        self.consumer = consumer or name
        self.host = AgentHost(name, workflow, store, model=model)
        self.claim_idle_ms = int(claim_idle * 1000)
        self.batch = batch
        self.on_delivery, self.on_problem = on_delivery, on_problem
        self.streams: list[str] = []
        self.stop_requested = False
        self.counters = dict.fromkeys(
            (
                "consumed",
                "handled",
                "duplicate",
                "unavailable",
                "invalid",
                "error",
                "malformed",
                "claimed",
                "redelivered",
                "republished",
                "emitted",
                "unrouted",
            ),
            0,
        )
        self.deliveries: list[Delivery] = []
        self.problems: list[dict[str, Any]] = []
        ensure_configured()
        self._log = log.bind(agent=name, consumer=self.consumer, host=socket.gethostname(), pid=os.getpid())

    def start(self) -> list[str]:
        """Create the consumer groups, announce the agent, and publish what a previous process
        committed but never sent."""
        self.streams = self.bus.register(self.name, self.topics)
        self.counters["republished"] += self.host.relay(self._publish)
        return self.streams

    def serve(
        self, *, max_events: int | None = None, idle_exit: float | None = None, block: float = 1.0
    ) -> ServiceResult:
        """Pending entries first, then new ones (claiming abandoned ones now and then), until a limit is reached."""
        if not self.streams:
            self.start()
        stopped = self._drain(self._pending(), max_events)
        last_event = time.monotonic()
        last_claim = 0.0
        while stopped is None:
            if self.stop_requested:
                stopped = "signal"
                break
            now = time.monotonic()
            if idle_exit is not None and now - last_event >= idle_exit:
                stopped = "idle"
                break
            messages: list[Message] = []
            if now - last_claim >= max(self.claim_idle_ms / 4000, 0.5):
                last_claim = now
                messages = self.bus.claim(
                    self.name, self.consumer, self.streams, min_idle_ms=self.claim_idle_ms, count=self.batch
                )
                self.counters["claimed"] += len(messages)
            if not messages:
                wait = block if idle_exit is None else max(0.01, min(block, idle_exit - (now - last_event)))
                messages = self.bus.read(
                    self.name, self.consumer, self.streams, count=self.batch, block_ms=int(wait * 1000)
                )
            if messages:
                last_event = time.monotonic()
            stopped = self._drain(messages, max_events)
        self._log.info("agent_stopped", stopped=stopped, **self.counters)
        return ServiceResult(
            self.name, self.consumer, stopped, dict(self.counters), list(self.deliveries), list(self.problems)
        )

    def _pending(self) -> list[Message]:
        """This consumer's own entries delivered before a crash and never acknowledged."""
        found: list[Message] = []
        while True:
            page = self.bus.read(self.name, self.consumer, self.streams, pending=True, count=1000)
            fresh = [m for m in page if (m.stream, m.entry_id) not in {(f.stream, f.entry_id) for f in found}]
            if not fresh:
                break
            found += fresh
            if len(page) < 1000:
                break
        if found:
            self.counters["redelivered"] += len(found)
            self._log.warning("redelivering_pending_events", count=len(found))
        return found

    def _drain(self, messages: list[Message], max_events: int | None) -> str | None:
        for message in messages:
            if self.stop_requested:
                return "signal"
            self.process(message)
            if max_events is not None and self.counters["consumed"] >= max_events:
                return "max_events"
        return None

    def process(self, message: Message) -> Delivery | None:
        """Handle one entry; acknowledge it only once what it caused is committed and published."""
        self.counters["consumed"] += 1
        if message.event is None:
            self.counters["malformed"] += 1
            self._report(
                {"kind": "malformed", "problem": message.error, "stream": message.stream, "entry": message.entry_id}
            )
            self.bus.dead_letter(self.name, message, message.error or "malformed")
            self.bus.ack(self.name, message)
            return None
        delivery = self.host.deliver(message.event)
        self.counters[delivery.outcome] += 1
        self.host.relay(self._publish, delivery)  # another machine's relay may have published some already
        if delivery.outcome not in ("handled", "duplicate"):
            self._report(
                {
                    "kind": delivery.outcome,
                    "problem": delivery.reason,
                    "event": message.event.body(),
                    "run_id": delivery.run_id,
                }
            )
            self.bus.dead_letter(self.name, message, f"{delivery.outcome}: {delivery.reason}")
        self.bus.ack(self.name, message)
        self.deliveries.append(delivery)
        if self.on_delivery is not None:
            self.on_delivery(delivery)
        return delivery

    def _publish(self, body: dict[str, Any]) -> Published:
        published = self.bus.publish(body)
        self.counters["emitted"] += 1
        if not published.ok:
            if published.kind == "unrouted":
                self.counters["unrouted"] += 1
            else:
                self.counters["malformed"] += 1
            self._report(published.to_dict())
        return published

    def _report(self, problem: dict[str, Any]) -> None:
        self.problems.append(problem)
        self._log.warning("event_problem", **{k: v for k, v in problem.items() if k != "event"})
        if self.on_problem is not None:
            self.on_problem(problem)
