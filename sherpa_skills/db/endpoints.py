"""The two ends of a copy: a home folder (its store.db) or a postgresql:// URL, opened as a store would open them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import StoreFileError
from .connection import Connection, Dialect, dialect_of
from .sqlite import Migration
from .url import check, describe, parse


@dataclass
class Endpoint:
    conn: Connection
    label: str  # what messages name: the store file, or the database by host and name (never a password)
    identity: str  # two ends with the same identity are one store

    @property
    def dialect(self) -> Dialect:
        return dialect_of(self.conn)

    def migrate(self, component: str, migrations: Sequence[Migration]) -> None:
        """The component's migrations, as opening its store applies them."""
        if self.dialect == "postgresql":
            from .migrations import migrate_postgres
            from .postgres import PgConnection

            assert isinstance(self.conn, PgConnection)
            migrate_postgres(self.conn, component, migrations, self.label)
        else:
            from .sqlite import migrate

            migrate(self.conn, component, migrations)  # type: ignore[arg-type]

    def applied(self, component: str) -> set[str]:
        """The component's migrations this database has applied (none: the component was never opened on it)."""
        if self.dialect == "postgresql":
            present = self.conn.execute("SELECT to_regclass('_migrations')").fetchone()[0] is not None
        else:
            present = (
                self.conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'"
                ).fetchone()
                is not None
            )
        if not present:
            return set()
        return {r[0] for r in self.conn.execute("SELECT name FROM _migrations WHERE component = ?", (component,))}

    def close(self) -> None:
        self.conn.close()


def is_url(spec: str) -> bool:
    return "://" in spec


def open_endpoint(spec: str, *, option: str, create: bool) -> Endpoint:
    """`spec` a postgresql:// URL or a home folder; a source home must exist and hold a store (`create` False)."""
    if is_url(spec):
        check(spec, source=option)
        from .postgres import connect

        parts = parse(spec, source=option)
        conn = connect(spec)
        identity = "|".join(str(parts.get(k) or "") for k in ("host", "port", "dbname"))
        return Endpoint(conn, describe(spec), "postgresql:" + identity)
    from ..home import store_path
    from .sqlite import connect as connect_sqlite

    folder = Path(spec).expanduser()
    if not create:
        if not folder.is_dir():
            raise StoreFileError(f"{option}: '{folder}' is not a home folder (no such folder)")
        if not (folder / "store.db").is_file():
            raise StoreFileError(f"{option}: '{folder}' holds no store.db: nothing to copy")
    path = store_path(folder)  # a target home is created when missing
    return Endpoint(connect_sqlite(path), f"'{path.resolve()}'", "sqlite:" + str(path.resolve()))
