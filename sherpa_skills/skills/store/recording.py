"""What a replay or a capture leaves in the store, whichever kind of procedure: the execution of a replay, and the
procedure a successful run teaches (a new one, a success credited to its twin, or the next version of one that
diverged)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ...db.connection import Connection
from .database import ProcedureDatabase
from .models import CapturedProcedure, Execution, Outcome


def record_execution(
    store: ProcedureDatabase,
    procedure: Mapping[str, Any] | CapturedProcedure,
    *,
    started: float,
    outcome: Outcome,
    divergence: Mapping[str, Any] | None = None,
    error: str | None = None,
    tokens: int = 0,
    llm_calls: int = 0,
    run_id: str | None = None,
) -> Execution:
    """One replay's end: where and why it diverged come from its divergence record (skills/replay/divergence.py),
    else the run's error."""
    pid, version = (
        (procedure["id"], procedure["version"]) if isinstance(procedure, Mapping) else (procedure.id, procedure.version)
    )
    return store.record_execution(
        Execution(
            procedure_id=pid,
            version=version,
            started=started,
            ended=time.time(),
            outcome=outcome,
            diverged_step=divergence.get("step") if divergence else None,
            reason=divergence.get("reason") if divergence else error,
            tokens=tokens,
            llm_calls=llm_calls,
            run_id=run_id,
        )
    )


def credit_or_new_version(
    store: ProcedureDatabase, captured: CapturedProcedure, relearn: str | None = None
) -> tuple[CapturedProcedure, bool]:
    """(procedure, new): re-learning `relearn` (a procedure that diverged), its next version from `captured`'s steps or
    decisions, conditions and cost; otherwise `captured` is stored, or — the same steps or decisions already are — that
    procedure is credited with one more success (`new` is False)."""
    if relearn:
        updated = store.add_version(
            relearn,
            captured.steps,
            source=captured.source,
            planned_tokens=captured.planned_tokens,
            planned_llm_calls=captured.planned_llm_calls,
            preconditions=captured.preconditions or None,
            postconditions=captured.postconditions or None,
            decisions=captured.decisions if captured.kind == "trajectory" else None,
        )
        return updated, True
    return store.insert_or_credit(captured)


def credit_described(store: ProcedureDatabase, task_type: str, description: str, signature: str) -> str | None:
    """The id of `task_type`'s trajectory procedure described exactly so (the oldest, as `described_procedure` finds
    it), credited with one more success when its signature is `signature` (the same decisions for the same task);
    None, and nothing written, otherwise. Nothing is loaded: a run that took a known path costs an update, whatever
    its length."""

    def write(conn: Connection) -> str | None:
        row = conn.execute(
            "SELECT id, signature FROM procedures WHERE task_type = ? AND kind = 'trajectory' AND description = ?"
            " ORDER BY created LIMIT 1",
            (task_type, description),
        ).fetchone()
        if row is None or row[1] != signature:
            return None
        store._credit(row[0])
        return str(row[0])

    return store.db.transaction(write, what=f"a success of '{task_type}'")
