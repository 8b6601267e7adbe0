"""What the stores ask of a connection, whichever engine is behind it: sqlite3.Connection and db.postgres.PgConnection
both are one."""

from __future__ import annotations

from typing import Any, Literal, Protocol

Dialect = Literal["sqlite", "postgresql"]


class Connection(Protocol):
    @property
    def in_transaction(self) -> bool: ...

    def execute(self, sql: str, parameters: Any = ..., /) -> Any: ...

    def executemany(self, sql: str, parameters: Any, /) -> Any: ...

    def close(self) -> None: ...


def dialect_of(conn: Connection) -> Dialect:
    return "postgresql" if getattr(conn, "dialect", None) == "postgresql" else "sqlite"
