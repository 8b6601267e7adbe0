"""Built-in `run_machine` action: one machine runs another (replay inside planning, capture after it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..engine.registry import ActionContext, ActionResult, default_registry
from ..errors import ActionError


class RunMachineArgs(BaseModel):
    machine: str = Field(
        description="a built-in machine name from statemachines/ (replay, capture, ...) or a workflow path"
    )
    inputs: dict[str, Any] = Field(default_factory=dict)
    trigger: str | None = None


def machine_path(name: str, workdir: Path) -> Path:
    """A workflow path beside the caller, else a built-in machine shipped in statemachines/."""
    from ..data import data_dir

    for candidate in (workdir / name, data_dir("statemachines") / f"{name}.yaml", data_dir("statemachines") / name):
        if candidate.is_file():
            return candidate
    raise ActionError(
        "run_machine", f"no machine '{name}' beside the workflow or among the built-ins in statemachines/"
    )


@default_registry.action("run_machine", side_effects=True)
def run_machine(args: RunMachineArgs, ctx: ActionContext) -> ActionResult:
    """Run a machine to its end as a run of its own, in the same home; outputs its result (context included)."""
    from ..engine.runstore import RunStore
    from ..engine.workflow import load_workflow

    workflow = load_workflow(machine_path(args.machine, ctx.workdir))
    store = RunStore(home=ctx.home) if ctx.home else None
    agent = workflow.agent(store=store, model=ctx.model, home=ctx.home, name=ctx.agent)  # a child acts as its parent
    try:
        result = agent.run(args.inputs, trigger=args.trigger)
    finally:
        if store is not None:
            store.close()
    outputs = result.to_dict()
    return ActionResult(
        outputs=outputs,
        status="ok" if result.status != "error" else "failed",
        tokens=result.counters.get("tokens", 0),
        llm_calls=result.counters.get("llm_calls", 0),
        cost=result.counters.get("cost", 0.0),
    )
