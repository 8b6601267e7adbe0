"""The engines' spellings for code handed a bare connection (a store's callback, a caller's `conn`), not a Database."""

from __future__ import annotations

from .connection import Connection, dialect_of
from .sql import json_text


def has_table(conn: Connection, name: str) -> bool:
    """Whether the table exists (a component's tables exist only once its store was opened on this database)."""
    if dialect_of(conn) == "postgresql":
        return conn.execute("SELECT to_regclass(?)", (name,)).fetchone()[0] is not None
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None


def json_field(conn: Connection, column: str, key: str) -> str:
    """As `Database.json_text`: the expression for `column`'s JSON object's `key` as text, NULL where it has none."""
    return json_text(dialect_of(conn), column, key)
