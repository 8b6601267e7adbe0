"""Locks held by a session rather than a transaction: the heartbeat's (a connection of its own) and the run claims'
(a PostgreSQL advisory lock on the store's connection, or a POSIX record lock on a byte of a file beside store.db).

The heartbeat lock on PostgreSQL: a session advisory lock, held by a connection of its own for as long as the
heartbeat runs (its phases open and close their stores meanwhile), released by the server itself when the holding
process dies: no clock, pid or host is trusted to decide a holder is gone."""

from __future__ import annotations

import os
import threading
import zlib
from typing import TYPE_CHECKING, Any

from .connection import Connection

if TYPE_CHECKING:  # psycopg is imported only where a server is used
    from .postgres import PgConnection

HEARTBEAT_LOCK = 0x5348_4552_5041_0002  # "SHERPA" 2: the key of pg_try_advisory_lock(bigint)

_held: dict[tuple[str, str], PgConnection] = {}  # (url, heartbeat run id) → the connection holding the lock
_guard = threading.Lock()


def try_hold(url: str, run_id: str) -> bool:
    """Take the lock for `run_id` unless any process (this one included, under another run id) holds it."""
    with _guard:
        if (url, run_id) in _held:
            return True
        from .postgres import connect

        conn = connect(url)
        try:
            if conn.execute("SELECT pg_try_advisory_lock(?)", (HEARTBEAT_LOCK,)).fetchone()[0]:  # type: ignore[index]
                _held[(url, run_id)] = conn
                return True
        except BaseException:
            conn.close()
            raise
        conn.close()
        return False


def still_holds(url: str, run_id: str) -> bool:
    """Whether `run_id` still holds the lock: a dropped connection lost it with its session (the pool's reconnect
    gives a session that holds nothing), so it is taken again when nobody took it meanwhile, and False when another
    heartbeat did."""
    with _guard:
        conn = _held.get((url, run_id))
        if conn is None:
            return False
        try:
            held = conn.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = pg_backend_pid() "
                "AND ((classid::bigint << 32) | objid::bigint) = ?",
                (HEARTBEAT_LOCK,),
            ).fetchone()[0]  # type: ignore[index]
            return bool(held) or bool(
                conn.execute("SELECT pg_try_advisory_lock(?)", (HEARTBEAT_LOCK,)).fetchone()[0]  # type: ignore[index]
            )
        except Exception:  # the server is away: whoever holds the lock, it is not certainly this heartbeat
            return False


def let_go(url: str, run_id: str) -> bool:
    with _guard:
        conn = _held.pop((url, run_id), None)
    if conn is None:
        return False
    try:
        conn.execute("SELECT pg_advisory_unlock(?)", (HEARTBEAT_LOCK,))
    finally:
        conn.close()
    return True


# -- session locks on a store's own connection (run claims)
def try_server_lock(conn: Connection, space: int, key: str) -> bool:
    """A PostgreSQL session advisory lock on (space, hashtext(key)), re-entrant within its session."""
    row = conn.execute("SELECT pg_try_advisory_lock(?, hashtext(?))", (space, key)).fetchone()
    return bool(row[0])


def server_unlock(conn: Connection, space: int, key: str) -> None:
    conn.execute("SELECT pg_advisory_unlock(?, hashtext(?))", (space, key))


# One descriptor per locks file and process, closed only once no byte of it is held: closing any descriptor of a file
# drops every POSIX lock the process holds on it. Counts per byte, because two stores of one process may lock one key.
_files: dict[str, int] = {}
_file_held: dict[tuple[str, int], int] = {}
_files_lock = threading.Lock()


def _offset(key: str) -> int:
    return zlib.crc32(key.encode("utf-8", "surrogatepass")) & 0x7FFFFFFF


def try_file_lock(file: str, key: str) -> bool:
    """A POSIX record lock on `key`'s byte of `file`, re-entrant within this process; the kernel drops it when the
    process ends."""
    try:
        import fcntl
    except ImportError:  # no POSIX record locks (Windows): one machine, locks not enforced
        return True
    held = (file, _offset(key))
    with _files_lock:
        if _file_held.get(held):
            _file_held[held] += 1
            return True
        fd = _files.get(file)
        if fd is None:
            fd = _files[file] = os.open(file, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, held[1], os.SEEK_SET)
        except OSError:
            if not any(name == file for name, _ in _file_held):  # nothing of ours on it: no lock to lose by closing
                del _files[file]
                os.close(fd)
            return False
        _file_held[held] = 1
        return True


def file_unlock(file: str, key: str) -> None:
    try:
        import fcntl
    except ImportError:
        return
    held = (file, _offset(key))
    with _files_lock:
        count = _file_held.get(held, 0)
        if count > 1:
            _file_held[held] = count - 1
            return
        _file_held.pop(held, None)
        fd: Any = _files.get(file)
        if fd is not None:
            fcntl.lockf(fd, fcntl.LOCK_UN, 1, held[1], os.SEEK_SET)
            if not any(name == file for name, _ in _file_held):  # else a process claiming runs of many homes
                del _files[file]  # would keep one descriptor per home for good
                os.close(fd)
