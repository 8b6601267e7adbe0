"""The run's journal: each tick committed, the run held by one process and let go, a signal's stop recorded."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..runstore import TickRecord
from .dispatch import saved_by_hooks

if TYPE_CHECKING:
    from ..agent import Agent


def commit(agent: Agent, status: str, error: str | None = None) -> None:
    record, agent._record = agent._record, TickRecord()
    agent._in_flight = None
    if agent.store is None:
        return
    agent.store.commit_tick(
        agent.run_id,
        record,
        status=status,
        state=agent.state,
        tick=agent._tick,
        counters=agent.counters,
        error=error,
        clear_intents=agent._clear_intents,
        hooks=saved_by_hooks(agent.hooks, agent._hook_state) if agent.hooks else None,
    )
    agent._clear_intents = False


def hold_run(agent: Agent) -> bool:
    """A stored run is continued by one process at a time: claimed before anything is written (a refusal raises,
    recording nothing), let go when this call comes to rest. A new run's id is known to no one else yet."""
    if agent.store is None or not agent._started:
        return False
    agent.store.claims.claim(agent.run_id)
    return True


def let_go_of_run(agent: Agent) -> None:
    try:
        agent.store.claims.release(agent.run_id)  # type: ignore[union-attr]  # held: there is a store
    except Exception as exc:  # a dropped connection let go with it
        agent._log.warning("run_claim_not_released", error=str(exc))


def interrupted_by_signal(agent: Agent) -> None:
    """Ctrl-C or SIGTERM mid-run: the tick in progress is left as a crash leaves it (its intents say what was in
    flight), and the run is marked `interrupted`, so it is not mistaken for one still running."""
    agent._log.warning("run_interrupted", state=agent.state, tick=agent._tick)
    if agent.store is not None:
        try:
            agent.store.mark_interrupted(agent.run_id)
        except Exception as exc:  # the signal is what the caller must hear about; the run resumes as a crashed one
            agent._log.error("run_interrupted_not_recorded", error=str(exc))
