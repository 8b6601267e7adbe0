"""One opened truth store: SQLite in the home folder or a PostgreSQL database, the engine picked once.

Every store is given a `Database` and writes through `Database.transaction`, the one transaction helper: on
PostgreSQL a connection dropped mid-write is written again on the fresh connection, unless the lost COMMIT is found
to have landed (its answer was what got lost) — nothing is written twice, nothing is lost. Every SQL difference
between the engines is a method here (modelled on DBOS's `SystemDatabase`), so no code outside db/ names the engine.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any, TypeVar

import structlog

from ..errors import ConnectionLost
from .connection import Connection, Dialect, batched, dialect_of
from .sqlite import Checkpointer, Migration, execute_script, prefix_matches
from .text_search import TextIndex, TextSearch, text_search

log = structlog.get_logger(__name__)
T = TypeVar("T")


def m001_commit_tokens(conn: Any) -> None:
    # One row per transaction a store wrote on a connection that can drop: how a lost COMMIT is found to have landed.
    conn.execute("CREATE TABLE IF NOT EXISTS _commit_tokens (token TEXT PRIMARY KEY, at REAL NOT NULL)")


TOKEN_MIGRATIONS: list[Migration] = [m001_commit_tokens]
TOKENS_KEPT_SECS = 3600.0  # a token is only asked about right after its COMMIT: an hour is plenty


class Database:
    """One connection to the truth, its write lock, and the engine's spelling of what the stores need.

    `path` is the home's store.db (on PostgreSQL too: the home is where this machine's local things are, as path's
    folder); `where` names the truth in errors and logs, never with a password.
    """

    def __init__(self, conn: Connection, *, path: Path, where: str):
        self.conn, self.path, self.where = conn, path, where
        self._dialect: Dialect = dialect_of(conn)
        # Re-entrant: a store's write may call another write of the same database inside its transaction.
        self.lock = threading.RLock()
        self.integrity_error: type[Exception] = getattr(conn, "IntegrityError", None) or _sqlite_integrity_error()
        self._checkpointer: Checkpointer | None = None
        self._checkpoint_users = 0
        self._writes = 0
        self._closed = False
        # (component, its migrations' names) already brought up to date on this Database: a store opened again on it
        # (a team run's TaskStore, each run) does not look at `_migrations` again, nor take SQLite's write lock for it.
        self._migrated: set[tuple[str, tuple[str, ...]]] = set()
        if self.lossy:
            self.migrate("transactions", TOKEN_MIGRATIONS)

    # -- opening
    @classmethod
    def open(
        cls, home: str | Path | None = None, *, path: str | Path | None = None, database: str | None = None
    ) -> Database:
        """The PostgreSQL database in force (`database`, else `--database`, else SHERPA_SKILLS_DATABASE), else the
        home's SQLite store.db. A `path` given is always that SQLite file."""
        from ..home import store_path
        from .url import database_url, describe

        url = None if path else database_url(database)
        file = Path(path) if path else store_path(home)
        if url is None:
            from .sqlite import connect

            return cls(connect(file), path=file, where=str(file))
        from .postgres import connect as connect_postgres

        return cls(connect_postgres(url), path=file, where=describe(url))

    def migrate(self, component: str, migrations: Sequence[Migration]) -> None:
        """Apply a component's missing migrations once (a schema a newer version migrated is refused): once per
        Database, every later store opened on it for the same component and migrations costs no statement."""
        key = (component, tuple(m.__name__ for m in migrations))
        with self.lock:  # its own BEGIN/ROLLBACK on the one connection: never inside another thread's write
            if key in self._migrated:
                return
            self._migrate(component, migrations)
            self._migrated.add(key)  # only once it succeeded: a refused schema is refused again

    def _migrate(self, component: str, migrations: Sequence[Migration]) -> None:
        if self._dialect == "postgresql":
            from .migrations import migrate_postgres
            from .postgres import PgConnection

            assert isinstance(self.conn, PgConnection)
            migrate_postgres(self.conn, component, migrations, self.where)
        else:
            from .sqlite import migrate

            migrate(self.conn, component, migrations)  # type: ignore[arg-type]

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        checkpointer, self._checkpointer = self._checkpointer, None
        self.conn.close()
        if checkpointer is not None:
            checkpointer.release()

    def __del__(self) -> None:
        checkpointer = getattr(self, "_checkpointer", None)
        if checkpointer is not None:
            self._checkpointer = None
            try:
                checkpointer.release(wait=False)  # the collector may run this while the guard is held, on this thread
            except Exception:  # never raise from a finaliser
                pass

    # -- what kind of truth this is (no engine named: what it means for the caller)
    @property
    def lossy(self) -> bool:
        """Whether the connection can drop mid-write (a server across a network): a write's outcome may be unknown."""
        return self._dialect == "postgresql"

    @property
    def shared(self) -> bool:
        """Whether other homes (machines) write this truth too, so a local companion must follow it."""
        return self._dialect == "postgresql"

    # -- writing
    def transaction(
        self,
        write: Callable[[Connection], T],
        *,
        what: str = "a write",
        landed: Callable[[], bool] | None = None,
        immediate: bool = True,
        batch: bool = False,
    ) -> T:
        """`write(conn)` in one transaction, its value returned; inside another transaction of this database, part of
        that one. On a connection lost mid-write, written once more on the fresh one unless the lost COMMIT landed:
        `landed` says so (a store that can tell from its own rows), else a token written with the transaction does.

        `immediate` takes SQLite's write lock up front (a read-then-write); `batch` sends the whole transaction in one
        round trip where the engine can (an error then surfaces at its end)."""
        with self.lock:
            if self.conn.in_transaction:
                return write(self.conn)
            begin = "BEGIN IMMEDIATE" if immediate else "BEGIN"
            for attempt in (1, 2):
                token = uuid.uuid4().hex if self.lossy and landed is None else None
                done = False
                value: Any = None
                conn = self.conn
                try:
                    with batched(conn) if batch else nullcontext():
                        conn.execute(begin)
                        if token is not None:
                            self._stamp(token)
                        value = write(conn)
                        done = True
                        conn.execute("COMMIT")
                    self._writes += 1
                    return value  # type: ignore[no-any-return]
                except ConnectionLost:
                    if done and (landed() if landed is not None else self._landed(token)):
                        return value  # type: ignore[no-any-return]
                    if attempt == 2:
                        raise ConnectionLost(
                            f"the connection to {self.where} dropped twice while writing {what}; nothing of it was "
                            "committed"
                        ) from None
                    log.warning("connection lost; writing again", what=what, where=self.where)
                except BaseException:
                    if conn.in_transaction:  # a Ctrl-C landing just after COMMIT has nothing to undo, and must stay one
                        try:
                            conn.execute("ROLLBACK")
                        except ConnectionLost:  # the transaction went with its connection; the first error is the one
                            pass
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def once_more(self, write: Callable[[Connection], T]) -> T:
        """A single statement that is the same written twice (an upsert, a flag set), outside any transaction: on a
        dropped connection, sent again on the fresh one.

        Sent twice, what comes back is the second sending's: when the first landed (only its answer was lost), a
        DELETE's or an INSERT ... DO NOTHING's row count is then 0 though its row went (or came), and an UPDATE's
        counts the rows its WHERE still matches after the first. A caller that branches on the count writes through
        `transaction` (a lost COMMIT that landed keeps the first try's value), or, as RunStore.mark_interrupted,
        uses an UPDATE whose WHERE still matches its own result."""
        with self.lock:
            try:
                return write(self.conn)
            except ConnectionLost:
                return write(self.conn)

    def _stamp(self, token: str) -> None:
        now = time.time()
        if self._writes % 256 == 0:
            self.conn.execute("DELETE FROM _commit_tokens WHERE at < ?", (now - TOKENS_KEPT_SECS,))
        self.conn.execute("INSERT INTO _commit_tokens (token, at) VALUES (?, ?)", (token, now))

    def _landed(self, token: str | None) -> bool:
        if token is None:
            return False
        return self.conn.execute("SELECT 1 FROM _commit_tokens WHERE token = ?", (token,)).fetchone() is not None

    # -- background upkeep
    def checkpoint_in_background(self) -> None:
        """Ticks never pay for a WAL checkpoint: a background thread does them (see Checkpointer). Counted: the last
        `stop_checkpoints` hands checkpoints back to SQLite. Nothing to do on a server."""
        if self._dialect != "sqlite":
            return
        with self.lock:
            self._checkpoint_users += 1
            if self._checkpointer is not None:
                return
            self.conn.execute("PRAGMA wal_autocheckpoint=0")
            self.conn.execute(f"PRAGMA journal_size_limit={64 * 1024 * 1024}")  # a checkpointed WAL shrinks back
            self._checkpointer = Checkpointer.acquire(self.path)

    def stop_checkpoints(self) -> None:
        with self.lock:
            self._checkpoint_users = max(0, self._checkpoint_users - 1)
            if self._checkpoint_users or self._checkpointer is None:
                return
            checkpointer, self._checkpointer = self._checkpointer, None
            if not self._closed:
                self.conn.execute("PRAGMA wal_autocheckpoint=1000")
        checkpointer.release()

    def nudge_checkpoint(self) -> None:
        """A writer says it wrote a lot: look at the WAL now rather than at the next interval."""
        if self._checkpointer is not None:
            self._checkpointer.nudge()

    # -- the engines' spellings
    def for_update(self) -> str:
        """The suffix that locks the rows a SELECT reads until the transaction ends ('' on SQLite: its write lock is
        held already)."""
        return " FOR UPDATE" if self._dialect == "postgresql" else ""

    def serialise_writes(self, key: int) -> None:
        """Inside a transaction: wait for every other transaction holding `key` to end, so this one's writes come after
        theirs. SQLite writers are serial already."""
        if self._dialect == "postgresql":
            self.conn.execute("SELECT pg_advisory_xact_lock(?)", (key,))

    def greatest(self) -> str:
        """The scalar larger-of-two function: SQLite's MAX(a, b), PostgreSQL's GREATEST(a, b)."""
        return "GREATEST" if self._dialect == "postgresql" else "MAX"

    def json_text(self, column: str, key: str) -> str:
        """The expression for `column`'s JSON object's `key` (a plain name) as text, NULL where it has none."""
        if self._dialect == "postgresql":
            return f"({column}::jsonb ->> '{key}')"
        return f"json_extract({column}, '$.{key}')"

    def json_valid(self, column: str) -> str:
        """A condition true where `column` holds JSON that `json_text` can read ('TRUE' where the engine checks)."""
        return f"json_valid({column})" if self._dialect == "sqlite" else "TRUE"

    def like(self) -> str:
        """A case-insensitive LIKE (SQLite's LIKE ignores ASCII case already)."""
        return "ILIKE" if self._dialect == "postgresql" else "LIKE"

    def prefix_matches(self, table: str, column: str, prefix: str, limit: int = 4) -> list[str]:
        """Ids starting with `prefix` taken literally (`%` and `_` are characters)."""
        return prefix_matches(self.conn, table, column, prefix, limit)

    def script(self, sql: str) -> None:
        """Statements one by one inside the caller's transaction."""
        execute_script(self.conn, sql)  # type: ignore[arg-type]

    # -- added for memory, domains and sessions
    def text_search(self, index: TextIndex) -> TextSearch:
        """Full-text search over `index` (created by `create_text_index` in the table's migration)."""
        return text_search(self.conn, index)

    def json_matches(self, column: str, key: str, value: Any) -> tuple[str, list[Any]]:
        """A condition that `column`'s JSON object holds `value` at `key` (None: JSON null or no such key), and its
        parameters. `key` is a plain name (sent as a parameter; on SQLite inside a JSON path, so no dots or brackets);
        strings, numbers and booleans compare as JSON values."""
        if self._dialect == "postgresql":  # JSON text read as jsonb, compared as JSON values
            if value is None:
                return f"COALESCE({column}::jsonb -> ?, 'null'::jsonb) = 'null'::jsonb", [key]
            return f"{column}::jsonb -> ? = ?::jsonb", [key, json.dumps(value)]
        if value is None:
            return f"json_extract({column}, ?) IS NULL", [f"$.{key}"]
        return f"json_extract({column}, ?) = ?", [f"$.{key}", value]

    # -- the run store's and the heartbeat's session locks, and a second connection (see db/advisory.py)
    def try_session_lock(self, space: int, key: str) -> bool:
        """Hold `key` (in `space`) until `session_unlock` or this process ends; re-entrant within its holder. On a
        server, held by this connection (a dropped one loses it: see `on_reconnect`); on SQLite, a record lock on a
        file beside store.db."""
        from . import advisory

        if self._dialect == "postgresql":
            return advisory.try_server_lock(self.conn, space, key)
        return advisory.try_file_lock(f"{self.path}.claims", key)

    def session_unlock(self, space: int, key: str) -> None:
        from . import advisory

        if self._dialect == "postgresql":
            advisory.server_unlock(self.conn, space, key)
        else:
            advisory.file_unlock(f"{self.path}.claims", key)

    def on_reconnect(self, again: Callable[[], None]) -> None:
        """`again` runs on each fresh connection that replaces a dropped one (session locks died with the old one)."""
        if self._dialect == "postgresql":
            self.conn.on_reconnect.append(again)  # type: ignore[attr-defined]

    def hold_alone(self, key: str) -> bool:
        """On a shared truth: take the one lock every home sharing it contends for (the heartbeat's), on a connection
        of its own that the server lets go of when this process dies; False when another holder has it."""
        from .advisory import try_hold

        return try_hold(self._url(), key)

    def still_holds_alone(self, key: str) -> bool:
        """Whether `hold_alone(key)` still holds (taken again when its connection dropped and nobody took it)."""
        from .advisory import still_holds

        return still_holds(self._url(), key)

    def let_go_alone(self, key: str) -> bool:
        from .advisory import let_go

        return let_go(self._url(), key)

    def _url(self) -> str:
        url = getattr(self.conn, "url", None)
        if not isinstance(url, str):
            raise AssertionError("a lock held apart from the store's connection needs a database server")
        return url

    def another(self) -> Database:
        """A second `Database` on the same truth, with a connection of its own (its transactions and row locks apart
        from this one's): the caller closes it."""
        if self._dialect == "postgresql":
            from .postgres import connect as connect_postgres

            return Database(connect_postgres(self._url()), path=self.path, where=self.where)
        from .sqlite import connect

        return Database(connect(self.path), path=self.path, where=self.where)

    def skip_locked(self) -> str:
        """The suffix that locks the rows a SELECT reads and skips those another transaction locked ('' on SQLite:
        one writer at a time)."""
        return " FOR UPDATE SKIP LOCKED" if self._dialect == "postgresql" else ""


def _sqlite_integrity_error() -> type[Exception]:
    import sqlite3

    return sqlite3.IntegrityError


def given_or_opened(
    db: Database | None, *, home: str | Path | None, path: str | Path | None, database: str | None
) -> tuple[Database, bool]:
    """What every store's constructor does with its arguments: the `Database` it was given (whoever opened it closes
    it), else one opened from `home`/`path`/`database` for this store alone (True: the store closes it)."""
    if db is not None:
        from ..errors import UsageError

        if not isinstance(db, Database):  # the earlier positional form, a path or home first
            raise UsageError(
                f"a store takes a Database first, not {type(db).__name__} {str(db)!r}: give a home folder as home=, "
                "a SQLite file as path="
            )
        if home is not None or path is not None or database is not None:
            raise UsageError("give a store either a Database or where to open one (home, path, database), not both")
        return db, False
    return Database.open(home, path=path, database=database), True
