"""What the view reads from the skill store beyond one procedure: the replays a page of runs recorded, what each
execution saved, and the shape of a procedure's steps."""

from __future__ import annotations

from typing import Any

from ...errors import StoreError
from ..mine.recurring import shape
from ..store.database import ProcedureDatabase
from ..store.models import CapturedProcedure, Execution
from ..store.params import PARAMETER
from ..store.stats import saved_something, savings


def replays(store: ProcedureDatabase, run_ids: list[str]) -> dict[str, dict[str, Any]]:
    """For the replay runs among `run_ids`: the procedure execution each one recorded (how many steps it replayed,
    or where it diverged)."""
    if not run_ids:
        return {}
    marks = ",".join("?" * len(run_ids))
    rows = store.conn.execute(
        f"SELECT run_id, procedure_id, version, outcome, diverged_step FROM executions WHERE run_id IN ({marks})",
        run_ids,
    ).fetchall()
    out = {}
    for run_id, procedure_id, version, outcome, diverged_step in rows:
        steps = _steps_in(store, procedure_id, version)
        replayed = (diverged_step - 1) if diverged_step else (steps if outcome == "success" else 0)
        out[run_id] = {"procedure_id": procedure_id, "version": version, "outcome": outcome, "replayed_steps": replayed}
    return out


def _steps_in(store: ProcedureDatabase, procedure_id: str, version: int) -> int:
    try:
        return len(store.get(procedure_id, version).steps)
    except StoreError:
        return 0


def replay_savings(store: ProcedureDatabase, p: CapturedProcedure) -> list[tuple[Execution, int, int]]:
    """(execution, tokens saved, LLM calls saved) for each of `p`'s executions that counts in the savings."""
    return [(e, *savings(store, p, e)) for e in store.executions(p.id) if saved_something(p, e)]


def step_shapes(p: CapturedProcedure) -> tuple[tuple[str, ...], ...] | None:
    """Each step by program, sub-command, flags and operators, paths, values and parameters set aside; None for no
    steps (a trajectory) or a step the shell parser cannot read."""
    if not p.steps:
        return None
    shapes = []
    for step in p.steps:
        found = shape(PARAMETER.sub("P", step.command))
        if found is None:
            return None
        shapes.append(found)
    return tuple(shapes)


def candidate_summary(p: Any) -> dict[str, Any]:
    """What a person needs to decide: every command that would run (steps and conditions, where), what varies (with
    examples), how often and where it was seen, and what others claim about it (shown, never counted)."""
    mined = p.context.get("mined") or {}
    return {
        "id": p.id,
        "task_type": p.task_type,
        "description": p.description,
        "source": p.source,
        "tags": p.tags,
        "steps": [s.command for s in p.steps],
        "cwd": sorted({s.cwd for s in p.steps if s.cwd}),
        "preconditions": p.preconditions,
        "postconditions": p.postconditions,
        "parameters": mined.get("parameters", {}),
        "support": mined.get("support", 0),
        "sessions": len(mined.get("sessions", [])),
        "successes": p.success_count,
        "claimed_successes": p.claimed_successes,
        "claimed_failures": p.claimed_failures,
        "long_running_steps": mined.get("long_running_steps", []),
        "project_dir": mined.get("project_dir"),
        "updated": p.updated,
    }
