"""Write serialisation the two engines spell differently: SQLite's BEGIN IMMEDIATE already holds the one write lock,
PostgreSQL locks rows as they are written, so a read-then-write transaction asks for its lock explicitly."""

from __future__ import annotations

from .connection import Connection, dialect_of


def for_update(conn: Connection) -> str:
    """The suffix that locks the rows a SELECT reads until the transaction ends ('' on SQLite: locked already)."""
    return " FOR UPDATE" if dialect_of(conn) == "postgresql" else ""


def serialise_writes(conn: Connection, key: int) -> None:
    """Inside a transaction: wait for every other transaction holding `key` to end, so this one's writes come after
    theirs (an identity value drawn now is committed after every smaller one). SQLite writers are serial already."""
    if dialect_of(conn) == "postgresql":
        conn.execute("SELECT pg_advisory_xact_lock(?)", (key,))
