"""Full-text search, spelled per engine: FTS5 on SQLite, a GIN-indexed tsvector on PostgreSQL.

A store names what it indexes (a `TextIndex`), creates the index in a migration (`create_text_index`) and searches
through `Database.text_search(index)`: words in, rows ranked best first out, relevance higher-is-better either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .connection import Connection, dialect_of
from .sqlite import execute_script


@dataclass(frozen=True)
class TextIndex:
    """A table's full-text index: its text `columns`, weighed by `weights` (the first weighs most), keyed by the
    table's integer primary key. `name` is SQLite's FTS5 table; PostgreSQL keeps a generated `fts` column instead."""

    table: str
    key: str
    columns: tuple[str, ...]
    weights: tuple[float, ...]
    name: str


def create_text_index(conn: Connection, index: TextIndex) -> None:
    """The index, in the migration that creates the table (rows written later are indexed as they are written)."""
    execute_script(conn, _postgres_ddl(index) if dialect_of(conn) == "postgresql" else _sqlite_ddl(index))  # type: ignore[arg-type]


def _sqlite_ddl(ix: TextIndex) -> str:
    # FTS5 over the columns, kept in step with the rows by triggers.
    cols = ", ".join(ix.columns)
    new = ", ".join(f"new.{c}" for c in ix.columns)
    old = ", ".join(f"old.{c}" for c in ix.columns)
    return f"""
        CREATE VIRTUAL TABLE {ix.name} USING fts5({cols}, content = '{ix.table}', content_rowid = '{ix.key}',
            tokenize = 'unicode61 remove_diacritics 2');
        CREATE TRIGGER {ix.name}_insert AFTER INSERT ON {ix.table} BEGIN
            INSERT INTO {ix.name} (rowid, {cols}) VALUES (new.{ix.key}, {new});
        END;
        CREATE TRIGGER {ix.name}_delete AFTER DELETE ON {ix.table} BEGIN
            INSERT INTO {ix.name} ({ix.name}, rowid, {cols}) VALUES ('delete', old.{ix.key}, {old});
        END;
        CREATE TRIGGER {ix.name}_update AFTER UPDATE OF {cols} ON {ix.table} BEGIN
            INSERT INTO {ix.name} ({ix.name}, rowid, {cols}) VALUES ('delete', old.{ix.key}, {old});
            INSERT INTO {ix.name} (rowid, {cols}) VALUES (new.{ix.key}, {new});
        END;
"""


# PostgreSQL's own full-text search: a stored tsvector of the columns (weights A, B, …), GIN-indexed; 'simple'
# lower-cases without stemming, as FTS5's unicode61 does (it does not fold diacritics, unicode61 does).
_LABELS = "ABCD"


def _postgres_ddl(ix: TextIndex) -> str:
    vector = " || ".join(
        f"setweight(to_tsvector('simple', {c}), '{label}')" for c, label in zip(ix.columns, _LABELS, strict=False)
    )
    return f"""
        ALTER TABLE {ix.table} ADD COLUMN fts tsvector GENERATED ALWAYS AS ({vector}) STORED;
        CREATE INDEX {ix.table}_fts ON {ix.table} USING GIN (fts);
"""


class TextSearch:
    """Ranked full-text matches of an OR of words. `ranks_alone`: the index ranks without reading the rows, so ranking
    there first and filtering the few best rows after costs less than one joined query."""

    ranks_alone = False

    def __init__(self, conn: Connection, index: TextIndex):
        self.conn, self.index = conn, index

    def search(
        self, words: Sequence[str], columns: str, where: str, args: Sequence[Any], limit: int
    ) -> list[tuple[Any, ...]]:
        """(`columns`…, relevance) of the rows of `index.table` (aliased `a`) matching any of `words` and `where`,
        best first, at most `limit`."""
        raise NotImplementedError

    def rank(self, words: Sequence[str], limit: int) -> list[tuple[int, float]]:
        """(key, relevance) of the best matches in the index alone, best first."""
        return [(row[0], row[1]) for row in self.search(words, f"a.{self.index.key}", "TRUE", [], limit)]


class _Fts5(TextSearch):
    ranks_alone = True

    def _bm25(self) -> str:
        return f"bm25({self.index.name}, {', '.join(str(w) for w in self.index.weights)})"

    @staticmethod
    def _match(words: Sequence[str]) -> str:
        return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)

    def search(
        self, words: Sequence[str], columns: str, where: str, args: Sequence[Any], limit: int
    ) -> list[tuple[Any, ...]]:
        ix = self.index
        rows = self.conn.execute(
            f"SELECT {columns}, {self._bm25()} AS rank FROM {ix.name} JOIN {ix.table} a ON a.{ix.key} = {ix.name}.rowid"
            f" WHERE {ix.name} MATCH ? AND {where} ORDER BY rank LIMIT ?",
            [self._match(words), *args, limit],
        ).fetchall()
        return [(*row[:-1], max(0.0, -float(row[-1]))) for row in rows]  # bm25 is lower-is-better, negative

    def rank(self, words: Sequence[str], limit: int) -> list[tuple[int, float]]:
        rows = self.conn.execute(
            f"SELECT rowid, {self._bm25()} AS rank FROM {self.index.name} WHERE {self.index.name} MATCH ?"
            " ORDER BY rank LIMIT ?",
            (self._match(words), limit),
        ).fetchall()
        return [(key, max(0.0, -float(rank))) for key, rank in rows]


class _TsVector(TextSearch):
    def search(
        self, words: Sequence[str], columns: str, where: str, args: Sequence[Any], limit: int
    ) -> list[tuple[Any, ...]]:
        ix = self.index
        # ts_rank's weights run D, C, B, A: the columns' weights reversed, padded to four.
        weights = [0.0] * (4 - len(ix.weights)) + list(reversed(ix.weights))
        rows = self.conn.execute(
            f"SELECT {columns}, ts_rank('{{{', '.join(str(w) for w in weights)}}}', a.fts, q) AS relevance"
            f" FROM {ix.table} a, to_tsquery('simple', ?) q WHERE a.fts @@ q AND {where}"
            f" ORDER BY relevance DESC, a.{ix.key} DESC LIMIT ?",
            [" | ".join(words), *args, limit],  # words of \w carry no tsquery operator
        ).fetchall()
        return [(*row[:-1], float(row[-1])) for row in rows]


def text_search(conn: Connection, index: TextIndex) -> TextSearch:
    return _TsVector(conn, index) if dialect_of(conn) == "postgresql" else _Fts5(conn, index)
