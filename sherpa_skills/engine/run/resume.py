"""Resuming a stored run: the agent rebuilt from its last committed tick, with what the tick a crash cut short had
recorded (its completed actions, the one in flight) and what its hooks saved."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...errors import RunError, StoreError, UsageError
from ...policy.base import Policy
from ..compiler import CompiledMachine
from ..hooks import RunHook
from ..runstore import RunStore
from .dispatch import learner_names, resume_hooks
from .identity import spec_hash
from .journal import StoreJournal

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
        what = "it learns" if set(missing) & learner_names() else f"it keeps state for hook(s) {', '.join(missing)}"
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
        journal = agent.journal
        assert isinstance(journal, StoreJournal)  # built with a store
        journal.load()
        from ..run_record import keep_machine

        # Resumed under another machine (--allow-changed): the steps from here on are drawn with it.
        keep_machine(agent, row.tick + 1, spec_hash(machine))
        if journal.interrupted:
            names = ", ".join(f"'{i.action}' (tick {i.tick})" for i in journal.interrupted)
            if not rerun_interrupted:
                raise RunError(
                    f"run {row.run_id} was killed while {names} ran; its result was never recorded. "
                    "Resume with rerun allowed to run it again, or inspect the side effects first"
                )
            agent._log.warning("rerunning_interrupted_actions", actions=names)
        resume_hooks(agent, row.hooks)
    except BaseException:
        store.claims.release(row.run_id)
        raise
    return agent
