"""One SQLite connection setup and one migration mechanism for every table the project keeps."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Callable

Migration = Callable[[sqlite3.Connection], None]


def connect(path: str | Path, *, timeout: float = 30.0) -> sqlite3.Connection:
    """WAL with synchronous=NORMAL: a commit survives a killed process (not a power cut) without an fsync each."""
    conn = sqlite3.connect(str(path), timeout=timeout, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
    return conn


def migrate(conn: sqlite3.Connection, component: str, migrations: list[Migration]) -> None:
    """Apply each named migration of a component once, in order, recording it in `_migrations`."""
    conn.execute("CREATE TABLE IF NOT EXISTS _migrations (component TEXT, name TEXT, applied REAL DEFAULT (strftime('%s','now')), PRIMARY KEY (component, name))")
    done = {row[0] for row in conn.execute("SELECT name FROM _migrations WHERE component = ?", (component,))}
    for migration in migrations:
        if migration.__name__ in done:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have applied it while we waited for the lock.
            if conn.execute("SELECT 1 FROM _migrations WHERE component = ? AND name = ?", (component, migration.__name__)).fetchone():
                conn.execute("COMMIT")
                continue
            migration(conn)
            conn.execute("INSERT INTO _migrations (component, name) VALUES (?, ?)", (component, migration.__name__))
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
