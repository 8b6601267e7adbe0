"""The distributed bus: Redis Streams, one stream per topic and per recipient, one consumer group per agent name.

Layout (prefix `sherpa` by default):

    {prefix}:topic:{topic}          events published to a topic            (XADD; field `event` = the event's JSON)
    {prefix}:agent:{name}           events sent to one agent (recipient)
    {prefix}:deadletter             malformed or failed entries, with the reason (for operators; never consumed)
    {prefix}:agents                 SET of registered agent names          (an unknown recipient is reported)
    {prefix}:subscribers:{topic}    SET of agent names subscribed to topic  (a topic nobody hears is reported)

Each agent reads its streams in consumer group `{name}` (created at id 0, so events sent before it started are kept
for it) and acknowledges an entry only after the tick that consumed it is committed: delivery is at-least-once, and
the run store's event ids make handling exactly-once for a durable agent (only an action in flight at a crash may run
twice, and is marked `repeated`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from ..engine.events import Event, EventError, parse_event
from ..errors import UsageError
from .bus import Published

if TYPE_CHECKING:
    from types import ModuleType

__all__ = ["Message", "RedisBus"]

log = structlog.get_logger("sherpa_skills.agents.redis_bus")


@dataclass
class Message:
    """One stream entry read by an agent: the event, or why it is not one."""

    stream: str
    entry_id: str
    event: Event | None
    error: str | None = None
    raw: dict[str, str] | None = None


def _redis() -> ModuleType:
    try:
        import redis
    except ImportError:  # pragma: no cover - depends on the environment
        raise UsageError("the Redis bus needs redis-py: pip install 'sherpa-skills[redis]' (or redis)") from None
    return redis


def _text(value: object) -> str:
    return value.decode(errors="replace") if isinstance(value, (bytes, bytearray)) else str(value)


def _entry_key(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


class RedisBus:
    """Publish, read, claim and acknowledge events on Redis Streams; the same `publish` as the in-process bus."""

    def __init__(self, url: str, *, prefix: str = "sherpa", maxlen: int | None = 100_000, client: Any = None):
        redis = _redis()
        self.url, self.prefix, self.maxlen = url, prefix, maxlen
        try:
            self.client = client or redis.Redis.from_url(url, socket_connect_timeout=5)
        except ValueError as exc:
            raise UsageError(f"--bus '{url}' is not a Redis URL ({exc}); use redis://HOST:PORT/DB") from None
        self._errors = redis.exceptions
        self.counters = {"published": 0, "routed": 0, "malformed": 0, "unrouted": 0}
        self.problems: list[Published] = []

    # ------------------------------------------------------------------ names

    def topic_stream(self, topic: str) -> str:
        return f"{self.prefix}:topic:{topic}"

    def agent_stream(self, name: str) -> str:
        return f"{self.prefix}:agent:{name}"

    @property
    def deadletter_stream(self) -> str:
        return f"{self.prefix}:deadletter"

    def _agents_key(self) -> str:
        return f"{self.prefix}:agents"

    def _subscribers_key(self, topic: str) -> str:
        return f"{self.prefix}:subscribers:{topic}"

    # ------------------------------------------------------------------ set-up

    def ping(self) -> None:
        try:
            self.client.ping()
        except self._errors.RedisError as exc:
            raise UsageError(f"cannot reach Redis at {self.url}: {exc}") from None

    def register(self, agent: str, topics: list[str]) -> list[str]:
        """Create the agent's consumer groups (idempotent), then announce it and its topics;
        returns the streams it reads."""
        self.ping()
        streams = [self.topic_stream(t) for t in topics] + [self.agent_stream(agent)]
        for stream in streams:
            try:
                self.client.xgroup_create(stream, agent, id="0", mkstream=True)
            except self._errors.ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise
        pipe = self.client.pipeline()
        for topic in topics:
            pipe.sadd(self._subscribers_key(topic), agent)
        pipe.sadd(self._agents_key(), agent)
        pipe.execute()
        return streams

    # ------------------------------------------------------------------ publishing

    def route(self, event: Event) -> tuple[str, list[str], str | None]:
        """The stream an event goes to, the agents that will read it, and why nobody will (when nobody will)."""
        if event.recipient is not None:
            known = self.client.sismember(self._agents_key(), event.recipient)
            problem = (
                None
                if known
                else (
                    f"no agent named '{event.recipient}' has registered on this bus "
                    f"(agents: {', '.join(self.agents()) or 'none'})"
                )
            )
            return self.agent_stream(event.recipient), [event.recipient] if known else [], problem
        receivers = sorted(_text(n) for n in self.client.smembers(self._subscribers_key(event.topic or "")))
        problem = (
            None
            if receivers
            else (f"no agent subscribes to topic '{event.topic}' (topics: {', '.join(self.topics()) or 'none'})")
        )
        return self.topic_stream(event.topic or ""), receivers, problem

    def publish(self, event: Event | dict[str, Any]) -> Published:
        """XADD the event to its stream. An event nobody hears yet is still kept (a later subscriber gets it)
        and reported."""
        self.counters["published"] += 1
        try:
            checked = parse_event(event)
        except EventError as exc:
            return self._problem(Published(None, problem=str(exc), kind="malformed"))
        stream, receivers, problem = self.route(checked)
        kwargs: dict[str, Any] = {"maxlen": self.maxlen, "approximate": True} if self.maxlen else {}
        self.client.xadd(stream, {"event": checked.to_json()}, **kwargs)
        if problem is not None:
            return self._problem(
                Published(
                    checked, problem=f"{problem}; kept in stream {stream} for a later subscriber", kind="unrouted"
                )
            )
        self.counters["routed"] += 1
        return Published(checked, receivers)

    def _problem(self, published: Published) -> Published:
        self.counters[published.kind] += 1
        self.problems.append(published)
        log.warning(
            f"event_{published.kind}",
            event_name=published.event.name if published.event else None,
            problem=published.problem,
        )
        return published

    def agents(self) -> list[str]:
        return sorted(_text(n) for n in self.client.smembers(self._agents_key()))

    def topics(self) -> list[str]:
        start = len(self._subscribers_key(""))
        return sorted(_text(k)[start:] for k in self.client.scan_iter(match=self._subscribers_key("*"), count=1000))

    # ------------------------------------------------------------------ consuming

    def read(
        self,
        agent: str,
        consumer: str,
        streams: list[str],
        *,
        pending: bool = False,
        count: int = 16,
        block_ms: int | None = None,
    ) -> list[Message]:
        """New entries ('>'), or with `pending` the consumer's own delivered-but-unacknowledged ones; oldest first."""
        ids = {s: "0" if pending else ">" for s in streams}
        reply = self.client.xreadgroup(agent, consumer, ids, count=count, block=None if pending else block_ms)
        return self._messages(reply)

    def claim(
        self, agent: str, consumer: str, streams: list[str], *, min_idle_ms: int, count: int = 16
    ) -> list[Message]:
        """Take over entries another consumer of this agent was given but left unacknowledged
        longer than `min_idle_ms`."""
        messages: list[Message] = []
        for stream in streams:
            reply = self.client.xautoclaim(stream, agent, consumer, min_idle_ms, start_id="0-0", count=count)
            entries = reply[1] if isinstance(reply, (list, tuple)) and len(reply) > 1 else []
            messages += [self._message(stream, entry_id, fields) for entry_id, fields in entries]
            for gone in reply[2] if isinstance(reply, (list, tuple)) and len(reply) > 2 else []:
                log.warning("event_trimmed_before_claim", stream=stream, entry=_text(gone))
        return sorted(messages, key=lambda m: _entry_key(m.entry_id))

    def _messages(self, reply: Any) -> list[Message]:
        if not reply:
            return []
        items = reply.items() if isinstance(reply, dict) else reply
        messages = []
        for stream, entries in items:
            if (
                isinstance(entries, list)
                and len(entries) == 1
                and isinstance(entries[0], list)
                and entries[0]
                and isinstance(entries[0][0], list)
            ):
                entries = entries[0]  # RESP3 shape
            for entry in entries:
                messages.append(self._message(_text(stream), entry[0], entry[1]))
        return sorted(messages, key=lambda m: _entry_key(m.entry_id))

    def _message(self, stream: object, entry_id: object, fields: Mapping[object, object] | None) -> Message:
        stream, entry_id = _text(stream), _text(entry_id)
        if not fields:  # an entry trimmed from the stream while it was pending
            return Message(
                stream, entry_id, None, "the entry was trimmed from the stream before it was acknowledged", {}
            )
        raw = {_text(k): _text(v) for k, v in fields.items()}
        if "event" not in raw:
            return Message(
                stream, entry_id, None, f"stream entry has no 'event' field (fields: {', '.join(raw) or 'none'})", raw
            )
        try:
            return Message(stream, entry_id, parse_event(raw["event"]), None, raw)
        except EventError as exc:
            return Message(stream, entry_id, None, str(exc), raw)

    def ack(self, agent: str, message: Message) -> None:
        self.client.xack(message.stream, agent, message.entry_id)

    def dead_letter(self, agent: str, message: Message, reason: str) -> None:
        """Keep a refused entry where an operator can see it, with the reason; the entry itself is then acknowledged."""
        body = {
            "agent": agent,
            "stream": message.stream,
            "entry": message.entry_id,
            "reason": reason,
            "raw": json.dumps(message.raw or {})[: 64 * 1024],
        }
        self.client.xadd(self.deadletter_stream, body, maxlen=10_000, approximate=True)

    def pending_count(self, agent: str, stream: str) -> int:
        """How many entries of `stream` the agent's group was given but has not acknowledged."""
        try:
            return int(self.client.xpending(stream, agent)["pending"])
        except self._errors.ResponseError:
            return 0

    def close(self) -> None:
        self.client.close()
