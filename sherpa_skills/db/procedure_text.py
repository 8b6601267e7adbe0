"""SQLite's full-text table of procedures and PostgreSQL's text search over their rows: what `fts_search` ranks by."""

from __future__ import annotations

import json

from .connection import Connection

_FTS_TABLE = """CREATE VIRTUAL TABLE procedures_fts USING fts5(procedure_id UNINDEXED, task_type, description, tags,
    commands, tokenize = 'unicode61 remove_diacritics 2')"""


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
