"""The run's journal: each tick committed, the run held by one process and let go, a signal's stop recorded, and a
stored run resumed from its last committed tick with what the tick a crash cut short had recorded (its completed
actions, the one in flight) and what its hooks saved."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...errors import RunError, StoreError, UsageError
from ...policy.base import Policy
from ..compiler import CompiledMachine
from ..hooks import RunHook
from ..runstore import RunStore, TickRecord
from .dispatch import saved_by_hooks
from .identity import spec_hash

if TYPE_CHECKING:
    from ..agent import Agent


def resume_agent(
    cls: type[Agent],
    store: RunStore,
    run_id: str,
    machine: CompiledMachine,
    policy: Policy | None = None,
    *,
    rerun_interrupted: bool = True,
    hooks: Sequence[RunHook] = (),
    **kwargs: Any,
) -> Agent:
    """`Agent.resume`, for the class `cls`: see its docstring."""
    row = store.get_run(run_id)
    missing = sorted(set(row.hooks) - {h.name for h in hooks if h.name})
    if missing:
        what = "it learns" if "learning" in missing else f"it keeps state for hook(s) {', '.join(missing)}"
        raise UsageError(
            f"run {row.run_id} cannot be resumed without its hooks ({what}): resume it with "
            "workflow.resume(store, run_id), the workflow loaded by sherpa_skills.load_workflow"
        )
    if row.state not in machine.leaf_index:
        raise StoreError(f"run {row.run_id} is in state '{row.state}', which workflow '{machine.name}' no longer has")
    agent = cls(
        machine,
        policy,
        store.load_belief(row.run_id),
        store=store,
        run_id=row.run_id,
        workflow_path=row.workflow_path,
        hooks=hooks,
        **kwargs,
    )
    store.claims.claim(row.run_id)  # before anything is written for it (keep_machine below)
    try:
        agent._hook_state = dict(row.hooks)
        agent._leaf = machine.leaf_index[row.state]
        agent._tick = row.tick
        agent._started = True
        agent.counters.update(row.counters)
        agent._inputs = dict(row.inputs)
        agent._interrupted = store.interrupted(row.run_id)
        agent._in_flight = store.in_flight(row.run_id)
        agent._clear_intents = agent._in_flight is not None
        from ..run_record import keep_machine

        # Resumed under another machine (--allow-changed): the steps from here on are drawn with it.
        keep_machine(agent, row.tick + 1, spec_hash(machine))
        if agent._interrupted:
            names = ", ".join(f"'{i.action}' (tick {i.tick})" for i in agent._interrupted)
            if not rerun_interrupted:
                raise RunError(
                    f"run {row.run_id} was killed while {names} ran; its result was never recorded. "
                    "Resume with rerun allowed to run it again, or inspect the side effects first"
                )
            agent._log.warning("rerunning_interrupted_actions", actions=names)
            agent._clear_intents = True
        for hook in agent.hooks:
            hook.on_resume(agent, row.hooks.get(hook.name) if hook.name else None)
    except BaseException:
        store.claims.release(row.run_id)
        raise
    return agent


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
