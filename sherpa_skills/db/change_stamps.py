"""Rows that say when they last changed, spelled per engine: triggers stamp a column with a version's value at each
write of the columns a reader reads, and count removed rows, so a reader holding an earlier version reads only the
rows written since (and everything again after a removal)."""

from __future__ import annotations

from dataclasses import dataclass

from .connection import Connection, dialect_of
from .sqlite import execute_script


@dataclass(frozen=True)
class ChangeStamps:
    """`table`'s rows stamped in `column` (an INTEGER the migration added) with `version` (a scalar SQL expression) when
    any of `read` is written; `removed` (a statement) runs once per removed row. `key` is the table's integer key."""

    table: str
    key: str
    column: str
    read: tuple[str, ...]
    version: str
    removed: str


def create_change_stamps(conn: Connection, stamps: ChangeStamps) -> None:
    """The triggers, in the migration that adds the column (rows written later are stamped as they are written)."""
    if dialect_of(conn) == "postgresql":
        for statement in _postgres_ddl(stamps):  # one by one: a function's body holds semicolons
            conn.execute(statement)
    else:
        execute_script(conn, _sqlite_ddl(stamps))  # type: ignore[arg-type]


def _sqlite_ddl(s: ChangeStamps) -> str:
    stamp = f"UPDATE {s.table} SET {s.column} = {s.version} WHERE {s.key} = NEW.{s.key};"
    return f"""
        CREATE TRIGGER {s.table}_{s.column}_insert AFTER INSERT ON {s.table} BEGIN
            {stamp}
        END;
        CREATE TRIGGER {s.table}_{s.column}_update AFTER UPDATE OF {", ".join(s.read)} ON {s.table} BEGIN
            {stamp}
        END;
        CREATE TRIGGER {s.table}_{s.column}_removed AFTER DELETE ON {s.table} BEGIN
            {s.removed};
        END;
"""


def _postgres_ddl(s: ChangeStamps) -> list[str]:
    # A BEFORE trigger sets the stamp in the row being written; the functions are named for the table they serve.
    return [
        f"CREATE FUNCTION sherpa_{s.table}_{s.column}() RETURNS trigger LANGUAGE plpgsql AS"
        f" $$ BEGIN NEW.{s.column} := {s.version}; RETURN NEW; END $$",
        f"CREATE TRIGGER {s.table}_{s.column} BEFORE INSERT OR UPDATE OF {', '.join(s.read)} ON {s.table}"
        f" FOR EACH ROW EXECUTE FUNCTION sherpa_{s.table}_{s.column}()",
        f"CREATE FUNCTION sherpa_{s.table}_{s.column}_removed() RETURNS trigger LANGUAGE plpgsql AS"
        f" $$ BEGIN {s.removed}; RETURN NULL; END $$",
        f"CREATE TRIGGER {s.table}_{s.column}_removed AFTER DELETE ON {s.table}"
        f" FOR EACH ROW EXECUTE FUNCTION sherpa_{s.table}_{s.column}_removed()",
    ]
