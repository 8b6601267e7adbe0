"""Opening a component's truth: the PostgreSQL database in force (`--database`, SHERPA_SKILLS_DATABASE), else the
home's SQLite store.db, migrated either way. A path given explicitly is always that SQLite file."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..home import store_path
from .connection import Connection
from .sqlite import Migration, connect, migrate
from .url import database_url, describe


def open_truth(
    component: str,
    migrations: Sequence[Migration],
    *,
    home: str | Path | None = None,
    path: str | Path | None = None,
    database: str | None = None,
) -> tuple[Connection, Path, str]:
    """(connection, the home's store.db path, where the truth is, as errors name it)."""
    url = None if path else database_url(database)
    # On PostgreSQL too the home is where this machine's local things are (its companion, logs): path's folder.
    file = Path(path) if path else store_path(home)
    if url is None:
        lite = connect(file)
        migrate(lite, component, migrations)
        return lite, file, str(file)
    from .migrations import connect_migrated

    return connect_migrated(url, component, migrations), file, describe(url)
