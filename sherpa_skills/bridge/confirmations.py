"""What a calling agent answered to `needs-confirmation`: this task is procedure X, or none of these.

Interim: issue 22 gives the skill store confirmations, aliases and rejections (`learn replay QUERY --procedure ID` /
`--reject`); until it lands on main the MCP server keeps its answers here, in the home's store.db, keyed by the task's
plain words, and `find_procedure` reads them back. Replacing `record` and `answers` with the store's own is the merge.
"""

from __future__ import annotations

import re
import sqlite3
import time
from pathlib import Path

from ..home import store_path
from ..sqlite_db import connect, execute_script, migrate

COMPONENT = "bridge"


def m001_confirmations(conn: sqlite3.Connection) -> None:
    execute_script(
        conn,
        """
        CREATE TABLE bridge_confirmations (
            id INTEGER PRIMARY KEY, task_key TEXT NOT NULL, task TEXT NOT NULL, procedure_id TEXT NOT NULL,
            accepted INTEGER NOT NULL, agent TEXT NOT NULL, created REAL NOT NULL);
        CREATE INDEX bridge_confirmations_task ON bridge_confirmations (task_key, id);
    """,
    )


def task_key(task: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", task.lower()))


def _open(home: str | Path) -> sqlite3.Connection:
    conn = connect(store_path(home))
    migrate(conn, COMPONENT, [m001_confirmations])
    return conn


def record(home: str | Path, task: str, procedure_ids: list[str], agent: str, *, accepted: bool) -> None:
    """The agent's answer for this task: one procedure accepted, or the candidates it was shown rejected."""
    conn = _open(home)
    now = time.time()
    try:
        conn.executemany(
            "INSERT INTO bridge_confirmations (task_key, task, procedure_id, accepted, agent, created) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [(task_key(task), task, pid, int(accepted), agent, now) for pid in procedure_ids],
        )
    finally:
        conn.close()


def answers(home: str | Path, task: str) -> tuple[str | None, set[str]]:
    """(the procedure last accepted for this task, unless rejected since; the procedures rejected for it)."""
    conn = _open(home)
    try:
        rows = conn.execute(
            "SELECT procedure_id, accepted FROM bridge_confirmations WHERE task_key = ? ORDER BY id", (task_key(task),)
        ).fetchall()
    finally:
        conn.close()
    latest: dict[str, bool] = {}
    accepted: str | None = None
    for pid, yes in rows:
        latest[pid] = bool(yes)
        if yes:
            accepted = pid
    rejected = {pid for pid, yes in latest.items() if not yes}
    return (accepted if accepted not in rejected else None), rejected
