"""A stored run as the `--json` outputs print it: one shape for the CLI and the browser view."""

from __future__ import annotations

from typing import Any


def run_summary(r: Any) -> dict[str, Any]:
    """One run as `runs --json` lists it (and the browser view's /api/runs)."""
    from .run_origin import log_place

    return {
        "run_id": r.run_id,
        "workflow": r.workflow,
        "status": r.status,
        "state": r.state,
        "steps": r.counters.get("steps", 0),
        "llm_calls": r.counters.get("llm_calls", 0),
        "created": r.created,
        "updated": r.updated,
        "error": r.error,
        "log": log_place(r.host, r.home, r.run_id),
    }


def run_detail(row: Any, belief: Any) -> dict[str, Any]:
    """One run as `show --json` prints it (and the browser view's /api/runs/ID)."""
    from .run_origin import log_place

    return {
        "run_id": row.run_id,
        "workflow": row.workflow,
        "workflow_path": row.workflow_path,
        "status": row.status,
        "state": row.state,
        "error": row.error,
        "inputs": row.inputs,
        "log": log_place(row.host, row.home, row.run_id),
        **row.counters,
        "belief": belief.model_dump(mode="json"),
    }
