"""The heartbeat lock on PostgreSQL: a session advisory lock, held by a connection of its own for as long as the
heartbeat runs (its phases open and close their stores meanwhile), released by the server itself when the holding
process dies: no clock, pid or host is trusted to decide a holder is gone."""

from __future__ import annotations

import threading

from .postgres import PgConnection, connect

HEARTBEAT_LOCK = 0x5348_4552_5041_0002  # "SHERPA" 2: the key of pg_try_advisory_lock(bigint)

_held: dict[tuple[str, str], PgConnection] = {}  # (url, heartbeat run id) → the connection holding the lock
_guard = threading.Lock()


def try_hold(url: str, run_id: str) -> bool:
    """Take the lock for `run_id` unless any process (this one included, under another run id) holds it."""
    with _guard:
        if (url, run_id) in _held:
            return True
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
