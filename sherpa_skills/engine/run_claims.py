"""A run is continued by one process at a time, whichever machine it is on.

PostgreSQL: a session advisory lock per run, held by the store's connection; the server drops it when that connection
ends, a killed process included. SQLite (one machine): a POSIX record lock on one byte per run of a file beside the
store; the kernel drops it when the process ends. Both are re-entrant within their holder, so a process that resumes
the same run again (a team handling its next event) is not refused by itself.
"""

from __future__ import annotations

import os
import threading
import zlib
from pathlib import Path
from typing import Any

from ..db.connection import Connection, dialect_of
from ..errors import ClaimLost, StoreError

_RUN_LOCK_CLASS = 0x5348  # the first key of pg_try_advisory_lock(int, int): the second is hashtext(run_id)

# One descriptor per claims file and process, never closed: closing any descriptor of a file drops every POSIX lock
# the process holds on it. Counts per byte, because two stores of one process may claim the same run.
_files: dict[str, int] = {}
_held: dict[tuple[str, int], int] = {}
_files_lock = threading.Lock()


class RunClaims:
    def __init__(self, conn: Connection, store_path: Path):
        self.conn = conn
        self.postgres = dialect_of(conn) == "postgresql"
        self.file = str(store_path) + ".claims"
        self.mine: set[str] = set()
        if self.postgres:  # the claims died with a dropped connection: take them again on the new one
            conn.on_reconnect.append(self._take_again)  # type: ignore[attr-defined]

    def claim(self, run_id: str) -> None:
        """Hold `run_id` for this store until `release`; StoreError when another process holds it."""
        if run_id in self.mine:
            return
        if not (self._lock_postgres(run_id) if self.postgres else self._lock_file(run_id)):
            raise StoreError(
                f"run {run_id} is being continued by another process (on this machine or another sharing the store); "
                "try again once it stops"
            )
        self.mine.add(run_id)

    def release(self, run_id: str) -> None:
        if run_id not in self.mine:
            return
        self.mine.discard(run_id)
        if self.postgres:
            self.conn.execute("SELECT pg_advisory_unlock(?, hashtext(?))", (_RUN_LOCK_CLASS, run_id))
        else:
            self._unlock_file(run_id)

    def release_all(self) -> None:
        for run_id in list(self.mine):
            try:
                self.release(run_id)
            except Exception:  # a dropped connection released its locks with it
                self.mine.discard(run_id)

    def _take_again(self) -> None:
        """On a fresh connection: every run this store held, unless another process claimed it in between (then the
        run stops here; what was committed stays, and it resumes wherever it is claimed)."""
        lost = sorted(run_id for run_id in self.mine if not self._lock_postgres(run_id))
        if lost:
            self.mine.difference_update(lost)
            raise ClaimLost(
                f"run {', '.join(lost)} was claimed by another process while the connection to the database was down; "
                "it stops here, its committed steps kept, and resumes where it is claimed"
            )

    def _lock_postgres(self, run_id: str) -> bool:
        row = self.conn.execute("SELECT pg_try_advisory_lock(?, hashtext(?))", (_RUN_LOCK_CLASS, run_id)).fetchone()
        return bool(row[0])

    def _offset(self, run_id: str) -> int:
        return zlib.crc32(run_id.encode("utf-8", "surrogatepass")) & 0x7FFFFFFF

    def _lock_file(self, run_id: str) -> bool:
        try:
            import fcntl
        except ImportError:  # no POSIX record locks (Windows): one machine, claims not enforced
            return True
        key = (self.file, self._offset(run_id))
        with _files_lock:
            if _held.get(key):
                _held[key] += 1
                return True
            fd = _files.get(self.file)
            if fd is None:
                fd = _files[self.file] = os.open(self.file, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, key[1], os.SEEK_SET)
            except OSError:
                return False
            _held[key] = 1
            return True

    def _unlock_file(self, run_id: str) -> None:
        try:
            import fcntl
        except ImportError:
            return
        key = (self.file, self._offset(run_id))
        with _files_lock:
            count = _held.get(key, 0)
            if count > 1:
                _held[key] = count - 1
                return
            _held.pop(key, None)
            fd: Any = _files.get(self.file)
            if fd is not None:
                fcntl.lockf(fd, fcntl.LOCK_UN, 1, key[1], os.SEEK_SET)
