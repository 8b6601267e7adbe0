"""The agent: one loop, `run()` repeats `tick()` — fast-forward or ask the policy, act, record, commit.

A tick is written once, as a generator that yields what needs I/O (a policy decision, an action call);
`run` and `arun` only pump it, so the sync and async faces cannot drift apart.
"""

from __future__ import annotations

import difflib
import time
import uuid
from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from time import perf_counter
from typing import Any

import structlog

from ..errors import (
    ActionError,
    ClaimLost,
    NoTransitionError,
    PolicyError,
    RefusedError,
    RunError,
    SherpaError,
    UsageError,
)
from ..logs import ensure_configured
from ..policy.base import Decision, DecisionContext, NoPolicy, Policy
from ..redact import redact_known
from .belief import _FROZEN, Belief, BeliefView, LogEntry, freeze, log_entry, trajectory_entry
from .compiler import BoundAction, CompiledMachine, Edge, check_arguments
from .events import Event, parse_event
from .hooks import RunHook
from .inputs import check_inputs
from .registry import ActionContext, ActionResult, Registry, default_registry, observe_features
from .run.accounting import COUNTERS, count_decision, log_action, log_failed_decision
from .run.arguments import resolve_arguments
from .run.dispatch import advised, check_hook_names, saved_by_hooks, start_hooks, stop_hooks
from .run.drive import Act, adrive, drive
from .run.identity import agent_identity, spec_hash
from .run.inbox import accept_event, consume_again
from .run.journal import resume_agent
from .run.result import RunResult as RunResult  # hooks, learning and the package's map import it from here
from .runstore import InFlight, InterruptedAction, RunStore, TickRecord

log = structlog.get_logger("sherpa_skills.engine.agent")

Observer = Callable[[str, dict[str, Any]], None]


class Agent:
    """One machine, one policy, one belief; optionally durable through a RunStore."""

    def __init__(
        self,
        machine: CompiledMachine,
        policy: Policy | None = None,
        belief: Belief | None = None,
        *,
        store: RunStore | None = None,
        run_id: str | None = None,
        model: str | None = None,
        base_dir: str | Path | None = None,
        workflow_path: str | None = None,
        max_steps: int | None = None,
        registry: Registry | None = None,
        home: str | Path | None = None,
        name: str | None = None,
        hooks: Sequence[RunHook] = (),
    ):
        ensure_configured()
        self.machine = machine
        self._policy: Policy = policy or NoPolicy()
        # Who the drivers ask: the policy with its hooks' advisors in place, composed once the run has started.
        self._decider: Policy | None = None
        self.hooks = tuple(hooks)
        check_hook_names(self.hooks)
        # The state each named hook last saved with the run: a commit writes it again only when a hook returns another.
        self._hook_state: dict[str, Any] = {}
        self.belief = belief or Belief()
        self.store = store
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.model = model or machine.spec.llm.model
        self.base_dir = Path(base_dir) if base_dir else Path.cwd()
        self.workflow_path = workflow_path
        self.max_steps = max_steps or machine.spec.max_steps
        self.registry = registry or default_registry
        #: Who this agent is to shared memory and domains: the configured name (a team member's, `run --agent`), else
        #: the workflow bound to its file. Never the spec's `name:`, which any file can claim.
        self.name = agent_identity(machine.name, workflow_path, self.run_id, name)
        self.home = Path(home) if home else (store.path.parent if store is not None else None)
        self.counters: dict[str, Any] = dict.fromkeys(COUNTERS, 0)
        self.counters["cost"] = 0.0
        self.outbox: list[dict[str, Any]] = []
        self.observers: list[Observer] = []
        self._leaf = machine.initial_leaf
        self._tick = 0
        self._started = False
        self._view = BeliefView(self.belief)
        self._record = TickRecord()
        self._interrupted: list[InterruptedAction] = []
        # On resume, the tick a crash cut short: its transition is taken again and its completed actions are not re-run.
        self._in_flight: InFlight | None = None
        self._decision_record: dict[str, Any] | None = None
        self._clear_intents = False
        self._inputs: dict[str, Any] = {}
        # Set by a bus runner: who this agent's events come from, and the task (correlation id) they belong to.
        self.sender: str | None = None
        self.correlation_id: str | None = None
        self._event_report: dict[str, Any] | None = None
        self._consumed: set[str] = set()
        self._secrets: set[str] = set()  # values actions declared secret (ActionContext.secrets): never recorded
        self._known: frozenset[str] = frozenset()
        # A lazy logger: the CLI configures the per-run JSON log after the agent exists, and must still get its events.
        self._log = structlog.get_logger("sherpa_skills.engine.agent", run_id=self.run_id, agent=machine.name)

    # ------------------------------------------------------------------ state

    @property
    def policy(self) -> Policy:
        return self._policy

    @policy.setter
    def policy(self, policy: Policy) -> None:
        self._policy, self._decider = policy, None

    @property
    def decider(self) -> Policy:
        """The policy with its hooks' advisors (a replay) after its rules and before its LLM."""
        if self._decider is None:
            self._decider = advised(self._policy, self.hooks)
        return self._decider

    @property
    def state(self) -> str:
        return self.machine.leaves[self._leaf]

    @property
    def view(self) -> BeliefView:
        return self._view

    def is_final(self) -> bool:
        return self.machine.final[self._leaf]

    def is_waiting(self) -> bool:
        return self.machine.waiting[self._leaf]

    def available_transitions(self) -> list[Edge]:
        """Exactly the transitions whose source covers the current state and whose guards pass."""
        return self.machine.available(self._leaf, self._view)

    def observe(self, observer: Observer) -> None:
        """Progress callbacks: ('transition'|'action'|'decision'|'status', payload)."""
        self.observers.append(observer)

    def _notify(self, kind: str, **payload: Any) -> None:
        for observer in self.observers:
            observer(kind, payload)

    # ------------------------------------------------------------------ the tick, written once

    def _start_flow(self, inputs: dict[str, Any]) -> Generator[Any, Any, None]:
        # A declared input that was not given is still a name templates can use: None,
        # unless the workflow says otherwise.
        unset = dict.fromkeys(n for n, d in self.machine.spec.inputs.items() if d.default is None)
        values = {**unset, **self.machine.spec.context, **self._input_defaults(), **inputs}
        self._write_context(values)
        self._trajectory(None, None, "start")
        yield from self._act_all(self.machine.initial_actions, {})

    def _tick_flow(
        self, trigger: str | None, args: dict[str, Any] | None, decided_by: str
    ) -> Generator[Any, Any, None]:
        machine, leaf = self.machine, self._leaf
        options = machine.available(leaf, self._view)
        decision: Decision | None = None
        recorded = (
            self._in_flight.decision if self._in_flight is not None and self._in_flight.tick == self._tick + 1 else None
        )
        if recorded is not None:
            # Finish the tick a crash cut short the way it started, whatever the policy would say now.
            edge = next((e for e in options if e.trigger == recorded["trigger"]), None)
            if edge is None:
                raise RunError(
                    f"run {self.run_id} was killed during transition '{recorded['trigger']}' from "
                    f"state '{self.state}', "
                    f"which is no longer available; available: {', '.join(e.trigger for e in options) or 'none'}"
                )
            if recorded.get("event") is not None:
                consume_again(self, recorded["event"])
            if recorded["decided_by"] == "fast_forward":
                self.counters["fast_forwards"] += 1
            else:
                decision = Decision(edge.trigger, dict(recorded["args"]), decided_by=recorded["decided_by"])
        elif trigger is not None:
            edge = next((e for e in options if e.trigger == trigger), None)
            if edge is None:
                raise UsageError(
                    f"trigger '{trigger}' is not available in state '{self.state}'; available: "
                    f"{', '.join(e.trigger for e in options) or 'none'}"
                )
            decision = Decision(trigger, dict(args or {}), decided_by=decided_by)
        elif not options:
            raise NoTransitionError(
                f"no transition is available in state '{self.state}' (its guards all fail) "
                "and it is neither final nor waiting"
            )
        elif len(options) == 1 and not options[0].needs_args:
            edge = options[0]
            self.counters["fast_forwards"] += 1
        else:
            ctx = DecisionContext(
                machine.name, self.state, machine.describe(leaf), options, self._view, self.base_dir, self.model
            )
            try:
                decision = yield ctx
            except PolicyError as exc:
                log_failed_decision(self, exc)
                raise
            if decision is None:
                raise PolicyError(
                    f"no policy decided in state '{self.state}'; available: {', '.join(e.trigger for e in options)}"
                )
            edge = next((e for e in options if e.trigger == decision.trigger), None)
            if edge is None:
                raise PolicyError(
                    f"policy chose '{decision.trigger}', which is not available in state '{self.state}'; "
                    f"available: {', '.join(e.trigger for e in options)}"
                )
        targs: dict[str, Any] = {}
        if decision is not None:
            count_decision(self, decision)
            try:
                targs = check_arguments(edge, decision.args)
            except ValueError as exc:
                # Whoever chose (a rule, a user's --arg, a custom policy) sent what the transition does not declare.
                kind = UsageError if decision.decided_by == "user" else PolicyError
                raise kind(f"state '{self.state}': {exc}") from None
            if self.observers:
                self._notify(
                    "decision",
                    state=self.state,
                    trigger=edge.trigger,
                    decided_by=decision.decided_by,
                    reason=decision.reason,
                )
        self._tick += 1
        source = self.state
        self._decision_record = {
            "trigger": edge.trigger,
            "args": targs,
            "decided_by": decision.decided_by if decision else "fast_forward",
        }
        # The event this tick handles, kept with the intents: a crash mid-tick must still record it as consumed.
        event = recorded.get("event") if recorded is not None else None
        if decided_by == "event" and recorded is None:
            event = next((e for d, _, e in reversed(self._record.events) if d == "in"), None)
        if event is not None:
            self._decision_record["event"] = event
        if self.observers:
            dest = machine.leaves[edge.dest_leaf] if edge.dest_leaf is not None else source
            self._notify(
                "transition",
                state=dest,
                trigger=edge.trigger,
                source=source,
                decided_by=decision.decided_by if decision else "fast_forward",
                tick=self._tick,
            )
        yield from self._act_all(edge.actions, targs)
        self._decision_record = None
        if edge.dest_leaf is not None:
            self._leaf = edge.dest_leaf
        self._trajectory(edge.trigger, source, decision.decided_by if decision else "fast_forward")
        self.counters["steps"] += 1

    def _act_all(self, actions: tuple[BoundAction, ...], targs: dict[str, Any]) -> Generator[Any, Any, None]:
        done = self._in_flight.results if self._in_flight is not None and self._in_flight.tick == self._tick else {}
        # Started before a crash, result never recorded: running it now may repeat what it already did (at-least-once).
        cut_off = {(i.seq, i.action) for i in self._interrupted if i.tick == self._tick}
        for seq, bound in enumerate(actions):
            inputs, args = resolve_arguments(bound, targs, self.belief.context, self.state, self.run_id, self.counters)
            recorded = done.get(seq) if bound.definition.side_effects else None
            if recorded is not None:
                self._recover_completed(bound, inputs, recorded)
                continue
            actx = ActionContext(
                view=self._view,
                state=self.state,
                tick=self._tick,
                run_id=self.run_id,
                workdir=self.base_dir,
                model=self.model,
                emit=self._emit,
                registry=self.registry,
                home=self.home,
                agent=self.name,
                secrets=self._secrets,
                llm=self.machine.spec.llm,
            )
            if bound.definition.check is not None:
                self._record_check(bound)
            durable = bound.definition.side_effects and self.store is not None
            repeated = durable and (seq, bound.name) in cut_off
            if durable:
                self.store.mark_started(self.run_id, self._tick, seq, bound.name, self._decision_record)  # type: ignore[union-attr]
                self._clear_intents = True
                emitted = len(self._record.events)
            if repeated:
                self._log.warning("rerunning_interrupted_action", action=bound.name, tick=self._tick)
            started = time.time()
            t0 = perf_counter()
            try:
                result = yield Act(bound, args, actx)
            except SherpaError as exc:
                # A model call that gave up still sent its requests (retries included): they count.
                self.counters["llm_calls"] += getattr(exc, "requests", 0)
                log_action(self, bound, inputs, None, "error", started, t0, str(exc), repeated=repeated)
                raise exc if isinstance(exc, RunError) else ActionError(bound.name, str(exc)) from exc
            except Exception as exc:
                log_action(
                    self, bound, inputs, None, "error", started, t0, f"{type(exc).__name__}: {exc}", repeated=repeated
                )
                raise ActionError(bound.name, f"{type(exc).__name__}: {exc}") from exc
            if not isinstance(result, ActionResult):
                result = ActionResult(outputs=result)
            if durable:
                # Recorded now, not with the tick: a crash before the tick commits must not run this action again.
                self.store.mark_done(  # type: ignore[union-attr]  # durable: there is a store
                    self.run_id,
                    self._tick,
                    seq,
                    self._scrub(
                        {
                            "outputs": result.outputs,
                            "context": result.context,
                            "status": result.status,
                            "tokens": result.tokens,
                            "cost": result.cost,
                            "llm_calls": result.llm_calls,
                            "started": started,
                            "events": [e for d, _, e in self._record.events[emitted:] if d == "out"],
                        }
                    ),
                )
            log_action(self, bound, inputs, result.outputs, result.status, started, t0, None, result, repeated=repeated)
            if result.context:
                self._write_context(result.context)
            if bound.save_as:
                self._write_context({bound.save_as: result.outputs})

    def _record_check(self, bound: BoundAction) -> None:
        """The features the action's check observes, logged as `check:NAME` before it acts: a captured procedure keeps
        them, and its replay compares them with the world's. A check that raises is logged, never fails the run."""
        try:
            features, status, error = observe_features(bound.definition, self._view), "ok", None
        except Exception as exc:  # a user's function: whatever it raises is reported, not propagated
            features, status, error = None, "error", f"{type(exc).__name__}: {exc}"
            self._log.warning("action_check_failed", action=bound.name, error=error)
        self._append_log(
            log_entry(
                tick=self._tick,
                action=f"check:{bound.name}",
                inputs={},
                outputs=self._recorded(features),
                status=status,
                started=time.time(),
                duration_ms=0.0,
                tokens=0,
                cost=0.0,
                error=self._scrub(error),
            )
        )

    def _recover_completed(self, bound: BoundAction, inputs: dict[str, Any], recorded: dict[str, Any]) -> None:
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
            self._record.events.append(("out", "emitted", event))
            self.outbox.append(event)
        log_action(
            self, bound, inputs, result.outputs, result.status, recorded["started"], perf_counter(), None, result
        )
        if result.context:
            self._write_context(result.context)
        if bound.save_as:
            self._write_context({bound.save_as: result.outputs})
        self._log.info("completed_action_not_rerun", action=bound.name, tick=self._tick)

    def _append_log(self, entry: LogEntry) -> None:
        self.belief.log.append(entry)
        self._record.log.append(entry)

    def _scrub(self, value: Any) -> Any:
        """`value` without the values actions declared secret (the environment they passed on)."""
        if not self._secrets:
            return value
        if len(self._known) != len(self._secrets):
            self._known = frozenset(self._secrets)
        return redact_known(value, self._known)

    def _recorded(self, value: Any) -> Any:
        """What goes into the belief: secrets replaced, and a read-only copy no reader can change,
        nor the action that made it."""
        if self._secrets:
            value = self._scrub(value)
        return (
            value if type(value) in _FROZEN else freeze(value)
        )  # scalars and frozen values: no call (several per step)

    def _write_context(self, values: dict[str, Any]) -> None:
        values = {k: self._recorded(v) for k, v in values.items()}
        self.belief.context.update(values)
        self._record.context.extend(values.items())

    def _trajectory(self, trigger: str | None, source: str | None, decided_by: str) -> None:
        entry = trajectory_entry(
            tick=self._tick, state=self.state, trigger=trigger, source=source, decided_by=decided_by, at=time.time()
        )
        self.belief.trajectory.append(entry)
        self._record.trajectory.append(entry)
        if trigger is None and self.observers:
            self._notify(
                "transition", state=self.state, trigger=None, source=None, decided_by=decided_by, tick=self._tick
            )

    def _emit(self, event: dict[str, Any]) -> None:
        if self.sender is not None:
            event["sender"] = self.sender
        if event.get("correlation_id") is None and self.correlation_id is not None:
            event["correlation_id"] = self.correlation_id
        same = sum(1 for d, _, e in self._record.events if d == "out" and e["id"].split("#")[0] == event["id"])
        if same:  # the id is stable per run and tick; a second event of one name in a tick needs its own
            event["id"] = f"{event['id']}#{same + 1}"
        self._record.events.append(("out", "emitted", event))
        self.outbox.append(event)
        if self.observers:
            self._notify("event", **event)

    # ------------------------------------------------------------------ committing

    def _status(self) -> str:
        if self.machine.final[self._leaf]:
            return "final"
        if self.machine.waiting[self._leaf]:
            return "waiting"
        return "running"

    def _commit(self, status: str, error: str | None = None) -> None:
        record, self._record = self._record, TickRecord()
        self._in_flight = None
        if self.store is None:
            return
        self.store.commit_tick(
            self.run_id,
            record,
            status=status,
            state=self.state,
            tick=self._tick,
            counters=self.counters,
            error=error,
            clear_intents=self._clear_intents,
            hooks=saved_by_hooks(self.hooks, self._hook_state) if self.hooks else None,
        )
        self._clear_intents = False

    def _result(self, status: str, error: str | None, t0: float, ended: bool = True) -> RunResult:
        interrupted = [{"tick": i.tick, "action": i.action, "started": i.started} for i in self._interrupted]
        try:
            available = [e.trigger for e in self.available_transitions()] if status in ("waiting", "error") else []
        except SherpaError:  # the guards themselves may be what failed the run
            available = []
        result = RunResult(
            self.run_id,
            status,
            self.state,
            dict(self.counters),
            error,
            dict(self.belief.context),
            available,
            interrupted,
            (perf_counter() - t0) * 1000,
            self.machine.describe(self._leaf) if status == "waiting" else "",
            self._event_report,
        )
        if ended:  # a refused resume did not stop the run: its hooks do not hear of it
            stop_hooks(self, result, self._log)
        if self.observers:
            self._notify("status", **{k: v for k, v in result.to_dict().items() if k != "context"})
        self._log.info("run_stopped", status=status, state=self.state, steps=self.counters["steps"], error=error)
        return result

    # ------------------------------------------------------------------ sync driver

    def run(
        self,
        inputs: dict[str, Any] | None = None,
        *,
        trigger: str | None = None,
        args: dict[str, Any] | None = None,
        event: Event | None = None,
    ) -> RunResult:
        """Run until final, waiting or error; on a started run, `inputs` are the outside input it waited for.

        With `event` (see `handle`), a new run is started and brought to rest first; then the event fires its trigger.
        """
        t0 = perf_counter()
        held = self._hold_run()
        try:
            for flow in self._run_flow(inputs, trigger, args, event):
                drive(self, flow)
            return self._result(self._status(), None, t0)
        except SherpaError as exc:
            return self._fail(exc, t0)
        except KeyboardInterrupt:
            self._interrupted_by_signal()
            raise
        finally:
            if held:
                self._let_go_of_run()

    def handle(self, event: Event | dict[str, Any]) -> RunResult:
        """Deliver one event: its name fires the matching available transition with the payload as arguments.

        A duplicate, unavailable or ill-fitting event leaves the machine where it is and says so in `result.event`;
        a malformed one raises EventError before the run is touched.
        """
        return self.run(event=parse_event(event))

    # ------------------------------------------------------------------ async driver

    async def arun(
        self,
        inputs: dict[str, Any] | None = None,
        *,
        trigger: str | None = None,
        args: dict[str, Any] | None = None,
        event: Event | None = None,
    ) -> RunResult:
        """The async twin of `run`: the same run flow and tick flows, with awaited policies and actions."""
        t0 = perf_counter()
        held = self._hold_run()
        try:
            for flow in self._run_flow(inputs, trigger, args, event):
                await adrive(self, flow)
            return self._result(self._status(), None, t0)
        except SherpaError as exc:
            return self._fail(exc, t0)
        except KeyboardInterrupt:
            self._interrupted_by_signal()
            raise
        finally:
            if held:
                self._let_go_of_run()

    async def ahandle(self, event: Event | dict[str, Any]) -> RunResult:
        """The async twin of `handle`."""
        return await self.arun(event=parse_event(event))

    # ------------------------------------------------------------------ shared pieces of the drivers

    def _run_flow(
        self, inputs: dict[str, Any] | None, trigger: str | None, args: dict[str, Any] | None, event: Event | None
    ) -> Generator[Generator[Any, Any, None], None, None]:
        """What one call to run/arun does, written once: it yields tick flows for the caller's driver to pump."""
        self._event_report = None
        resumed = False
        if event is None or not self.belief.trajectory:
            start = self._prepare_start(inputs, event)
            if start is not None:
                yield self._start_flow(start)
                self._commit(self._status())
            else:
                self._check_resumable()
                yield from self._finish_in_flight()
                if trigger is not None and event is None:
                    self.check_trigger(trigger, args, inputs)  # before the inputs are stored: a refusal records nothing
                self._apply_input(inputs)
                resumed = True
        else:
            yield from self._finish_in_flight()
        if event is not None:
            yield from self._settle_flows()
            targs = accept_event(self, event)
            if targs is not None:
                yield self._tick_flow(event.name, targs, "event")
                self._commit(self._status())
        elif trigger is not None:
            yield self._tick_flow(trigger, args, "user")
            self._commit(self._status())
        elif resumed and self.is_waiting():
            step = self._waiting_step()
            if step is None:
                self._commit("waiting")
                return
            yield self._tick_flow(step.trigger, {}, "user")
            self._commit(self._status())
        yield from self._settle_flows()

    def _finish_in_flight(self) -> Generator[Generator[Any, Any, None], None, None]:
        """First, the tick a crash cut short after some of its actions completed (see `resume`)."""
        if self._in_flight is not None and self._in_flight.decision is not None and not self.is_final():
            yield self._tick_flow(None, None, "policy")
            self._commit(self._status())

    def _settle_flows(self) -> Generator[Generator[Any, Any, None], None, None]:
        """Tick until the run rests (final or waiting)."""
        while self._status() == "running":
            if self.counters["steps"] >= self.max_steps:
                raise RunError(
                    f"step limit reached ({self.max_steps} steps) in state '{self.state}'; "
                    "raise max_steps or add a way to a final state"
                )
            yield self._tick_flow(None, None, "policy")
            self._commit(self._status())

    def _input_defaults(self) -> dict[str, Any]:
        return {n: d.default for n, d in self.machine.spec.inputs.items() if d.default is not None}

    def _prepare_start(self, inputs: dict[str, Any] | None, event: Event | None = None) -> dict[str, Any] | None:
        """The inputs to start with, when the run has not entered its initial state yet (new,
        or killed while entering it).

        The run row is created before the initial state's actions run, so a crash there still leaves a resumable run.
        """
        if self.belief.trajectory:
            return None
        start = check_inputs(self.machine.spec, {**self._inputs, **(inputs or {})}, starting=True, allow_unknown=True)
        if not self._started:
            start = start_hooks(self, start, event)
            self._decider = None  # a hook may advise from now on
        if not self._started and self.store is not None:
            from .run_record import machine_record

            self._inputs = start
            self.store.create_run(
                self.run_id,
                self.machine.name,
                self.workflow_path,
                spec_hash(self.machine),
                start,
                self.state,
                self.counters,
                TickRecord(),
                hooks=saved_by_hooks(self.hooks, self._hook_state),
                # What the run executes, kept with it: the view draws this, not the file as it is later.
                machine=lambda: machine_record(self.machine, self.workflow_path, self.model),
            )
            self._started = True
        self._log.info("run_started", state=self.state, workflow=self.machine.name)
        return start

    def _apply_input(self, inputs: dict[str, Any] | None) -> None:
        if inputs and not self.is_final():  # final already: the cut-short tick it just finished ended the run
            self._write_context(check_inputs(self.machine.spec, inputs, starting=False, allow_unknown=True))
            self._commit("running")

    def _waiting_step(self) -> Edge | None:
        """In a waiting state only outside input moves on: a single guard-enabled transition, else stay."""
        options = self.available_transitions()
        if len(options) == 1 and not options[0].needs_args:
            return options[0]
        return None

    def check_trigger(
        self, trigger: str, args: dict[str, Any] | None = None, inputs: dict[str, Any] | None = None
    ) -> None:
        """RefusedError unless a user's `trigger` (with `args`) can fire now, its guards judged with `inputs` applied.

        Asked before anything is stored, so a typo (`--trigger aprove`) leaves the run exactly as it was. A run with a
        cut-short tick to finish first is judged where that tick leaves it, when it runs.
        """
        if self.is_final() or (self._in_flight is not None and self._in_flight.decision is not None):
            return
        view = self._view
        if inputs:
            given = check_inputs(self.machine.spec, inputs, starting=False, allow_unknown=True)
            view = BeliefView(
                Belief.model_construct(
                    trajectory=self.belief.trajectory, log=self.belief.log, context={**self.belief.context, **given}
                )
            )
        options = self.machine.available(self._leaf, view)
        edge = next((e for e in options if e.trigger == trigger), None)
        if edge is None:
            names = [e.trigger for e in options]
            close = difflib.get_close_matches(trigger, names, n=1)
            raise RefusedError(
                f"trigger '{trigger}' is not available in state '{self.state}'; available: {', '.join(names) or 'none'}"
                + (f"; did you mean '{close[0]}'?" if close else "")
            )
        try:
            check_arguments(edge, dict(args or {}))
        except ValueError as exc:
            raise RefusedError(f"state '{self.state}': {exc}") from None

    def _hold_run(self) -> bool:
        """A stored run is continued by one process at a time: claimed before anything is written (a refusal raises,
        recording nothing), let go when this call comes to rest. A new run's id is known to no one else yet."""
        if self.store is None or not self._started:
            return False
        self.store.claims.claim(self.run_id)
        return True

    def _let_go_of_run(self) -> None:
        try:
            self.store.claims.release(self.run_id)  # type: ignore[union-attr]  # held: there is a store
        except Exception as exc:  # a dropped connection let go with it
            self._log.warning("run_claim_not_released", error=str(exc))

    def _check_resumable(self) -> None:
        if self.is_final():
            raise UsageError(f"run {self.run_id} already finished in state '{self.state}'")

    def _fail(self, exc: SherpaError, t0: float) -> RunResult:
        message = self._scrub(str(exc))
        for attr in ("llm_calls", "tokens", "cost"):
            extra = getattr(exc, attr, None)
            if extra:
                self.counters[attr] += extra
        self._log.error("run_failed", state=self.state, error=message, kind=type(exc).__name__)
        # A refused resume changes nothing stored: a finished run stays finished, a waiting one waits as it was.
        # A run another process claimed meanwhile is that process's to record (see run_claims).
        refused = isinstance(exc, (RefusedError, ClaimLost)) or (self.is_final() and isinstance(exc, UsageError))
        try:
            if not refused:
                self._commit("error", message)
        except SherpaError as store_exc:
            message = f"{message}; and the store refused the record: {store_exc}"
        return self._result("error", message, t0, ended=not refused)

    def _interrupted_by_signal(self) -> None:
        """Ctrl-C or SIGTERM mid-run: the tick in progress is left as a crash leaves it (its intents say what was in
        flight), and the run is marked `interrupted`, so it is not mistaken for one still running."""
        self._log.warning("run_interrupted", state=self.state, tick=self._tick)
        if self.store is not None:
            try:
                self.store.mark_interrupted(self.run_id)
            except Exception as exc:  # the signal is what the caller must hear about; the run resumes as a crashed one
                self._log.error("run_interrupted_not_recorded", error=str(exc))

    # ------------------------------------------------------------------ resuming

    @classmethod
    def resume(
        cls,
        store: RunStore,
        run_id: str,
        machine: CompiledMachine,
        policy: Policy | None = None,
        *,
        rerun_interrupted: bool = True,
        hooks: Sequence[RunHook] = (),
        **kwargs: Any,
    ) -> Agent:
        """Rebuild an agent from its last committed tick. Actions of the cut-short tick that completed are not run again
        (their recorded results stand in); the one in flight runs again (at-least-once), unless `rerun_interrupted`
        is False, in which case resuming stops with an error.

        Each hook gets back what it saved with the run. A run that kept a hook's state (a learning run) is refused
        unless that hook is given again: `workflow.resume(store, run_id)` gives the workflow's hooks."""
        return resume_agent(
            cls, store, run_id, machine, policy, rerun_interrupted=rerun_interrupted, hooks=hooks, **kwargs
        )
