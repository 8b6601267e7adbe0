"""The heartbeat's own rows: the lock, the watermark, every run's report, the last known health of each procedure."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

from ..db.connection import Connection
from ..db.on_database import OnDatabase
from ..db.sqlite import execute_script


def m001_heartbeat(conn: sqlite3.Connection) -> None:
    execute_script(
        conn,
        """
        CREATE TABLE heartbeat_lock (name TEXT PRIMARY KEY, run_id TEXT, pid INTEGER NOT NULL, host TEXT NOT NULL,
            acquired REAL NOT NULL);
        CREATE TABLE heartbeat_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE heartbeat_runs (
            id INTEGER PRIMARY KEY, run_id TEXT, started REAL NOT NULL, ended REAL NOT NULL, status TEXT NOT NULL,
            watermark_before INTEGER, watermark_after INTEGER, phases TEXT NOT NULL, alerts TEXT NOT NULL,
            markdown TEXT NOT NULL);
        CREATE TABLE procedure_health (procedure_id TEXT PRIMARY KEY, status TEXT NOT NULL, rate REAL,
            updated REAL NOT NULL);
    """,
    )


MIGRATIONS = [m001_heartbeat]
LOCK = "heartbeat"


@dataclass
class LockOutcome:
    acquired: bool
    how: str  # taken | reset | held
    holder: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"acquired": self.acquired, "how": self.how, "holder": self.holder}


def _alive(pid: int) -> bool:
    """Whether the lock holder's process still runs; a zombie holds no lock."""
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:  # AccessDenied: someone else's live process
        return True


class HeartbeatState(OnDatabase):
    """In the home's store.db, or in the shared database in force (one heartbeat for every machine sharing it)."""

    component = "heartbeat"
    migrations = MIGRATIONS

    # -- lock
    def acquire(self, run_id: str, stale_secs: float) -> LockOutcome:
        """Free → take; held by a live process → skip; older than `stale_secs` or its process gone → reset and take."""
        if self.db.shared:
            return self._acquire_shared(run_id)
        now, host, pid = time.time(), socket.gethostname(), os.getpid()

        def take(conn: Connection) -> LockOutcome:
            row = conn.execute(
                "SELECT run_id, pid, host, acquired FROM heartbeat_lock WHERE name = ?", (LOCK,)
            ).fetchone()
            if row is None:
                self._record_holder(conn, run_id, pid, host, now)
                return LockOutcome(True, "taken", None)
            holder = {
                "run_id": row[0],
                "pid": row[1],
                "host": row[2],
                "acquired": row[3],
                "age_secs": round(now - row[3], 1),
            }
            stale = now - row[3] > stale_secs or (row[2] == host and not _alive(row[1]))
            if not stale:
                return LockOutcome(False, "held", holder)
            self._record_holder(conn, run_id, pid, host, now)
            return LockOutcome(True, "reset", holder)

        return self.db.transaction(take, what="the heartbeat lock")

    @staticmethod
    def _record_holder(conn: Connection, run_id: str, pid: int, host: str, now: float) -> None:
        conn.execute(
            "INSERT INTO heartbeat_lock (name, run_id, pid, host, acquired) VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) "
            "DO UPDATE SET run_id = excluded.run_id, pid = excluded.pid, host = excluded.host, "
            "acquired = excluded.acquired",
            (LOCK, run_id, pid, host, now),
        )

    def _holder(self) -> dict[str, Any] | None:
        row = self.conn.execute(
            "SELECT run_id, pid, host, acquired FROM heartbeat_lock WHERE name = ?", (LOCK,)
        ).fetchone()
        if row is None:
            return None
        return {
            "run_id": row[0],
            "pid": row[1],
            "host": row[2],
            "acquired": row[3],
            "age_secs": round(time.time() - row[3], 1),
        }

    def _acquire_shared(self, run_id: str) -> LockOutcome:
        """The server's lock decides (see Database.hold_alone); the row only says who holds it (machine, pid, since
        when). A row left while the lock is free was a holder that died: the server already let go of its lock, so it
        is reset."""
        if not self.db.hold_alone(run_id):
            return LockOutcome(False, "held", self._holder_recorded())
        previous = self._holder()
        pid, host, now = os.getpid(), socket.gethostname(), time.time()
        self.db.once_more(lambda conn: self._record_holder(conn, run_id, pid, host, now))
        return LockOutcome(True, "taken" if previous is None else "reset", previous)

    def _holder_recorded(self, wait_secs: float = 2.0) -> dict[str, Any] | None:
        """The holder's row, waited for: a winner writes it just after taking the server's lock, so a loser asking in
        between would otherwise say "held" by nobody. None after `wait_secs` (a holder that died between the two)."""
        deadline = time.monotonic() + wait_secs
        holder = self._holder()
        while holder is None and time.monotonic() < deadline:
            time.sleep(0.02)
            holder = self._holder()
        return holder

    def still_holds(self, run_id: str) -> bool:
        """Before each phase: on a shared database the lock lives in a connection, which can drop (a row cannot)."""
        if not self.db.shared:
            return True
        return self.db.still_holds_alone(run_id)

    def release(self, run_id: str) -> bool:
        """Whether `run_id` held the lock (its row went, or its server lock). A transaction, not `once_more`: after a
        dropped connection its row count is the first try's when that one landed, never a second try's 0."""
        where = (LOCK, run_id)
        gone = self.db.transaction(
            lambda conn: conn.execute("DELETE FROM heartbeat_lock WHERE name = ? AND run_id = ?", where).rowcount,
            what="the heartbeat lock's release",
            # No commit token needed: a lost COMMIT landed when the row is gone (it counted 0 if it never was there).
            landed=lambda: (
                self.conn.execute("SELECT 1 FROM heartbeat_lock WHERE name = ? AND run_id = ?", where).fetchone()
                is None
            ),
            immediate=False,
        )
        if self.db.shared:
            return self.db.let_go_alone(run_id) or gone > 0
        return bool(gone > 0)

    # -- key/value
    def get(self, key: str, default: Any = None) -> Any:
        row = self.conn.execute("SELECT value FROM heartbeat_state WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def set(self, key: str, value: Any) -> None:
        row = (key, json.dumps(value))
        self.db.once_more(
            lambda conn: conn.execute(
                "INSERT INTO heartbeat_state (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                row,
            )
        )

    # -- reports
    def save_report(self, report: dict[str, Any], markdown: str) -> int:
        row = (
            report.get("run_id"),
            report["started"],
            report["ended"],
            report["status"],
            report.get("watermark_before"),
            report.get("watermark"),
            json.dumps(report.get("phases", {})),
            json.dumps(report.get("alerts", [])),
            markdown,
        )

        def write(conn: Connection) -> int:
            cursor = conn.execute(
                "INSERT INTO heartbeat_runs (run_id, started, ended, status, watermark_before, watermark_after, "
                "phases, alerts, markdown) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                row,
            )
            return int(cursor.fetchone()[0])

        return self.db.transaction(write, what="the heartbeat's report", immediate=False)

    def reports(self, last: int = 1) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT id, run_id, started, ended, status, watermark_before, watermark_after, phases, alerts, markdown"
            " FROM heartbeat_runs ORDER BY id DESC LIMIT ?",
            (last,),
        ).fetchall()
        return [
            {
                "id": r[0],
                "run_id": r[1],
                "started": r[2],
                "ended": r[3],
                "status": r[4],
                "watermark_before": r[5],
                "watermark": r[6],
                "phases": json.loads(r[7]),
                "alerts": json.loads(r[8]),
                "markdown": r[9],
            }
            for r in rows
        ]

    # -- health memory
    def checked_procedures(self) -> frozenset[str]:
        """The procedures whose health a heartbeat has recorded."""
        return frozenset(r[0] for r in self.conn.execute("SELECT procedure_id FROM procedure_health"))

    def previous_health(self, procedure_id: str) -> str | None:
        row = self.conn.execute(
            "SELECT status FROM procedure_health WHERE procedure_id = ?", (procedure_id,)
        ).fetchone()
        return row[0] if row else None

    def remember_health(self, procedure_id: str, status: str, rate: float | None) -> None:
        row = (procedure_id, status, rate, time.time())
        self.db.once_more(
            lambda conn: conn.execute(
                "INSERT INTO procedure_health (procedure_id, status, rate, updated) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (procedure_id) DO UPDATE SET status = excluded.status, rate = excluded.rate, "
                "updated = excluded.updated",
                row,
            )
        )
