"""The same named migrations on PostgreSQL: the SQLite schema statements translated (db.sql.postgres_ddl), all of a
start's missing ones in one transaction under an advisory lock, so machines starting at once migrate once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .postgres import PgConnection
from .sql import postgres_ddl
from .sqlite import Migration, refuse_newer

# pg_advisory_xact_lock's key for "the schema is being migrated": one for every component, migrations are rare.
MIGRATION_LOCK = 0x5348_4552_5041_0001  # "SHERPA" 1


class _SchemaConnection:
    """What a migration is given on PostgreSQL: its statements pass through the schema translation first."""

    dialect = "postgresql"

    def __init__(self, conn: PgConnection):
        self.conn = conn

    @property
    def in_transaction(self) -> bool:
        return self.conn.in_transaction

    def execute(self, sql: str, parameters: Sequence[Any] | None = None) -> Any:
        return self.conn.execute(postgres_ddl(sql), parameters)

    def executemany(self, sql: str, rows: Any) -> Any:
        return self.conn.executemany(sql, rows)

    def close(self) -> None:
        pass


def migrate_postgres(conn: PgConnection, component: str, migrations: Sequence[Migration], where: str) -> None:
    """Apply the component's missing migrations once, recording each in `_migrations`; a schema migrated by a newer
    version (a name this code does not know) is refused."""
    done = _applied(conn, component)
    refuse_newer(component, done, migrations, where)
    if all(m.__name__ in done for m in migrations):
        return  # the common start: no lock taken
    conn.execute("BEGIN")
    try:
        conn.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS _migrations (component TEXT, name TEXT, "
            "applied DOUBLE PRECISION DEFAULT extract(epoch from now()), PRIMARY KEY (component, name))"
        )
        done = _applied(conn, component)  # another machine may have migrated while this one waited for the lock
        refuse_newer(component, done, migrations, where)
        schema = _SchemaConnection(conn)
        for migration in migrations:
            if migration.__name__ in done:
                continue
            migration(schema)  # type: ignore[arg-type]  # written for sqlite3, spoken through the translation
            conn.execute("INSERT INTO _migrations (component, name) VALUES (?, ?)", (component, migration.__name__))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _applied(conn: PgConnection, component: str) -> set[str]:
    if conn.execute("SELECT to_regclass('_migrations')").fetchone()[0] is None:  # type: ignore[index]
        return set()
    return {r[0] for r in conn.execute("SELECT name FROM _migrations WHERE component = ?", (component,))}


def connect_migrated(url: str, component: str, migrations: Sequence[Migration]) -> PgConnection:
    """A pooled connection to `url`'s database with the component's schema migrated: how every store opens PostgreSQL
    (the connection goes back to its pool when the schema is refused)."""
    from .postgres import connect
    from .url import describe

    conn = connect(url)
    try:
        migrate_postgres(conn, component, migrations, describe(url))
    except BaseException:
        conn.close()
        raise
    return conn
