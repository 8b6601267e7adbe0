"""Which team a task (correlation id) belongs to, and what it was asked: the agents layer's own stored component."""

from __future__ import annotations

import json
import time
from typing import Any

from ..db.by_connection import has_table
from ..db.connection import Connection
from ..db.database import Database
from ..db.on_database import OnDatabase
from ..engine.run_values import _dump

COMPONENT = "teams"
MOVED_FROM = "runs"  # stores migrated before teams had a component of their own made the table as part of the runs


def m001_team_tasks(conn: Connection) -> None:
    """Which team a task belongs to, with what the team was asked and its drawing, as it ran: the agents' runs alone
    name neither. IF NOT EXISTS: a store migrated when the table belonged to the runs has it already."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS team_tasks ("
        "correlation_id TEXT PRIMARY KEY, team TEXT NOT NULL, record TEXT NOT NULL, created REAL NOT NULL)"
    )


MIGRATIONS = [m001_team_tasks]


class TaskStore(OnDatabase):
    """The team tasks kept beside the agents' runs, in the same truth store."""

    component = COMPONENT
    migrations = MIGRATIONS

    def record_team_task(self, correlation_id: str, team: str, record: dict[str, Any]) -> None:
        """Keep which team handles this task and what it was asked (redacted as every row is); the first record of a
        task stays (a team run again on the same task resumes it)."""
        row = (correlation_id, team, _dump(record, f"team task {correlation_id}"), time.time())
        self.db.once_more(
            lambda conn: conn.execute(
                "INSERT INTO team_tasks (correlation_id, team, record, created) VALUES (?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                row,
            )
        )

    def team_tasks(self, correlation_ids: list[str]) -> dict[str, dict[str, Any]]:
        """The kept record of each of these tasks that has one (tasks run before teams were kept have none)."""
        return kept_team_tasks(self.db, correlation_ids)


def kept_team_tasks(db: Database, correlation_ids: list[str]) -> dict[str, dict[str, Any]]:
    """`TaskStore.team_tasks` without opening the component: none where no team ran yet (the read-only view reads a
    store it must not migrate)."""
    out: dict[str, dict[str, Any]] = {}
    if not has_table(db.conn, "team_tasks"):
        return out
    for i in range(0, len(correlation_ids), 500):  # SQLite's bound-parameter limit
        chunk = correlation_ids[i : i + 500]
        marks = ",".join("?" * len(chunk))
        for cid, record in db.conn.execute(
            f"SELECT correlation_id, record FROM team_tasks WHERE correlation_id IN ({marks})", chunk
        ):
            out[cid] = json.loads(record)
    return out
