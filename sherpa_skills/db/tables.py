"""What a database holds, read from its own catalog (SQLite's sqlite_master and PRAGMAs, PostgreSQL's
information_schema): tables, their columns, keys and foreign keys, and which tables are derived from others."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .connection import Connection, dialect_of

# FTS5 keeps a virtual table's index in these tables beside it.
FTS5_SHADOWS = ("_data", "_idx", "_content", "_docsize", "_config")
_EXTERNAL_CONTENT = re.compile(r"\bcontent\s*=\s*'([^']+)'", re.I)


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # as the catalog spells it, lower case
    generated: bool = False  # computed by the database: never written
    identity_always: bool = False  # PostgreSQL GENERATED ALWAYS AS IDENTITY: written only with OVERRIDING SYSTEM VALUE
    identity: bool = False  # an identity column whose sequence must move past the copied values


@dataclass(frozen=True)
class FullText:
    """An FTS5 table: `external` when it indexes another table's rows (content='…'), so it is rebuilt rather than
    copied; otherwise it holds its own text, which is data like any table's."""

    name: str
    external: bool


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def full_text_tables(conn: Connection) -> list[FullText]:
    if dialect_of(conn) != "sqlite":
        return []
    rows = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%USING fts5%'"
    ).fetchall()
    return [FullText(name, _EXTERNAL_CONTENT.search(sql or "") is not None) for name, sql in rows]


def tables(conn: Connection) -> set[str]:
    """Every table that holds rows of its own: no catalog, no `_migrations`, no FTS5 shadow, no external-content FTS5
    table (each derived from another table)."""
    if dialect_of(conn) == "postgresql":
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
            "AND table_type = 'BASE TABLE'"
        ).fetchall()
        return {r[0] for r in rows} - {"_migrations"}
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    derived = {"_migrations"} | {n for n in names if n.startswith("sqlite_")}
    for fts in full_text_tables(conn):
        derived |= {fts.name + suffix for suffix in FTS5_SHADOWS}
        if fts.external:
            derived.add(fts.name)
    return names - derived


def columns(conn: Connection, table: str) -> list[Column]:
    """The table's columns; on SQLite the implicit rowid too, where no INTEGER PRIMARY KEY stands for it (PostgreSQL's
    translation of the same table has a `rowid` column: the copy keeps the order rows were written in)."""
    if dialect_of(conn) == "postgresql":
        rows = conn.execute(
            "SELECT column_name, data_type, is_generated, is_identity, identity_generation "
            "FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? "
            "ORDER BY ordinal_position",
            (table,),
        ).fetchall()
        return [
            Column(
                name,
                str(data_type).lower(),
                generated=generated == "ALWAYS",
                identity_always=identity == "YES" and generation == "ALWAYS",
                identity=identity == "YES",
            )
            for name, data_type, generated, identity, generation in rows
        ]
    info = conn.execute(f"PRAGMA table_xinfo({quote(table)})").fetchall()
    # hidden: 1 a virtual table's hidden column, 2/3 a generated column
    found = [Column(r[1], str(r[2]).lower(), generated=r[6] in (2, 3)) for r in info if r[6] != 1]
    keys = [r for r in info if r[5] > 0]
    aliased = len(keys) == 1 and str(keys[0][2]).upper() == "INTEGER"
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    without_rowid = sql is not None and re.search(r"\bWITHOUT\s+ROWID\s*$", sql[0] or "", re.I) is not None
    if not aliased and not without_rowid and all(c.name.lower() != "rowid" for c in found):
        found.insert(0, Column("rowid", "integer"))
    return found


def primary_key(conn: Connection, table: str) -> list[str]:
    """The primary key's columns, to name a row in an error."""
    if dialect_of(conn) == "postgresql":
        rows = conn.execute(
            "SELECT k.column_name FROM information_schema.table_constraints c "
            "JOIN information_schema.key_column_usage k ON k.constraint_name = c.constraint_name "
            "AND k.table_schema = c.table_schema AND k.table_name = c.table_name "
            "WHERE c.table_schema = current_schema() AND c.table_name = ? AND c.constraint_type = 'PRIMARY KEY' "
            "ORDER BY k.ordinal_position",
            (table,),
        ).fetchall()
        return [r[0] for r in rows]
    info = conn.execute(f"PRAGMA table_info({quote(table)})").fetchall()
    return [r[1] for r in sorted((r for r in info if r[5] > 0), key=lambda r: r[5])]


def references(conn: Connection, table: str) -> set[str]:
    """The tables `table`'s foreign keys point at: they are filled first."""
    if dialect_of(conn) == "postgresql":
        rows = conn.execute(
            "SELECT confrelid::regclass::text FROM pg_constraint WHERE contype = 'f' AND conrelid = to_regclass(?)",
            (table,),
        ).fetchall()
        return {str(r[0]).strip('"') for r in rows}
    return {r[2] for r in conn.execute(f"PRAGMA foreign_key_list({quote(table)})")}


def count(conn: Connection, table: str) -> int:
    row: Any = conn.execute(f"SELECT COUNT(*) FROM {quote(table)}").fetchone()
    return int(row[0])


def dependency_order(names: list[str], refs: dict[str, set[str]]) -> list[str]:
    """`names` with every table after the tables it references (a reference outside `names`, or a cycle, is ignored:
    SQLite checks the keys at commit, see copy)."""
    ordered: list[str] = []
    seen: set[str] = set()

    def visit(name: str, path: frozenset[str]) -> None:
        if name in seen or name in path:
            return
        for ref in sorted(refs.get(name, set())):
            if ref in refs and ref != name:
                visit(ref, path | {name})
        seen.add(name)
        ordered.append(name)

    for name in names:
        visit(name, frozenset())
    return ordered
