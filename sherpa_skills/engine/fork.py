"""Fork a run from step N: a new run whose belief is the original's after that step, resumed like any run.

The original is never written to; the fork records where it came from (`RunStore.forked_from`). A fork runs its
actions for real from that state on, so callers show `plan_fork`'s plan before `start_fork`.
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from .belief import Belief
from .compiler import CompiledMachine
from .runstore import RunStore, TickRecord

if TYPE_CHECKING:
    from .agent import Agent
    from .workflow import Workflow


@dataclass
class ForkPlan:
    """What a fork would start from and run under: shown by `fork --dry-run`, then carried out by `start_fork`."""

    parent_run_id: str
    at: int
    state: str
    workflow: str
    workflow_path: str | None
    machine_then: str | None  # the spec hash step `at` ran under (None: recorded before runs kept their machine)
    machine_now: str
    changed: bool
    final: bool
    waiting: bool
    available: list[str]
    inputs: dict[str, Any] = field(default_factory=dict)
    trigger: str | None = None
    context_keys: list[str] = field(default_factory=list)
    redacted_keys: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _machine_then(store: RunStore, run_id: str, at: int) -> str | None:
    chosen = None
    for from_tick, spec_hash in store.machines(run_id):
        if from_tick <= at or chosen is None:
            chosen = spec_hash
    return chosen


def _has_redacted(value: Any) -> bool:
    if isinstance(value, str):
        return "[REDACTED" in value or "***" in value
    if isinstance(value, dict):
        return any(_has_redacted(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_redacted(v) for v in value)
    return False


def plan_fork(
    store: RunStore,
    run_id: str,
    at: int,
    machine: CompiledMachine,
    *,
    inputs: dict[str, Any] | None = None,
    trigger: str | None = None,
    allow_changed: bool = False,
) -> ForkPlan:
    """Check that run `run_id` can be forked at step `at` under `machine`; UsageError saying why not."""
    from .run.identity import spec_hash

    row = store.get_run(run_id)
    ticks = [s[0] for s in store.steps(row.run_id)]
    if not ticks:
        raise UsageError(f"run {row.run_id} has no steps recorded yet: there is nothing to fork from")
    if at not in ticks:
        raise UsageError(f"--at {at}: run {row.run_id} has steps 0 to {ticks[-1]}; pick one of them")
    belief = store.belief_at(row.run_id, at)
    state = belief.trajectory[-1].state
    then, now = _machine_then(store, row.run_id, at), spec_hash(machine)
    changed = (then or row.spec_hash) != now
    if changed and not allow_changed:
        raise UsageError(
            f"workflow '{row.workflow_path or row.workflow}' changed since step {at} of run {row.run_id} ran; "
            "pass --allow-changed to fork it under the new definition"
        )
    leaf = machine.leaf_index.get(state)
    if leaf is None:
        raise UsageError(
            f"step {at} of run {row.run_id} is in state '{state}', which workflow '{machine.name}' no longer has"
        )
    if machine.final[leaf]:
        raise UsageError(
            f"step {at} of run {row.run_id} is in final state '{state}': a fork from there has nothing to run; "
            "pick an earlier step"
        )
    available = sorted({e.trigger for e in machine.edges[leaf]})
    if trigger is not None and trigger not in available:
        raise UsageError(
            f"--trigger {trigger}: state '{state}' has no such transition; its transitions: "
            f"{', '.join(available) or 'none'}"
        )
    return ForkPlan(
        parent_run_id=row.run_id,
        at=at,
        state=state,
        workflow=row.workflow,
        workflow_path=row.workflow_path,
        machine_then=then,
        machine_now=now,
        changed=changed,
        final=False,
        waiting=machine.waiting[leaf],
        available=available,
        inputs=dict(inputs or {}),
        trigger=trigger,
        context_keys=sorted(belief.context),
        redacted_keys=sorted(k for k, v in belief.context.items() if _has_redacted(v)),
    )


def _counters(belief: Belief) -> dict[str, Any]:
    """The counters as they stood after the step, counted from what the run recorded up to it."""
    by = [t.decided_by for t in belief.trajectory if t.trigger is not None]
    llm_calls = 0
    for e in belief.log:
        if e.action == "policy:llm" and isinstance(e.outputs, dict):
            llm_calls += int(e.outputs.get("llm_calls", 1) or 0)
        elif e.tokens:
            llm_calls += 1
    return {
        "steps": len(by),
        "llm_calls": llm_calls,
        "tokens": sum(e.tokens for e in belief.log),
        "cost": sum(e.cost for e in belief.log),
        "fast_forwards": by.count("fast_forward"),
        "rule_decisions": by.count("rule"),
        "llm_decisions": by.count("llm"),
        "user_decisions": by.count("user") + by.count("event"),
        "actions": sum(1 for e in belief.log if not e.action.startswith(("policy:", "check:"))),
        "estimated_tokens": 0,
        "replayed_decisions": by.count("replay"),
    }


def create_fork(store: RunStore, plan: ForkPlan, *, run_id: str | None = None) -> str:
    """Write the fork: a new run holding the parent's trajectory, log and context up to step `plan.at`, in the same
    state, with the machines those steps ran under and where it came from. Nothing of the parent changes."""
    parent = store.get_run(plan.parent_run_id)
    belief = store.belief_at(parent.run_id, plan.at)
    new_id = run_id or uuid.uuid4().hex[:12]
    if store.has_run(new_id):
        raise UsageError(f"a run '{new_id}' exists already; choose another id for the fork")
    record = TickRecord(trajectory=list(belief.trajectory), log=list(belief.log), context=list(belief.context.items()))
    counters = _counters(belief)
    # What the parent's hooks kept goes with it: a fork of a run that learns learns like any run of its workflow.
    store.create_run(
        new_id,
        parent.workflow,
        parent.workflow_path,
        plan.machine_now,
        parent.inputs,
        plan.state,
        counters,
        record,
        hooks=parent.hooks or None,
    )
    store.commit_tick(new_id, TickRecord(), status="running", state=plan.state, tick=plan.at, counters=counters)
    for from_tick, spec_hash in store.machines(parent.run_id):
        if from_tick <= plan.at:  # kept already: the record is never rebuilt, only the fork's ticks are linked to it
            store.keep_machine(new_id, from_tick, spec_hash, dict)
    store.record_fork(new_id, parent.run_id, plan.at)
    return new_id


def start_fork(
    store: RunStore, plan: ForkPlan, workflow: Workflow, *, run_id: str | None = None, **agent_kwargs: Any
) -> Agent:
    """Create the fork and hand back its Agent, resumed like any run with the workflow's hooks (`workflow.resume`):
    call `.run(plan.inputs, trigger=plan.trigger)` (or let `fork_run` do it)."""
    new_id = create_fork(store, plan, run_id=run_id)
    return workflow.resume(store, new_id, **agent_kwargs)


def fork_run(
    store: RunStore,
    run_id: str,
    at: int,
    workflow: Any,
    *,
    inputs: dict[str, Any] | None = None,
    trigger: str | None = None,
    args: dict[str, Any] | None = None,
    allow_changed: bool = False,
    new_run_id: str | None = None,
    **agent_kwargs: Any,
) -> Any:
    """Fork run `run_id` at step `at` and run the fork under `workflow` (a loaded Workflow); returns its RunResult."""
    plan = plan_fork(store, run_id, at, workflow.machine, inputs=inputs, trigger=trigger, allow_changed=allow_changed)
    agent = start_fork(store, plan, workflow, run_id=new_run_id, **agent_kwargs)
    return agent.run(plan.inputs, trigger=plan.trigger, args=args)
