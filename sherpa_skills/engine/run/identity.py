"""Who an agent is (its name to shared memory and domains) and which machine it runs (the spec's hash)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from ...errors import UsageError
from ..compiler import CompiledMachine


def agent_identity(workflow: str, workflow_path: str | None, run_id: str, configured: str | None = None) -> str:
    """The configured name, else `WORKFLOW@HASH` of the workflow file's resolved path (stable across its runs, and not
    claimable by another file that declares the same `name:`), else `WORKFLOW@RUN_ID` (a workflow built in memory)."""
    if configured is not None:
        if (
            not isinstance(configured, str)
            or not configured.strip()
            or len(configured) > 200
            or any(ord(c) < 32 for c in configured)
        ):
            raise UsageError(
                f"agent name {configured!r} must be a non-empty printable string of at most 200 characters"
            )
        return configured.strip()
    if workflow_path:
        digest = hashlib.sha256(str(Path(workflow_path).resolve()).encode("utf-8", "surrogatepass")).hexdigest()[:8]
        return f"{workflow}@{digest}"
    return f"{workflow}@{run_id}"


def spec_hash(machine: CompiledMachine) -> str:
    return hashlib.sha256(machine.spec.model_dump_json().encode()).hexdigest()[:16]
