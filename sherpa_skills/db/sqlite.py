"""One SQLite connection setup and one migration mechanism for every table the project keeps."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import StoreFileError

if TYPE_CHECKING:
    pass

Migration = Callable[[sqlite3.Connection], None]


def connect(path: str | Path, *, timeout: float = 30.0) -> sqlite3.Connection:
    """WAL with synchronous=NORMAL: a commit survives a killed process (not a power cut) without an fsync each.

    A file that is not SQLite (a stray store.db, a wrong --home) is refused with StoreFileError,
    not a raw sqlite3 error.
    """
    try:
        conn = sqlite3.connect(str(path), timeout=timeout, isolation_level=None, check_same_thread=False)
        # The busy timeout comes first: every later statement, the journal-mode switch included,
        # waits for other openers.
        conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
        _switch_to_wal(conn, timeout)
    except sqlite3.DatabaseError as exc:
        raise StoreFileError(
            f"'{path}' is not a usable SQLite database ({exc}); point --home at another folder or move the file away"
        ) from None
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


def _is_busy(exc: sqlite3.Error) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc))


def _retry_busy(step: Callable[[], Any], timeout: float) -> Any:
    """Run `step` again while SQLite says busy without having waited (a lock upgrade it refuses to wait for),
    up to `timeout`."""
    deadline, pause = time.monotonic() + timeout, 0.005
    while True:
        try:
            return step()
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def _switch_to_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """A fresh file's switch to WAL needs an exclusive lock; when two openers both hold a shared one, SQLite fails one
    of them at once with 'database is locked' instead of calling the busy handler, so the switch is retried."""

    def switch() -> None:
        if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            conn.execute("PRAGMA journal_mode=WAL")

    _retry_busy(switch, timeout)


def prefix_matches(conn: Any, table: str, column: str, prefix: str, limit: int = 4) -> list[str]:
    """Ids starting with `prefix` taken literally: `%` and `_` are characters, not LIKE wildcards;
    no prefix matches nothing."""
    if not prefix:
        return []
    pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    return [
        r[0]
        for r in conn.execute(
            f"SELECT {column} FROM {table} WHERE {column} LIKE ? ESCAPE '\\' ORDER BY {column} LIMIT ?",
            (pattern, limit),
        )
    ]


def migrate(
    conn: sqlite3.Connection, component: str, migrations: Sequence[Migration], *, timeout: float = 30.0
) -> None:
    """Apply each named migration of a component once, in order, recording it in `_migrations`.

    Every write is inside BEGIN IMMEDIATE (the write lock taken up front, waited for by the busy timeout), so two
    processes migrating a fresh file never meet halfway through a read-then-write upgrade that
    SQLite refuses to wait for.
    """
    _retry_busy(lambda: _create_migrations_table(conn), timeout)
    done = {row[0] for row in conn.execute("SELECT name FROM _migrations WHERE component = ?", (component,))}
    refuse_newer(component, done, migrations, _file_of(conn))
    for migration in migrations:
        if migration.__name__ in done:
            continue
        _retry_busy(lambda: conn.execute("BEGIN IMMEDIATE"), timeout)
        try:
            # Another process may have applied it while we waited for the lock.
            if conn.execute(
                "SELECT 1 FROM _migrations WHERE component = ? AND name = ?", (component, migration.__name__)
            ).fetchone():
                conn.execute("COMMIT")
                continue
            migration(conn)
            conn.execute("INSERT INTO _migrations (component, name) VALUES (?, ?)", (component, migration.__name__))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def refuse_newer(component: str, applied: set[str], migrations: Sequence[Migration], where: str) -> None:
    """A schema that a newer sherpa-skills migrated (a migration name this code does not know) is not opened: this code
    would write rows that version no longer reads as it expects."""
    unknown = sorted(applied - {m.__name__ for m in migrations})
    if unknown:
        raise StoreFileError(
            f"{where}: its '{component}' tables were migrated by a newer sherpa-skills ({', '.join(unknown[:3])} "
            "unknown to this version); upgrade sherpa-skills to open it"
        )


def _file_of(conn: sqlite3.Connection) -> str:
    row = conn.execute("PRAGMA database_list").fetchone()
    return f"'{row[2]}'" if row and row[2] else "the database"


def _create_migrations_table(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS _migrations (component TEXT, name TEXT, "
            "applied REAL DEFAULT (strftime('%s','now')), PRIMARY KEY (component, name))"
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def execute_script(conn: sqlite3.Connection, sql: str) -> None:
    """Run statements one by one inside the caller's transaction (executescript would commit it)."""
    buffer = ""
    for line in sql.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            conn.execute(buffer)
            buffer = ""
    if buffer.strip():
        conn.execute(buffer)


class Checkpointer:
    """Moves the WAL into the database from a background thread, so no tick pays for a checkpoint.

    SQLite's automatic checkpoint runs inside the commit that crosses the threshold (with fsyncs); a
    run store turns it off and lets this thread run PASSIVE checkpoints, which never block writers.
    """

    _shared: dict[str, tuple[Checkpointer, int]] = {}
    _guard = threading.Lock()
    # Releases a finaliser could not make without waiting for the guard (the collector may run it inside `acquire`, on
    # the thread holding it): made by the next acquire. list.append needs no lock.
    _deferred: list[Checkpointer] = []

    def __init__(self, path: str, interval: float, wal_bytes: int):
        self.path, self.interval, self.wal_bytes = path, interval, wal_bytes
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"sherpa-checkpoint:{Path(path).name}", daemon=True)
        self._thread.start()

    @classmethod
    def acquire(cls, path: str | Path, interval: float = 0.5, wal_bytes: int = 4 * 1024 * 1024) -> Checkpointer:
        key = str(Path(path).resolve())
        while cls._deferred:
            try:
                deferred = cls._deferred.pop()
            except IndexError:  # another thread took the last one
                break
            deferred.release()
        with cls._guard:
            found = cls._shared.get(key)
            checkpointer = found[0] if found else cls(key, interval, wal_bytes)
            cls._shared[key] = (checkpointer, (found[1] if found else 0) + 1)
        return checkpointer

    def release(self, *, wait: bool = True) -> None:
        """One user fewer; the last stops the thread. A finaliser passes `wait=False`: when the guard is held, the
        release is left for the next acquire rather than waited for (a wait that can never end
        on the holding thread)."""
        if not self._guard.acquire(blocking=wait):
            self._deferred.append(self)
            return
        try:
            checkpointer, users = self._shared.get(self.path, (self, 1))
            if users > 1:
                self._shared[self.path] = (checkpointer, users - 1)
                return
            self._shared.pop(self.path, None)
        finally:
            self._guard.release()
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=5)
        self.checkpoint()

    def nudge(self) -> None:
        """A writer says it wrote a lot: look at the WAL now rather than at the next interval."""
        self._wake.set()

    def checkpoint(self) -> None:
        try:
            conn = sqlite3.connect(self.path, timeout=1.0, isolation_level=None)
            try:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            finally:
                conn.close()
        except sqlite3.Error:
            pass  # a busy or vanished database is checkpointed next time, or by SQLite itself

    def _loop(self) -> None:
        wal = Path(self.path + "-wal")
        while not self._stop.is_set():
            self._wake.wait(self.interval)
            self._wake.clear()
            if self._stop.is_set():
                break
            try:
                if wal.stat().st_size >= self.wal_bytes:
                    self.checkpoint()
            except OSError:
                continue
