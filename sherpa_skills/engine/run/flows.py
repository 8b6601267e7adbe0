"""What one call to `run`/`arun` does, written once: the run started, resumed or handed an event, then ticked until it
rests; it yields tick flows for the caller's driver to pump."""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from ...errors import RunError, UsageError
from ..compiler import Edge
from ..events import Event
from ..inputs import check_inputs
from .dispatch import start_hooks
from .inbox import accept_event
from .journal import commit
from .tick import start_flow, tick_flow

if TYPE_CHECKING:
    from ..agent import Agent


def run_flow(
    agent: Agent, inputs: dict[str, Any] | None, trigger: str | None, args: dict[str, Any] | None, event: Event | None
) -> Generator[Generator[Any, Any, None], None, None]:
    """What one call to run/arun does, written once: it yields tick flows for the caller's driver to pump."""
    agent._event_report = None
    resumed = False
    if event is None or not agent.belief.trajectory:
        start = prepare_start(agent, inputs, event)
        if start is not None:
            yield start_flow(agent, start)
            commit(agent, agent._status())
        else:
            check_resumable(agent)
            yield from finish_in_flight(agent)
            if trigger is not None and event is None:
                agent.check_trigger(trigger, args, inputs)  # before the inputs are stored: a refusal records nothing
            apply_input(agent, inputs)
            resumed = True
    else:
        yield from finish_in_flight(agent)
    if event is not None:
        yield from settle_flows(agent)
        targs = accept_event(agent, event)
        if targs is not None:
            yield tick_flow(agent, event.name, targs, "event")
            commit(agent, agent._status())
    elif trigger is not None:
        yield tick_flow(agent, trigger, args, "user")
        commit(agent, agent._status())
    elif resumed and agent.is_waiting():
        step = waiting_step(agent)
        if step is None:
            commit(agent, "waiting")
            return
        yield tick_flow(agent, step.trigger, {}, "user")
        commit(agent, agent._status())
    yield from settle_flows(agent)


def finish_in_flight(agent: Agent) -> Generator[Generator[Any, Any, None], None, None]:
    """First, the tick a crash cut short after some of its actions completed (see `resume`)."""
    if agent.journal.in_flight is not None and agent.journal.in_flight.decision is not None and not agent.is_final():
        yield tick_flow(agent, None, None, "policy")
        commit(agent, agent._status())


def settle_flows(agent: Agent) -> Generator[Generator[Any, Any, None], None, None]:
    """Tick until the run rests (final or waiting)."""
    while agent._status() == "running":
        if agent.counters["steps"] >= agent.max_steps:
            raise RunError(
                f"step limit reached ({agent.max_steps} steps) in state '{agent.state}'; "
                "raise max_steps or add a way to a final state"
            )
        yield tick_flow(agent, None, None, "policy")
        commit(agent, agent._status())


def prepare_start(agent: Agent, inputs: dict[str, Any] | None, event: Event | None = None) -> dict[str, Any] | None:
    """The inputs to start with, when the run has not entered its initial state yet (new,
    or killed while entering it).

    The run row is created before the initial state's actions run, so a crash there still leaves a resumable run.
    """
    if agent.belief.trajectory:
        return None
    start = check_inputs(agent.machine.spec, {**agent._inputs, **(inputs or {})}, starting=True, allow_unknown=True)
    if not agent._started:
        start = start_hooks(agent, start, event)
        agent._decider = None  # a hook may advise from now on
        agent._inputs = start
        # A durable run is recorded now; one in memory is never `_started` (no one else can hold it).
        agent._started = agent.journal.create(agent, start)
    agent._log.info("run_started", state=agent.state, workflow=agent.machine.name)
    return start


def apply_input(agent: Agent, inputs: dict[str, Any] | None) -> None:
    if inputs and not agent.is_final():  # final already: the cut-short tick it just finished ended the run
        agent._write_context(check_inputs(agent.machine.spec, inputs, starting=False, allow_unknown=True))
        commit(agent, "running")


def waiting_step(agent: Agent) -> Edge | None:
    """In a waiting state only outside input moves on: a single guard-enabled transition, else stay."""
    options = agent.available_transitions()
    if len(options) == 1 and not options[0].needs_args:
        return options[0]
    return None


def check_resumable(agent: Agent) -> None:
    if agent.is_final():
        raise UsageError(f"run {agent.run_id} already finished in state '{agent.state}'")
