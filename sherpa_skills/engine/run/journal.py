"""The run's journal (DBOS's two calls around a step): what was recorded for a step, an action's start and its done,
each tick's commit, the run held by one process, and where a resumed run picks up. One protocol, two keepers: in
memory (a run without a store: nothing outlives the process) and in a RunStore (a durable run)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..runstore import InFlight, InterruptedAction, RunStore, TickRecord
from .dispatch import saved_by_hooks, spent_by_hooks

if TYPE_CHECKING:
    from structlog.typing import FilteringBoundLogger

    from ..agent import Agent


class Journal(Protocol):
    """What a run records beside its belief, and where it resumes. The tick calls it without asking which it is."""

    #: The tick a crash cut short (its completed actions stand in for running them again); None when there is none.
    in_flight: InFlight | None
    #: Actions started before a crash whose result was never recorded (run again: at-least-once).
    interrupted: list[InterruptedAction]

    def create(self, agent: Agent, start: dict[str, Any]) -> bool:
        """The run recorded before its initial state's actions run; whether it now outlives this process."""
        ...

    def start(self, tick: int, seq: int, action: str, decision: dict[str, Any] | None) -> bool:
        """A side-effecting action about to run; whether it is one a crash cut off (so it runs again)."""
        ...

    def done(self, tick: int, seq: int, record: Callable[[], dict[str, Any]]) -> None:
        """A side-effecting action returned: `record()` is its result, kept so a resume does not run it again."""
        ...

    def commit(self, agent: Agent, record: TickRecord, status: str, error: str | None) -> None:
        """The tick's record, with the run's status, state and counters, in one transaction."""
        ...

    def consumed(self, event_id: str) -> str | None:
        """How an event was consumed by this run before (its outcome), or None."""
        ...

    def consume(self, event_id: str) -> None:
        """An event taken by this run (recorded durably with the tick's record, where there is a store)."""
        ...

    def hold(self, started: bool) -> bool:
        """The run claimed by this process until `release` (a refusal raises); whether there was anything to claim."""
        ...

    def release(self, log: FilteringBoundLogger) -> None: ...

    def interrupted_by_signal(self, log: FilteringBoundLogger) -> None:
        """Ctrl-C or SIGTERM mid-run: the run marked `interrupted` where that is kept."""
        ...


class MemoryJournal:
    """A run without a store: events consumed are remembered for the agent's life; nothing else is kept."""

    def __init__(self) -> None:
        self.in_flight: InFlight | None = None
        self.interrupted: list[InterruptedAction] = []
        self._consumed: set[str] = set()

    def create(self, agent: Agent, start: dict[str, Any]) -> bool:
        return False

    def start(self, tick: int, seq: int, action: str, decision: dict[str, Any] | None) -> bool:
        return False

    def done(self, tick: int, seq: int, record: Callable[[], dict[str, Any]]) -> None:
        return None

    def commit(self, agent: Agent, record: TickRecord, status: str, error: str | None) -> None:
        return None

    def consumed(self, event_id: str) -> str | None:
        return "handled" if event_id in self._consumed else None

    def consume(self, event_id: str) -> None:
        self._consumed.add(event_id)

    def hold(self, started: bool) -> bool:
        return False

    def release(self, log: FilteringBoundLogger) -> None:
        return None

    def interrupted_by_signal(self, log: FilteringBoundLogger) -> None:
        return None


class StoreJournal:
    """A durable run: every call goes to its RunStore, and a resume reads back where the run was cut short."""

    def __init__(self, store: RunStore, run_id: str) -> None:
        self.store, self.run_id = store, run_id
        self.in_flight: InFlight | None = None
        self.interrupted: list[InterruptedAction] = []
        # The intents of a cut-short tick (or of this tick's actions) are cleared with the commit that settles them.
        self.clear_intents = False

    def load(self) -> None:
        """Where the stored run resumes: the tick a crash cut short, and the actions it left unrecorded."""
        self.interrupted = self.store.interrupted(self.run_id)
        self.in_flight = self.store.in_flight(self.run_id)
        self.clear_intents = self.in_flight is not None or bool(self.interrupted)

    def create(self, agent: Agent, start: dict[str, Any]) -> bool:
        from ..run_record import machine_record
        from .identity import spec_hash

        self.store.create_run(
            self.run_id,
            agent.machine.name,
            agent.workflow_path,
            spec_hash(agent.machine),
            start,
            agent.state,
            agent.counters,
            TickRecord(),
            hooks=saved_by_hooks(agent.hooks, agent._hook_state),
            # What the run executes, kept with it: the view draws this, not the file as it is later.
            machine=lambda: machine_record(agent.machine, agent.workflow_path, agent.model),
        )
        return True

    def start(self, tick: int, seq: int, action: str, decision: dict[str, Any] | None) -> bool:
        self.store.mark_started(self.run_id, tick, seq, action, decision)
        self.clear_intents = True
        return any(i.tick == tick and i.seq == seq and i.action == action for i in self.interrupted)

    def done(self, tick: int, seq: int, record: Callable[[], dict[str, Any]]) -> None:
        # Recorded now, not with the tick: a crash before the tick commits must not run this action again.
        self.store.mark_done(self.run_id, tick, seq, record())

    def commit(self, agent: Agent, record: TickRecord, status: str, error: str | None) -> None:
        self.store.commit_tick(
            self.run_id,
            record,
            status=status,
            state=agent.state,
            tick=agent._tick,
            counters=agent.counters,
            error=error,
            clear_intents=self.clear_intents,
            hooks=saved_by_hooks(agent.hooks, agent._hook_state) if agent.hooks else None,
        )
        self.clear_intents = False

    def consumed(self, event_id: str) -> str | None:
        return self.store.consumed(self.run_id, event_id)

    def consume(self, event_id: str) -> None:
        return None  # kept by the store with the tick's record (its events 'in')

    def hold(self, started: bool) -> bool:
        if not started:  # a new run's id is known to no one else yet
            return False
        self.store.claims.claim(self.run_id)
        return True

    def release(self, log: FilteringBoundLogger) -> None:
        try:
            self.store.claims.release(self.run_id)
        except Exception as exc:  # a dropped connection let go with it
            log.warning("run_claim_not_released", error=str(exc))

    def interrupted_by_signal(self, log: FilteringBoundLogger) -> None:
        try:
            self.store.mark_interrupted(self.run_id)
        except Exception as exc:  # the signal is what the caller must hear about; the run resumes as a crashed one
            log.error("run_interrupted_not_recorded", error=str(exc))


def commit(agent: Agent, status: str, error: str | None = None) -> None:
    """The tick's record handed to the journal, and a fresh one begun; a cut-short tick is finished by now."""
    if agent.hooks:
        spent_by_hooks(agent)
    record, agent._record = agent._record, TickRecord()
    journal = agent.journal
    journal.in_flight = None
    journal.commit(agent, record, status, error)
