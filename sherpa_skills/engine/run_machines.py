"""What a run executed and where it came from: each machine's record once per hash, the machines a run ran under,
its forks."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from ..db.connection import Connection
from .run_base import _RunStoreBase
from .run_values import _dump


class _RunMachines(_RunStoreBase):
    """The run store's machine records and forks."""

    def _keep_spec(self, spec_hash: str, record: Callable[[], dict[str, Any]]) -> None:
        """Inside a transaction: the machine's record, stored the first time its hash is seen (built only then). The
        caller remembers the hash as kept once the transaction committed (a retried one must insert it again)."""
        if spec_hash in self._kept_specs:
            return
        if not self.conn.execute("SELECT 1 FROM run_specs WHERE spec_hash = ?", (spec_hash,)).fetchone():
            self.conn.execute(
                "INSERT INTO run_specs (spec_hash, body, created) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                (spec_hash, _dump(record(), f"the record of machine {spec_hash}"), time.time()),
            )

    def keep_machine(self, run_id: str, from_tick: int, spec_hash: str, record: Callable[[], dict[str, Any]]) -> bool:
        """Record that the run executes machine `spec_hash` from `from_tick` on; the machine's record (built by
        `record` only when this hash was never kept) is stored once for every run of it. False when the run already
        runs under it."""
        with self._lock:
            latest = self.conn.execute(
                "SELECT spec_hash FROM run_machines WHERE run_id = ? ORDER BY from_tick DESC LIMIT 1", (run_id,)
            ).fetchone()
            if latest is not None and latest[0] == spec_hash:
                return False

            def write(conn: Connection) -> None:
                self._keep_spec(spec_hash, record)
                conn.execute(
                    "INSERT INTO run_machines (run_id, from_tick, spec_hash) VALUES (?, ?, ?) "
                    "ON CONFLICT (run_id, from_tick) DO UPDATE SET spec_hash = excluded.spec_hash",
                    (run_id, from_tick, spec_hash),
                )

            self.db.transaction(write, what=f"the machine of run {run_id} from step {from_tick}")
            self._kept_specs.add(spec_hash)
        return True

    def machines(self, run_id: str) -> list[tuple[int, str]]:
        """The machines the run ran under, as (first tick under it, spec hash), oldest first: more than one when it
        was resumed with --allow-changed; none for runs recorded before machines were kept."""
        return [
            (r[0], r[1])
            for r in self.conn.execute(
                "SELECT from_tick, spec_hash FROM run_machines WHERE run_id = ? ORDER BY from_tick", (run_id,)
            )
        ]

    def machine_record(self, spec_hash: str) -> dict[str, Any] | None:
        """What a machine was when a run executed it (see engine.run_record), or None when it was never kept."""
        row = self.conn.execute("SELECT body FROM run_specs WHERE spec_hash = ?", (spec_hash,)).fetchone()
        return json.loads(row[0]) if row else None

    def record_fork(self, run_id: str, parent_run_id: str, at_tick: int) -> None:
        row = (run_id, parent_run_id, at_tick, time.time())
        self.db.transaction(
            lambda conn: conn.execute(
                "INSERT INTO run_forks (run_id, parent_run_id, at_tick, created) VALUES (?, ?, ?, ?)", row
            ),
            what=f"the fork {run_id} of run {parent_run_id}",
            immediate=False,
        )

    def forked_from(self, run_id: str) -> tuple[str, int] | None:
        """(parent run id, step) when this run is a fork."""
        row = self.conn.execute("SELECT parent_run_id, at_tick FROM run_forks WHERE run_id = ?", (run_id,)).fetchone()
        return (row[0], row[1]) if row else None

    def forks(self, run_id: str) -> list[tuple[str, int]]:
        """The runs forked from this one, as (fork run id, step), oldest first."""
        return [
            (r[0], r[1])
            for r in self.conn.execute(
                "SELECT run_id, at_tick FROM run_forks WHERE parent_run_id = ? ORDER BY created", (run_id,)
            )
        ]
