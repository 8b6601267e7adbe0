"""A procedure's branches: the paths its runs took when an exception made them leave it and they succeeded anyway.
A branch is not a new version: the routine stays the procedure, and the decision memory learned what separated the
two (skills/decide/). Kept in `procedure_branches` (migration m009)."""

from __future__ import annotations

import json
import time
from typing import Any

from ...db.connection import Connection
from ...redact import redact
from .database import ProcedureDatabase
from .models import CapturedProcedure
from .rows import _dump


def add_branch(
    store: ProcedureDatabase,
    procedure_id: str,
    signature: str,
    *,
    step: int | None,
    state: str | None,
    reason: str,
    decisions: list[dict[str, Any]],
    run_id: str | None,
) -> int:
    """A run that left `procedure_id` and succeeded another way: its path kept as the procedure's branch (counted
    again when another run takes it). Returns how many runs took it."""
    now = time.time()

    def write(conn: Connection) -> Any:
        conn.execute(
            "INSERT INTO procedure_branches (procedure_id, signature, step, state, reason, decisions, runs, first_run,"
            " last_run, first_seen, last_seen) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?)"
            " ON CONFLICT (procedure_id, signature) DO UPDATE SET runs = procedure_branches.runs + 1,"
            " last_run = excluded.last_run, last_seen = excluded.last_seen, reason = excluded.reason",
            (procedure_id, signature, step, state, redact(reason), _dump(decisions), run_id, run_id, now, now),
        )
        return conn.execute(
            "SELECT runs FROM procedure_branches WHERE procedure_id = ? AND signature = ?", (procedure_id, signature)
        ).fetchone()

    row = store.db.transaction(write, what=f"a branch of procedure '{procedure_id}'")
    return int(row[0])


def branches(store: ProcedureDatabase, procedure_id: str) -> list[dict[str, Any]]:
    """The branches runs of `procedure_id` took, most taken first."""
    rows = store.conn.execute(
        "SELECT signature, step, state, reason, decisions, runs, first_run, last_run, first_seen, last_seen"
        " FROM procedure_branches WHERE procedure_id = ? ORDER BY runs DESC, first_seen",
        (procedure_id,),
    ).fetchall()
    return [
        {
            "signature": r[0],
            "step": r[1],
            "state": r[2],
            "reason": r[3],
            "decisions": json.loads(r[4]),
            "runs": r[5],
            "first_run": r[6],
            "last_run": r[7],
            "first_seen": r[8],
            "last_seen": r[9],
        }
        for r in rows
    ]


def described_procedure(store: ProcedureDatabase, workflow: str, description: str) -> CapturedProcedure | None:
    """`workflow`'s trajectory procedure described exactly so (the oldest), if any."""
    row = store.conn.execute(
        "SELECT id FROM procedures WHERE task_type = ? AND kind = 'trajectory' AND description = ? ORDER BY created"
        " LIMIT 1",
        (workflow, description),
    ).fetchone()
    return store.get(row[0]) if row else None
