"""Which team a task (correlation id) belongs to, and what it was asked, kept beside the agents' runs."""

from __future__ import annotations

import json
import time
from typing import Any

from .run_base import _RunStoreBase
from .run_values import _dump


class _TeamTasks(_RunStoreBase):
    """The run store's team tasks."""

    def record_team_task(self, correlation_id: str, team: str, record: dict[str, Any]) -> None:
        """Keep which team handles this task and what it was asked (redacted as every row is); the first record of a
        task stays (a team run again on the same task resumes it)."""
        with self._lock:
            self.conn.execute(
                "INSERT INTO team_tasks (correlation_id, team, record, created) VALUES (?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                (correlation_id, team, _dump(record, f"team task {correlation_id}"), time.time()),
            )

    def team_tasks(self, correlation_ids: list[str]) -> dict[str, dict[str, Any]]:
        """The kept record of each of these tasks that has one (tasks run before teams were kept have none)."""
        out: dict[str, dict[str, Any]] = {}
        for i in range(0, len(correlation_ids), 500):  # SQLite's bound-parameter limit
            chunk = correlation_ids[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for cid, record in self.conn.execute(
                f"SELECT correlation_id, record FROM team_tasks WHERE correlation_id IN ({marks})", chunk
            ):
                out[cid] = json.loads(record)
        return out
