"""The tick, written once: a generator that yields what needs I/O (a policy decision, an action call) — the start's
actions, one step (fast-forward or decide, act, record), and each action's call or its recovered result."""

from __future__ import annotations

import time
from collections.abc import Generator
from functools import partial
from time import perf_counter
from typing import TYPE_CHECKING, Any

from ...errors import ActionError, NoTransitionError, PolicyError, RunError, SherpaError, UsageError
from ...policy.base import Decision, DecisionContext
from ..belief import log_entry
from ..compiler import BoundAction, check_arguments
from ..registry import ActionContext, ActionResult, observe_features
from .accounting import count_decision, log_action, log_failed_decision
from .arguments import resolve_arguments
from .dispatch import tell
from .drive import Act
from .inbox import consume_again

if TYPE_CHECKING:
    from ..agent import Agent


def start_flow(agent: Agent, inputs: dict[str, Any]) -> Generator[Any, Any, None]:
    # A declared input that was not given is still a name templates can use: None,
    # unless the workflow says otherwise.
    unset = dict.fromkeys(n for n, d in agent.machine.spec.inputs.items() if d.default is None)
    values = {**unset, **agent.machine.spec.context, **input_defaults(agent), **inputs}
    agent._write_context(values)
    agent._trajectory(None, None, "start")
    yield from act_all(agent, agent.machine.initial_actions, {})


def tick_flow(
    agent: Agent, trigger: str | None, args: dict[str, Any] | None, decided_by: str
) -> Generator[Any, Any, None]:
    machine, leaf = agent.machine, agent._leaf
    options = machine.available(leaf, agent._view)
    decision: Decision | None = None
    recorded = (
        in_flight.decision
        if (in_flight := agent.journal.in_flight) is not None and in_flight.tick == agent._tick + 1
        else None
    )
    if recorded is not None:
        # Finish the tick a crash cut short the way it started, whatever the policy would say now.
        edge = next((e for e in options if e.trigger == recorded["trigger"]), None)
        if edge is None:
            raise RunError(
                f"run {agent.run_id} was killed during transition '{recorded['trigger']}' from "
                f"state '{agent.state}', "
                f"which is no longer available; available: {', '.join(e.trigger for e in options) or 'none'}"
            )
        if recorded.get("event") is not None:
            consume_again(agent, recorded["event"])
        if recorded["decided_by"] == "fast_forward":
            agent.counters["fast_forwards"] += 1
        else:
            decision = Decision(edge.trigger, dict(recorded["args"]), decided_by=recorded["decided_by"])
    elif trigger is not None:
        edge = next((e for e in options if e.trigger == trigger), None)
        if edge is None:
            raise UsageError(
                f"trigger '{trigger}' is not available in state '{agent.state}'; available: "
                f"{', '.join(e.trigger for e in options) or 'none'}"
            )
        decision = Decision(trigger, dict(args or {}), decided_by=decided_by)
    elif not options:
        raise NoTransitionError(
            f"no transition is available in state '{agent.state}' (its guards all fail) "
            "and it is neither final nor waiting"
        )
    elif len(options) == 1 and not options[0].needs_args:
        edge = options[0]
        agent.counters["fast_forwards"] += 1
    else:
        ctx = DecisionContext(
            machine.name, agent.state, machine.describe(leaf), options, agent._view, agent.base_dir, agent.model
        )
        try:
            decision = yield ctx
        except PolicyError as exc:
            log_failed_decision(agent, exc)
            raise
        if decision is None:
            raise PolicyError(
                f"no policy decided in state '{agent.state}'; available: {', '.join(e.trigger for e in options)}"
            )
        edge = next((e for e in options if e.trigger == decision.trigger), None)
        if edge is None:
            raise PolicyError(
                f"policy chose '{decision.trigger}', which is not available in state '{agent.state}'; "
                f"available: {', '.join(e.trigger for e in options)}"
            )
    targs: dict[str, Any] = {}
    if decision is not None:
        count_decision(agent, decision)
        try:
            targs = check_arguments(edge, decision.args)
        except ValueError as exc:
            # Whoever chose (a rule, a user's --arg, a custom policy) sent what the transition does not declare.
            kind = UsageError if decision.decided_by == "user" else PolicyError
            raise kind(f"state '{agent.state}': {exc}") from None
        if agent.watchers:
            tell(
                agent,
                "on_decision",
                state=agent.state,
                trigger=edge.trigger,
                decided_by=decision.decided_by,
                reason=decision.reason,
            )
    agent._tick += 1
    source = agent.state
    agent._decision_record = {
        "trigger": edge.trigger,
        "args": targs,
        "decided_by": decision.decided_by if decision else "fast_forward",
    }
    # The event this tick handles, kept with the intents: a crash mid-tick must still record it as consumed.
    event = recorded.get("event") if recorded is not None else None
    if decided_by == "event" and recorded is None:
        event = next((e for d, _, e in reversed(agent._record.events) if d == "in"), None)
    if event is not None:
        agent._decision_record["event"] = event
    if agent.watchers:
        dest = machine.leaves[edge.dest_leaf] if edge.dest_leaf is not None else source
        tell(
            agent,
            "on_transition",
            state=dest,
            trigger=edge.trigger,
            source=source,
            decided_by=decision.decided_by if decision else "fast_forward",
            tick=agent._tick,
        )
    yield from act_all(agent, edge.actions, targs)
    agent._decision_record = None
    if edge.dest_leaf is not None:
        agent._leaf = edge.dest_leaf
    agent._trajectory(edge.trigger, source, decision.decided_by if decision else "fast_forward")
    agent.counters["steps"] += 1


def act_all(agent: Agent, actions: tuple[BoundAction, ...], targs: dict[str, Any]) -> Generator[Any, Any, None]:
    journal = agent.journal
    in_flight = journal.in_flight
    done = in_flight.results if in_flight is not None and in_flight.tick == agent._tick else {}
    for seq, bound in enumerate(actions):
        inputs, args = resolve_arguments(bound, targs, agent.belief.context, agent.state, agent.run_id, agent.counters)
        recorded = done.get(seq) if bound.definition.side_effects else None
        if recorded is not None:
            recover_completed(agent, bound, inputs, recorded)
            continue
        actx = ActionContext(
            view=agent._view,
            state=agent.state,
            tick=agent._tick,
            run_id=agent.run_id,
            workdir=agent.base_dir,
            model=agent.model,
            emit=agent._emit,
            registry=agent.registry,
            home=agent.home,
            agent=agent.name,
            secrets=agent._secrets,
            llm=agent.machine.spec.llm,
        )
        if bound.definition.check is not None:
            record_check(agent, bound)
        journaled = bound.definition.side_effects
        repeated = False
        if journaled:
            # Started before a crash, result never recorded: running it now may repeat what it did (at-least-once).
            repeated = journal.start(agent._tick, seq, bound.name, agent._decision_record)
            emitted = len(agent._record.events)
        if repeated:
            agent._log.warning("rerunning_interrupted_action", action=bound.name, tick=agent._tick)
        started = time.time()
        t0 = perf_counter()
        try:
            result = yield Act(bound, args, actx)
        except SherpaError as exc:
            # A model call that gave up still sent its requests (retries included): they count.
            agent.counters["llm_calls"] += getattr(exc, "requests", 0)
            log_action(agent, bound, inputs, None, "error", started, t0, str(exc), repeated=repeated)
            raise exc if isinstance(exc, RunError) else ActionError(bound.name, str(exc)) from exc
        except Exception as exc:
            log_action(
                agent, bound, inputs, None, "error", started, t0, f"{type(exc).__name__}: {exc}", repeated=repeated
            )
            raise ActionError(bound.name, f"{type(exc).__name__}: {exc}") from exc
        if not isinstance(result, ActionResult):
            result = ActionResult(outputs=result)
        if journaled:
            journal.done(agent._tick, seq, partial(_done_record, agent, result, started, emitted))
        log_action(agent, bound, inputs, result.outputs, result.status, started, t0, None, result, repeated=repeated)
        if result.context:
            agent._write_context(result.context)
        if bound.save_as:
            agent._write_context({bound.save_as: result.outputs})


def record_check(agent: Agent, bound: BoundAction) -> None:
    """The features the action's check observes, logged as `check:NAME` before it acts: a captured procedure keeps
    them, and its replay compares them with the world's. A check that raises is logged, never fails the run."""
    try:
        features, status, error = observe_features(bound.definition, agent._view), "ok", None
    except Exception as exc:  # a user's function: whatever it raises is reported, not propagated
        features, status, error = None, "error", f"{type(exc).__name__}: {exc}"
        agent._log.warning("action_check_failed", action=bound.name, error=error)
    agent._append_log(
        log_entry(
            tick=agent._tick,
            action=f"check:{bound.name}",
            inputs={},
            outputs=agent._recorded(features),
            status=status,
            started=time.time(),
            duration_ms=0.0,
            tokens=0,
            cost=0.0,
            error=agent._scrub(error),
        )
    )


def recover_completed(agent: Agent, bound: BoundAction, inputs: dict[str, Any], recorded: dict[str, Any]) -> None:
    """An action that completed before the crash: its recorded result (and events) stand in for running it again."""
    result = ActionResult(
        outputs=recorded["outputs"],
        context=recorded["context"],
        status=recorded["status"],
        tokens=recorded["tokens"],
        cost=recorded["cost"],
        llm_calls=recorded["llm_calls"],
    )
    for event in recorded["events"]:
        agent._record.events.append(("out", "emitted", event))
        agent.outbox.append(event)
    log_action(agent, bound, inputs, result.outputs, result.status, recorded["started"], perf_counter(), None, result)
    if result.context:
        agent._write_context(result.context)
    if bound.save_as:
        agent._write_context({bound.save_as: result.outputs})
    agent._log.info("completed_action_not_rerun", action=bound.name, tick=agent._tick)


def input_defaults(agent: Agent) -> dict[str, Any]:
    return {n: d.default for n, d in agent.machine.spec.inputs.items() if d.default is not None}


def _done_record(agent: Agent, result: ActionResult, started: float, emitted: int) -> dict[str, Any]:
    """What a side-effecting action's done keeps: its result, secrets scrubbed, and the events it emitted."""
    record: dict[str, Any] = agent._scrub(
        {
            "outputs": result.outputs,
            "context": result.context,
            "status": result.status,
            "tokens": result.tokens,
            "cost": result.cost,
            "llm_calls": result.llm_calls,
            "started": started,
            "events": [e for d, _, e in agent._record.events[emitted:] if d == "out"],
        }
    )
    return record
