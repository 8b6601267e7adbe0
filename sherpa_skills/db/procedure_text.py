"""SQLite's full-text table of procedures and PostgreSQL's text search over their rows: what `fts_search` ranks by.

The skill store's migrations and writes call these with their connection; each picks the engine's spelling, so the
store names neither engine."""

from __future__ import annotations

import json

from .connection import Connection, dialect_of

_FTS_TABLE = """CREATE VIRTUAL TABLE procedures_fts USING fts5(procedure_id UNINDEXED, task_type, description, tags,
    commands, tokenize = 'unicode61 remove_diacritics 2')"""


def create_index(conn: Connection) -> None:
    """A migration's: SQLite's full-text table of procedures (a server searches the procedures' own columns)."""
    if dialect_of(conn) == "sqlite":
        conn.execute(_FTS_TABLE)


def rebuild_index(conn: Connection) -> None:
    """A migration's: SQLite's full-text table made again, keyed by the procedure's rowid, and filled (m002)."""
    if dialect_of(conn) == "postgresql":  # no full-text table there
        return
    conn.execute("DROP TABLE procedures_fts")
    conn.execute(_FTS_TABLE)
    fill_fts(conn)


def index_procedure(
    conn: Connection, procedure_id: str, task_type: str, description: str, tags: list[str], commands: list[str]
) -> None:
    """Inside the write that changed it: the procedure's searchable text as it is now (SQLite's full-text row; a
    server searches the row itself)."""
    if dialect_of(conn) == "postgresql":
        return
    rowid = conn.execute("SELECT rowid FROM procedures WHERE id = ?", (procedure_id,)).fetchone()[0]
    conn.execute("DELETE FROM procedures_fts WHERE rowid = ?", (rowid,))
    conn.execute(
        "INSERT INTO procedures_fts (rowid, procedure_id, task_type, description, tags, commands) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (rowid, procedure_id, _fts_words(task_type), description, " ".join(tags), " ".join(commands)),
    )


def search(conn: Connection, terms: list[str], limit: int) -> list[tuple[str, float]]:
    """(procedure id, score in (0, 1]) best first, for procedures holding any of `terms` (lower-case words): SQLite's
    FTS5 by bm25, a server's own text search by ts_rank, both weighting task type 4, description and tags 2,
    commands 1."""
    if dialect_of(conn) == "postgresql":
        return _scaled(conn.execute(_pg_text_search(len(terms)), (*terms, limit)).fetchall())
    match = " OR ".join(f'"{t}"' for t in terms)
    rows = conn.execute(
        "SELECT procedure_id, bm25(procedures_fts, 0, 4.0, 2.0, 2.0, 1.0) AS rank FROM procedures_fts"
        " WHERE procedures_fts MATCH ? ORDER BY rank LIMIT ?",
        (match, limit),
    ).fetchall()
    return _scaled([(pid, -rank) for pid, rank in rows])  # bm25: the lower, the better


def fill_fts(conn: Connection) -> None:
    """SQLite's full-text rows made again from the procedures (a store copied from PostgreSQL has none)."""
    conn.execute("DELETE FROM procedures_fts")
    for rowid, pid, task_type, description, tags, steps in conn.execute(
        "SELECT rowid, id, task_type, description, tags, steps FROM procedures"
    ).fetchall():
        conn.execute(
            "INSERT INTO procedures_fts (rowid, procedure_id, task_type, description, tags, commands) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (
                rowid,
                pid,
                _fts_words(task_type),
                description,
                " ".join(json.loads(tags)),
                " ".join(step["command"] for step in json.loads(steps)),
            ),
        )


def _fts_words(task_type: str) -> str:
    return task_type.replace("-", " ").replace("_", " ")


def _scaled(rows: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """(id, relevance) best first, as scores in (0, 1]: each relative to the best."""
    if not rows:
        return []
    best = rows[0][1] or 1.0
    return [(pid, round(max(0.0, rank) / best, 4) if best > 0 else 0.0) for pid, rank in rows]


# PostgreSQL's text search, weighted as the FTS5 ranking is (task type 4, description and tags 2, commands 1), over
# the rows themselves: fts_search is a benchmark's fallback, not worth a second copy of every procedure's text.
_PG_DOCUMENT = (
    "setweight(to_tsvector('simple', translate(task_type, '-_', '  ')), 'A')"
    " || setweight(to_tsvector('simple', description || ' ' || tags), 'B')"
    " || setweight(to_tsvector('simple', COALESCE((SELECT string_agg(s ->> 'command', ' ')"
    " FROM jsonb_array_elements(steps::jsonb) AS s), '')), 'C')"
)


def _pg_text_search(terms: int) -> str:
    query = " || ".join(["plainto_tsquery('simple', ?)"] * terms)  # any of the words
    return (
        f"SELECT id, ts_rank('{{0, 0.25, 0.5, 1}}', document, query) AS rank FROM"
        f" (SELECT id, {_PG_DOCUMENT} AS document FROM procedures) AS docs, (SELECT {query}) AS q (query)"
        " WHERE document @@ query ORDER BY rank DESC, id LIMIT ?"
    )
