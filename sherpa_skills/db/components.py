"""Every part of the truth store and where its migrations are: what `db copy` walks, one component at a time.

A component's tables are whatever its migrations create; its schema on any database comes from those migrations alone.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import import_module

from ..sqlite_db import Migration

# (component, module holding its MIGRATIONS): imported only when a copy asks, so `--help` stays fast.
COMPONENTS: tuple[tuple[str, str], ...] = (
    ("runs", "sherpa_skills.engine.runstore"),
    ("heartbeat", "sherpa_skills.heartbeat.state"),
    ("skills", "sherpa_skills.skills.store.database"),
    ("sessions", "sherpa_skills.sessions._store"),
    ("memory", "sherpa_skills.memory._store"),
    ("domains", "sherpa_skills.memory.domains"),
)


@dataclass(frozen=True)
class Component:
    name: str
    migrations: Sequence[Migration]


def components() -> list[Component]:
    return [Component(name, import_module(module).MIGRATIONS) for name, module in COMPONENTS]


def fresh_schema(component: Component) -> sqlite3.Connection:
    """The component's tables as its migrations make them on an empty SQLite database, in memory: which tables are its
    own, and which rows the migrations themselves put there (a store's identity, a counter)."""
    from ..sqlite_db import migrate

    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrate(conn, component.name, component.migrations)
    return conn
