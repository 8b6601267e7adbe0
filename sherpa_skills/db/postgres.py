"""PostgreSQL connections shaped like the sqlite3 ones the stores use: `execute`, `executemany`, `in_transaction`.

Connections come from one psycopg pool per URL and process, in autocommit mode: a store opens its transactions
itself with BEGIN … COMMIT, as it does on SQLite. A server that cannot be reached, or refuses the credentials, is a
StoreFileError naming the host and the database, never the password.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from ..errors import StoreFileError
from .sql import to_postgres
from .url import describe, parse, scrub

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

_pools: dict[str, ConnectionPool[Any]] = {}
_pools_lock = threading.Lock()
CONNECT_TIMEOUT = 10  # seconds; libpq's own default waits forever for a host that drops packets
POOL_SIZE = 16


class PgConnection:
    """One pooled connection, spoken to as a sqlite3.Connection is (the SQLite spelling translated, see db.sql)."""

    dialect = "postgresql"

    def __init__(self, raw: psycopg.Connection[Any], pool: ConnectionPool[Any] | None, url: str):
        import psycopg

        self.raw, self._pool, self.url = raw, pool, url
        self.IntegrityError = (
            psycopg.IntegrityError
        )  # as sqlite3.Connection.IntegrityError: `except conn.IntegrityError`

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> psycopg.Cursor[Any]:
        cursor = self.raw.cursor()
        cursor.execute(to_postgres(sql, bool(params)), params or None)  # type: ignore[arg-type]
        return cursor

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> psycopg.Cursor[Any]:
        cursor = self.raw.cursor()
        cursor.executemany(to_postgres(sql, True), rows)  # type: ignore[arg-type]
        return cursor

    def pipeline(self) -> AbstractContextManager[Any]:
        """Statements sent without waiting for each one's answer, all answered at the block's end: one round trip
        (an error surfaces there, and the statements after it in the block do not run)."""
        return self.raw.pipeline()

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return self.raw.info.transaction_status != TransactionStatus.IDLE

    def close(self) -> None:
        """Back to the pool (a transaction left open is rolled back there), or closed when it has none."""
        raw, self.raw = self.raw, None  # type: ignore[assignment]
        if raw is None:
            return
        if self._pool is not None:
            try:  # session locks (run claims, the heartbeat's) must not outlive the store that took them
                if raw.info.transaction_status == 0:  # idle
                    raw.execute("SELECT pg_advisory_unlock_all()")
            except Exception:  # a broken connection: the pool discards it
                pass
            self._pool.putconn(raw)
        else:
            raw.close()


def connect(url: str) -> PgConnection:
    """A connection from the URL's pool; the first for a URL in this process checks the server answers, so a wrong
    host or password says so (a pool would only time out)."""
    pool = _pools.get(url)
    if pool is None:
        with _pools_lock:
            pool = _pools.get(url)
            if pool is None:
                pool = _pools[url] = _open_pool(url)
    try:
        raw = pool.getconn(timeout=CONNECT_TIMEOUT)
    except Exception as exc:  # the pool's timeout hides libpq's reason: ask libpq once more, directly
        _probe(url)
        raise StoreFileError(f"cannot open {describe(url)}: {scrub(str(exc), url)}") from None
    return PgConnection(raw, pool, url)


def _open_pool(url: str) -> ConnectionPool[Any]:
    try:
        from psycopg_pool import ConnectionPool
    except ImportError:
        raise StoreFileError(
            "SHERPA_SKILLS_DATABASE names a PostgreSQL database, but psycopg-pool is not installed: "
            "pip install 'sherpa-skills[postgres]'"
        ) from None
    parse(url)  # psycopg is there and the URL reads
    _probe(url)
    pool: ConnectionPool[Any] = ConnectionPool(
        url,
        min_size=0,
        max_size=POOL_SIZE,
        kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT},
        open=True,
        name="sherpa-skills",
    )
    return pool


def _probe(url: str) -> None:
    import psycopg

    try:
        psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT).close()
    except psycopg.Error as exc:
        raise StoreFileError(f"cannot open {describe(url)}: {_reason(exc, url)}") from None


def _reason(exc: Exception, url: str) -> str:
    """libpq's message in one line, without its hints or the password (libpq never prints it; a URL echoed could)."""
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return scrub(text, url)[:400] or type(exc).__name__


def close_pools() -> None:
    """Close every pool of this process (tests, and a process about to exit)."""
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.close()
