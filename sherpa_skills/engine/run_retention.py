"""Retention: runs deleted with every row they recorded, in one transaction."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..db.connection import Connection
from .run_base import _RunStoreBase
from .run_schema import RUN_TABLES


class _RunRetention(_RunStoreBase):
    """The run store's deletions."""

    def delete_finished_before(
        self, cutoff: float, keep: Callable[[Any, list[str]], dict[str, str]] | None = None
    ) -> int:
        """Retention: runs that ended (final or error) before `cutoff` go,
        with everything they recorded (interrupted ones wait to be resumed)."""
        return len(
            self.delete_runs(
                lambda conn: [
                    r[0]
                    for r in conn.execute(
                        "SELECT run_id FROM runs WHERE status IN ('final', 'error') AND updated < ?", (cutoff,)
                    )
                ],
                keep,
            )[0]
        )

    def delete_runs(
        self,
        choose: Callable[[Connection], list[str]],
        keep: Callable[[Any, list[str]], dict[str, str]] | None = None,
    ) -> tuple[list[str], dict[str, str]]:
        """Delete the runs `choose` names, except those `keep` says must stay (run id → why),
        with every row they recorded,
        in one transaction: what is chosen and what refers to it cannot change in between. Returns (deleted, kept)."""

        def write(conn: Connection) -> tuple[list[str], dict[str, str]]:
            chosen = choose(conn)
            kept = keep(conn, chosen) if keep else {}
            ids = [i for i in chosen if i not in kept]
            for table in (*RUN_TABLES, "runs"):
                conn.executemany(f"DELETE FROM {table} WHERE run_id = ?", [(i,) for i in ids])
            return ids, kept

        ids, kept = self.db.transaction(write, what="the deletion of runs")
        return ids, kept
