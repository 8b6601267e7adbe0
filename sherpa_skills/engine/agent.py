"""The agent: one loop, `run()` repeats `tick()` — fast-forward or ask the policy, act, record, commit.

A tick is written once, as a generator that yields what needs I/O (a policy decision, an action call);
`run` and `arun` only pump it, so the sync and async faces cannot drift apart.
"""

from __future__ import annotations

import difflib
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from time import perf_counter
from typing import Any

import structlog

from ..errors import (
    RefusedError,
    SherpaError,
)
from ..logs import ensure_configured
from ..policy.base import NoPolicy, Policy
from ..redact import redact_known
from .belief import _FROZEN, Belief, BeliefView, LogEntry, freeze, trajectory_entry
from .compiler import CompiledMachine, Edge, check_arguments
from .events import Event, parse_event
from .hooks import RunHook
from .inputs import check_inputs
from .registry import Registry, default_registry
from .run.accounting import COUNTERS
from .run.dispatch import advised, check_hook_names, tell, watchers
from .run.drive import adrive, drive
from .run.flows import run_flow
from .run.identity import agent_identity
from .run.journal import Journal, MemoryJournal, StoreJournal
from .run.result import RunResult as RunResult  # hooks and the package's map import it from here
from .run.result import fail, run_result
from .run.resume import resume_agent
from .run.view import RunView
from .runstore import RunStore, TickRecord

log = structlog.get_logger("sherpa_skills.engine.agent")


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
        #: The hooks that hear of each step (progress, tracing, a relay): the tick asks only whether there are any.
        self.watchers = watchers(self.hooks)
        # The state each named hook last saved with the run: a commit writes it again only when a hook returns another.
        self._hook_state: dict[str, Any] = {}
        self.belief = belief or Belief()
        self.store = store
        self.run_id = run_id or uuid.uuid4().hex[:12]
        # What the run records beside its belief: in its store when it has one, else only in this process.
        self.journal: Journal = StoreJournal(store, self.run_id) if store is not None else MemoryJournal()
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
        self._leaf = machine.initial_leaf
        self._tick = 0
        self._started = False
        self._view = BeliefView(self.belief)
        #: The run as its hooks see it: read-only.
        self.run_view = RunView(self)
        self._record = TickRecord()
        # On resume, the tick a crash cut short: its transition is taken again and its completed actions are not re-run.
        self._decision_record: dict[str, Any] | None = None
        self._inputs: dict[str, Any] = {}
        # Set by a bus runner: who this agent's events come from, and the task (correlation id) they belong to.
        self.sender: str | None = None
        self.correlation_id: str | None = None
        self._event_report: dict[str, Any] | None = None
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

    def add_hook(self, hook: RunHook) -> None:
        """One more hook, for a run not started by this agent yet (a CLI's progress printer, a tracer, a relay)."""
        self.hooks = (*self.hooks, hook)
        check_hook_names(self.hooks)
        self.watchers, self._decider = watchers(self.hooks), None

    # ------------------------------------------------------------------ the tick, written once

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
        if trigger is None and self.watchers:
            tell(
                self,
                "on_transition",
                state=self.state,
                trigger=None,
                source=None,
                decided_by=decided_by,
                tick=self._tick,
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
        if self.watchers:
            tell(self, "on_event", event=event)

    # ------------------------------------------------------------------ committing

    def _status(self) -> str:
        if self.machine.final[self._leaf]:
            return "final"
        if self.machine.waiting[self._leaf]:
            return "waiting"
        return "running"

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
        held = self.journal.hold(self._started)
        try:
            for flow in run_flow(self, inputs, trigger, args, event):
                drive(self, flow)
            return run_result(self, self._status(), None, t0)
        except SherpaError as exc:
            return fail(self, exc, t0)
        except KeyboardInterrupt:
            self._log.warning("run_interrupted", state=self.state, tick=self._tick)
            self.journal.interrupted_by_signal(self._log)
            raise
        finally:
            if held:
                self.journal.release(self._log)

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
        held = self.journal.hold(self._started)
        try:
            for flow in run_flow(self, inputs, trigger, args, event):
                await adrive(self, flow)
            return run_result(self, self._status(), None, t0)
        except SherpaError as exc:
            return fail(self, exc, t0)
        except KeyboardInterrupt:
            self._log.warning("run_interrupted", state=self.state, tick=self._tick)
            self.journal.interrupted_by_signal(self._log)
            raise
        finally:
            if held:
                self.journal.release(self._log)

    async def ahandle(self, event: Event | dict[str, Any]) -> RunResult:
        """The async twin of `handle`."""
        return await self.arun(event=parse_event(event))

    def check_trigger(
        self, trigger: str, args: dict[str, Any] | None = None, inputs: dict[str, Any] | None = None
    ) -> None:
        """RefusedError unless a user's `trigger` (with `args`) can fire now, its guards judged with `inputs` applied.

        Asked before anything is stored, so a typo (`--trigger aprove`) leaves the run exactly as it was. A run with a
        cut-short tick to finish first is judged where that tick leaves it, when it runs.
        """
        if self.is_final() or (self.journal.in_flight is not None and self.journal.in_flight.decision is not None):
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

        Each hook gets back what it saved with the run. A run that kept a hook's state (a run that learns) is refused
        unless that hook is given again: `workflow.resume(store, run_id)` gives the workflow's hooks."""
        return resume_agent(
            cls, store, run_id, machine, policy, rerun_interrupted=rerun_interrupted, hooks=hooks, **kwargs
        )
