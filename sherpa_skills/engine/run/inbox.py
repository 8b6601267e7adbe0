"""Events in and out of a run: an incoming event judged (handled, duplicate, unavailable, invalid) and consumed with
the tick that handles it, so a redelivery is skipped."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..compiler import check_arguments
from ..events import Event
from .journal import commit

if TYPE_CHECKING:
    from ..agent import Agent


def consume_again(agent: Agent, body: dict[str, Any]) -> None:
    """The event a cut-short tick was handling:
    consumed with the tick that finishes it, so its redelivery is a duplicate."""
    if agent.journal.consumed(body["id"]) is not None:
        return
    agent.journal.consume(body["id"])
    agent._record.events.append(("in", "handled", body))
    agent._write_context({"event": body})


def accept_event(agent: Agent, event: Event) -> dict[str, Any] | None:
    """The transition arguments for an event that fires now,
    or None for one refused (duplicate, unavailable, invalid).

    Consuming is recorded with the tick that consumes it (or alone, for a refusal),
    so a redelivered event is skipped.
    """
    body = event.body()
    report = agent._event_report = {"id": event.id, "name": event.name, "outcome": "handled", "reason": None}
    seen = agent.journal.consumed(event.id)
    if seen is not None:
        report.update(
            outcome="duplicate",
            reason=f"event {event.id} was already consumed by run {agent.run_id} ({seen}); skipped",
        )
        agent._log.info("event_duplicate", event_id=event.id, event_name=event.name)
        return None
    agent.journal.consume(event.id)
    targs: dict[str, Any] = {}
    if agent.is_final():
        outcome, reason = "unavailable", f"run {agent.run_id} already finished in state '{agent.state}'"
    else:
        options = agent.available_transitions()
        edge = next((e for e in options if e.trigger == event.name), None)
        outcome, reason = "handled", None
        if edge is None:
            outcome = "unavailable"
            reason = (
                f"'{event.name}' is not available in state '{agent.state}'; available: "
                f"{', '.join(e.trigger for e in options) or 'none'}"
            )
        else:
            # The payload is data for the receiver (it stays readable as `event.payload`); only the keys the
            # transition declares become its arguments.
            targs = {k: v for k, v in event.payload.items() if k in edge.arguments}
            try:
                check_arguments(edge, targs)
            except ValueError as exc:
                outcome = "invalid"
                reason = f"payload of '{event.name}' does not fit the transition's arguments: {exc}"
    agent._record.events.append(("in", outcome, body))
    if reason is not None:
        report.update(outcome=outcome, reason=reason)
        agent._log.warning("event_refused", event_id=event.id, event_name=event.name, outcome=outcome, reason=reason)
        commit(agent, agent._status())
        return None
    agent._write_context({"event": body})
    return targs
