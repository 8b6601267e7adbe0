"""What the stores ask of a connection, whichever engine is behind it: sqlite3.Connection and db.postgres.PgConnection
both are one."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
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


def batched(conn: Connection) -> AbstractContextManager[Any]:
    """A block whose statements PostgreSQL receives in one round trip (psycopg's pipeline mode); on SQLite, in-process,
    a plain block. Errors surface at the block's end there, not at the statement."""
    pipeline = getattr(conn, "pipeline", None)
    return pipeline() if pipeline is not None else nullcontext()
