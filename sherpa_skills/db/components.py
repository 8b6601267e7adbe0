"""A part of the truth store as `db copy` walks it, one at a time (the command lists them: they sit in higher layers).

A component's tables are whatever its migrations create; its schema on any database comes from those migrations alone.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .connection import Connection
from .sqlite import Migration


@dataclass(frozen=True)
class Component:
    name: str
    migrations: Sequence[Migration]
    #: Derived SQLite rows the copy makes again when the source kept none (PostgreSQL has no FTS5 table for them).
    refill: Callable[[Connection], None] | None = None
    #: The component whose migrations made this one's tables before it had its own (a source migrated then recorded
    #: only that one): its tables are copied from such a source too.
    moved_from: str | None = None


def fresh_schema(component: Component) -> sqlite3.Connection:
    """The component's tables as its migrations make them on an empty SQLite database, in memory: which tables are its
    own, and which rows the migrations themselves put there (a store's identity, a counter)."""
    from .sqlite import migrate

    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrate(conn, component.name, component.migrations)
    return conn
