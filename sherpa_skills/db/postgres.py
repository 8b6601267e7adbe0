"""PostgreSQL connections shaped like the sqlite3 ones the stores use: `execute`, `executemany`, `in_transaction`.

Connections come from one psycopg pool per URL and process, in autocommit mode: a store opens its transactions
itself with BEGIN … COMMIT, as it does on SQLite. A server that cannot be reached, or refuses the credentials, is a
StoreFileError naming the host and the database, never the password.

A connection the server dropped (restarted, or the backend terminated) is swapped for a fresh one from the pool the
moment a statement finds it broken: a read outside a transaction is simply asked again; anything else raises
ConnectionLost, and the store that wrote it decides (see engine/runstore.py). Session state (advisory locks) died with
the old connection: whoever holds such state takes it again through `on_reconnect`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..errors import ConnectionLost, StoreFileError
from .sql import to_postgres
from .url import describe, parse, scrub

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

_pools: dict[str, ConnectionPool[Any]] = {}
_pools_lock = threading.Lock()
CONNECT_TIMEOUT = 10  # seconds; libpq's own default waits forever for a host that drops packets
POOL_SIZE = 16
RECONNECT_WINDOW = 30  # seconds a dropped connection is tried again for: a server restart takes a few


class PgConnection:
    """One pooled connection, spoken to as a sqlite3.Connection is (the SQLite spelling translated, see db.sql)."""

    dialect = "postgresql"

    def __init__(self, raw: psycopg.Connection[Any], pool: ConnectionPool[Any] | None, url: str):
        import psycopg

        self.raw, self._pool, self.url = raw, pool, url
        self.on_reconnect: list[Callable[[], None]] = []  # what takes session state (locks) again on a new connection
        self._reconnecting = False
        self.IntegrityError = (
            psycopg.IntegrityError
        )  # as sqlite3.Connection.IntegrityError: `except conn.IntegrityError`

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> psycopg.Cursor[Any]:
        query = to_postgres(sql, bool(params))
        return self._run(sql, lambda cursor: cursor.execute(query, params or None))  # type: ignore[arg-type]

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> psycopg.Cursor[Any]:
        query = to_postgres(sql, True)
        rows = list(rows)  # sent again after a reconnect
        return self._run(sql, lambda cursor: cursor.executemany(query, rows))  # type: ignore[arg-type]

    def _run(self, sql: str, send: Callable[[psycopg.Cursor[Any]], object]) -> psycopg.Cursor[Any]:
        import psycopg

        outside = not self.in_transaction
        cursor = self.raw.cursor()
        try:
            send(cursor)
            return cursor
        except psycopg.OperationalError as exc:
            if not _lost(self.raw, exc) or self._reconnecting:
                raise
        self.reconnect()
        if outside and sql.lstrip()[:6].upper() == "SELECT":  # a read on its own: nothing was written, ask again
            cursor = self.raw.cursor()
            send(cursor)
            return cursor
        raise ConnectionLost(
            f"the connection to {describe(self.url)} was lost during a statement; reconnected, the statement's outcome "
            "is unknown"
        )

    def reconnect(self) -> None:
        """Swap the dropped raw connection for a live one (the pool's idle ones may have died with it: each is tried),
        for up to RECONNECT_WINDOW seconds; then `on_reconnect`. StoreFileError when the server stays away."""
        import psycopg

        deadline = time.monotonic() + RECONNECT_WINDOW
        while True:
            try:
                fresh = self._pool.getconn(timeout=CONNECT_TIMEOUT) if self._pool else _direct(self.url)
            except Exception as exc:  # the pool's timeout, or libpq's refusal while the server restarts
                fresh, reason = None, exc
            if fresh is not None:
                try:
                    fresh.execute("SELECT 1")
                    break
                except psycopg.Error as exc:
                    reason = exc
                    self._give_back(fresh)
            if time.monotonic() > deadline:
                why = f"lost the connection to {describe(self.url)}, and it answers no more"
                raise StoreFileError(f"{why}: {_reason(reason, self.url)}") from None
            time.sleep(0.2)
        self._give_back(self.raw)
        self.raw = fresh
        self._reconnecting = True
        try:
            for again in self.on_reconnect:
                again()
        finally:
            self._reconnecting = False

    def _give_back(self, raw: psycopg.Connection[Any]) -> None:
        """A dropped connection closed and handed back to the pool, which discards it (one that only looks alive,
        left mid-command, must not go back to serve another store)."""
        try:
            raw.close()
            if self._pool is not None:
                self._pool.putconn(raw)
        except Exception:  # already gone either way
            pass

    @contextmanager
    def pipeline(self) -> Iterator[None]:
        """Statements sent without waiting for each one's answer, all answered at the block's end: one round trip
        (an error surfaces there, and the statements after it in the block do not run). A connection found dropped
        only there is swapped as a statement's would be, and its outcome is as unknown (ConnectionLost)."""
        import psycopg

        raw = self.raw
        try:
            with raw.pipeline():
                yield
        except psycopg.OperationalError as exc:
            if self.raw is not raw or not _lost(raw, exc) or self._reconnecting:
                raise
            self.reconnect()
            raise ConnectionLost(
                f"the connection to {describe(self.url)} was lost while a batch was answered; reconnected, its outcome "
                "is unknown"
            ) from None

    @property
    def in_transaction(self) -> bool:
        """Inside BEGIN … COMMIT (a batch under way counts: its statements are queued). A connection libpq left
        mid-command outside a batch, or found broken, holds no transaction any more: the next statement finds it
        lost and swaps it."""
        from psycopg.pq import PipelineStatus, TransactionStatus

        status = self.raw.info.transaction_status
        if status == TransactionStatus.ACTIVE:
            return self.raw.pgconn.pipeline_status != PipelineStatus.OFF
        return status in (TransactionStatus.INTRANS, TransactionStatus.INERROR)

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


def _lost(raw: psycopg.Connection[Any], exc: Exception) -> bool:
    """Whether an OperationalError means the connection is gone, however libpq said it: marked broken; the server's
    own word (a connection exception, 08…, or the backend shut down, 57P01–57P03) before libpq saw the socket close;
    or, outside a batch, a send refused with libpq still mid-command (status ACTIVE or UNKNOWN), which nothing but a
    new connection clears. A statement timeout or a lock refused (57014, 55P03) leaves a usable connection, and in a
    batch libpq is busy by design (an error there, and the statements queued after it, are the batch's): not lost."""
    from psycopg.errors import PipelineAborted
    from psycopg.pq import PipelineStatus, TransactionStatus

    if raw.broken or raw.closed:
        return True
    state = getattr(exc, "sqlstate", None) or ""
    if state.startswith("08") or state in ("57P01", "57P02", "57P03"):
        return True
    if isinstance(exc, PipelineAborted) or raw.pgconn.pipeline_status != PipelineStatus.OFF:
        return False
    return raw.info.transaction_status in (TransactionStatus.ACTIVE, TransactionStatus.UNKNOWN)


def _direct(url: str) -> psycopg.Connection[Any]:
    import psycopg

    return psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT)


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
        _direct(url).close()
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
