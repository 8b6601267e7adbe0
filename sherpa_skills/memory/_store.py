"""Shared memory's truth: artifacts in the home's store.db, with FTS5 over their text, and who may read what.

Every read takes the reading agent's name and filters in SQL: shared artifacts, plus the reader's own private
notes. Nothing here hands out another agent's private note, whatever the query. Texts, tags and metadata are
redacted before they are written, so a secret never reaches the file (nor the FTS index, nor the companion).
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import structlog

from ..errors import StoreError, UsageError
from ..home import store_path
from ..redact import redact, redact_value
from ..sqlite_db import Transaction, connect, execute_script, migrate
from ._models import (Artifact, check_filters, check_limit, check_metadata, check_name, check_scope, check_tags,
                      check_text)

log = structlog.get_logger(__name__)

COMPONENT = "memory"
MAX_QUERY_CHARS = 64 << 10
_MAX_TERMS = 64
_TERM = re.compile(r"\w+", re.UNICODE)
# Words that match nearly every artifact: dropped from the FTS5 query (unless they are all the query has),
# because OR-ing them makes SQLite score most of the table for no change in ranking.
_STOPWORDS = frozenset("""a an and are as at be but by for from has have how i in into is it its of on or our so that the
    their then there these this to was we were what when where which who why will with you your do does did not no""".split())


def m001_memory(conn: sqlite3.Connection) -> None:
    execute_script(conn, """
        CREATE TABLE memory_artifacts (
            seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, agent TEXT NOT NULL, run_id TEXT,
            scope TEXT NOT NULL CHECK (scope IN ('private', 'shared')), kind TEXT, tags TEXT NOT NULL,
            metadata TEXT NOT NULL, text TEXT NOT NULL, created REAL NOT NULL, indexed INTEGER NOT NULL DEFAULT 0);
        CREATE INDEX memory_artifacts_reader ON memory_artifacts (scope, agent);
        CREATE INDEX memory_artifacts_kind ON memory_artifacts (kind) WHERE kind IS NOT NULL;
        CREATE INDEX memory_artifacts_pending ON memory_artifacts (seq) WHERE indexed = 0;
        CREATE VIRTUAL TABLE memory_fts USING fts5(text, tags, content = 'memory_artifacts', content_rowid = 'seq',
            tokenize = 'unicode61 remove_diacritics 2');
        CREATE TRIGGER memory_fts_insert AFTER INSERT ON memory_artifacts BEGIN
            INSERT INTO memory_fts (rowid, text, tags) VALUES (new.seq, new.text, new.tags);
        END;
        CREATE TRIGGER memory_fts_delete AFTER DELETE ON memory_artifacts BEGIN
            INSERT INTO memory_fts (memory_fts, rowid, text, tags) VALUES ('delete', old.seq, old.text, old.tags);
        END;
        CREATE TRIGGER memory_fts_update AFTER UPDATE OF text, tags ON memory_artifacts BEGIN
            INSERT INTO memory_fts (memory_fts, rowid, text, tags) VALUES ('delete', old.seq, old.text, old.tags);
            INSERT INTO memory_fts (rowid, text, tags) VALUES (new.seq, new.text, new.tags);
        END;
        CREATE TABLE memory_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """)
    # Names this store's companion collection, so several homes can share one chroma server without clashing.
    conn.execute("INSERT INTO memory_meta (key, value) VALUES ('store_id', ?)", (uuid.uuid4().hex[:12],))


MIGRATIONS = [m001_memory]

_COLUMNS = "a.id, a.text, a.agent, a.run_id, a.scope, a.kind, a.tags, a.metadata, a.created"


def _artifact(row: tuple[Any, ...]) -> Artifact:
    aid, text, agent, run_id, scope, kind, tags, metadata, created = row
    return Artifact.model_construct(id=aid, text=text, agent=agent, run_id=run_id, scope=scope, kind=kind,
                                    tags=json.loads(tags), metadata=json.loads(metadata), created=created)


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def fts_query(query: str) -> str | None:
    """The FTS5 MATCH expression for a free-text query: its words, quoted, OR-ed; None when it has none."""
    words = list(dict.fromkeys(t.lower() for t in _TERM.findall(query) if len(t) > 1 or t.isdigit()))
    kept = [w for w in words if w not in _STOPWORDS] or words
    if not kept:
        return None
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in kept[:_MAX_TERMS])


def reader_filter(agent: str | None, scope: str = "all", *, author: str | None = None, kind: str | None = None,
                  metadata: dict[str, Any] | None = None) -> tuple[str, list[Any]]:
    """SQL over `memory_artifacts a` for what `agent` may see: shared artifacts and its own private notes."""
    scope = check_scope(scope, reading=True)
    clauses: list[str] = []
    args: list[Any] = []
    if scope == "private":
        if agent is None:
            raise UsageError("shared memory: private notes are read by their author only; give the reading agent's name")
        clauses.append("a.scope = 'private' AND a.agent = ?")
        args.append(agent)
    elif scope == "shared" or agent is None:
        clauses.append("a.scope = 'shared'")
    else:
        clauses.append("(a.scope = 'shared' OR a.agent = ?)")
        args.append(agent)
    if author is not None:
        clauses.append("a.agent = ?")
        args.append(author)
    if kind is not None:
        clauses.append("a.kind = ?")
        args.append(kind)
    for key, value in (metadata or {}).items():
        if value is None:
            clauses.append("json_extract(a.metadata, ?) IS NULL")
            args.append(f"$.{key}")
        else:
            clauses.append("json_extract(a.metadata, ?) = ?")
            args.extend([f"$.{key}", value])
    return " AND ".join(clauses), args


class MemoryStore:
    """The SQLite truth of shared memory; safe to open from many processes and threads at once."""

    def __init__(self, path: str | Path | None = None, *, home: str | Path | None = None):
        self.path = Path(path) if path else store_path(home)
        self.conn = connect(self.path)
        migrate(self.conn, COMPONENT, MIGRATIONS)
        self._lock = threading.RLock()
        self.store_id = str(self.conn.execute("SELECT value FROM memory_meta WHERE key = 'store_id'").fetchone()[0])

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _tx(self) -> Transaction:
        return Transaction(self.conn, self._lock)

    # ------------------------------------------------------------------ writing

    def prepare(self, text: str, *, agent: str, scope: str = "private", kind: str | None = None, tags: Any = None,
                metadata: dict[str, Any] | None = None, run_id: str | None = None, id: str | None = None,
                created: float | None = None) -> Artifact:
        """Check and redact one artifact; raises UsageError before anything is written."""
        text = check_text(text)
        agent = str(check_name(agent, "the writing agent's name"))
        scope = check_scope(scope)
        kind = check_name(kind, "kind", required=False)
        clean_tags = check_tags(tags)
        clean_meta = check_metadata(metadata)
        run_id = check_name(run_id, "run_id", required=False)
        aid = check_name(id, "id", required=False) or uuid.uuid4().hex[:16]
        return Artifact.model_construct(
            id=aid, text=redact(text), agent=agent, run_id=run_id, scope=scope,
            kind=None if kind is None else redact(kind), tags=[redact(t) for t in clean_tags],
            metadata=redact_value(clean_meta), created=created if created is not None else time.time())

    def write(self, text: str, *, agent: str, scope: str = "private", kind: str | None = None, tags: Any = None,
              metadata: dict[str, Any] | None = None, run_id: str | None = None, id: str | None = None) -> Artifact:
        """Store one artifact (redacted); a repeated `id` with the same content returns the stored one."""
        return self.add([self.prepare(text, agent=agent, scope=scope, kind=kind, tags=tags, metadata=metadata,
                                      run_id=run_id, id=id)])[0]

    def add(self, artifacts: Iterable[Artifact]) -> list[Artifact]:
        """Insert prepared artifacts in one transaction (executemany); ids already stored must hold the same content."""
        items = list(artifacts)
        if not items:
            return []
        rows = [(a.id, a.agent, a.run_id, a.scope, a.kind, _dump(a.tags), _dump(a.metadata), a.text, a.created) for a in items]
        out: list[Artifact] = []
        with self._tx():
            existing: dict[str, Artifact] = {}
            ids = [a.id for a in items]
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                marks = ",".join("?" * len(chunk))
                for row in self.conn.execute(f"SELECT {_COLUMNS} FROM memory_artifacts a WHERE a.id IN ({marks})", chunk):
                    existing[row[0]] = _artifact(row)
            fresh = []
            for a, row in zip(items, rows):
                old = existing.get(a.id)
                if old is None:
                    fresh.append(row)
                    existing[a.id] = a
                    out.append(a)
                elif (old.text, old.agent, old.scope) == (a.text, a.agent, a.scope):
                    out.append(old)  # a replayed write (a resumed run): nothing new
                else:
                    raise StoreError(f"shared memory: artifact id {a.id!r} is already taken by different content")
            self.conn.executemany(
                "INSERT INTO memory_artifacts (id, agent, run_id, scope, kind, tags, metadata, text, created)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", fresh)
        return out

    def delete(self, artifact_id: str, *, agent: str) -> bool:
        """Remove an artifact; only its author may. False when the author has no such artifact."""
        with self._tx():
            cursor = self.conn.execute("DELETE FROM memory_artifacts WHERE id = ? AND agent = ?", (artifact_id, agent))
        return cursor.rowcount > 0

    # ------------------------------------------------------------------ reading (always as some agent)

    def get(self, artifact_id: str, *, agent: str | None) -> Artifact:
        where, args = reader_filter(agent)
        row = self.conn.execute(f"SELECT {_COLUMNS} FROM memory_artifacts a WHERE a.id = ? AND {where}",
                                [artifact_id, *args]).fetchone()
        if row is None:  # another agent's private note is reported exactly like a missing one
            raise StoreError(f"shared memory: no artifact {artifact_id!r} visible to "
                             f"{'agent ' + repr(agent) if agent else 'a reader without an agent name'}")
        return _artifact(row)

    def _rows_among(self, columns: str, ids: list[str], where: str, args: list[Any]) -> Iterator[tuple[Any, ...]]:
        """Rows whose id is among `ids` and that pass `where`, asked in chunks that stay under SQLite's variable limit."""
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ",".join("?" * len(chunk))
            yield from self.conn.execute(f"SELECT {columns} FROM memory_artifacts a WHERE a.id IN ({marks}) AND {where}",
                                         [*chunk, *args])

    def visible(self, ids: list[str], *, agent: str | None, scope: str = "all", author: str | None = None,
                kind: str | None = None, metadata: dict[str, Any] | None = None) -> dict[str, Artifact]:
        """The artifacts among `ids` that `agent` may see and that pass the filters, by id."""
        if not ids:
            return {}
        where, args = reader_filter(agent, scope, author=author, kind=kind, metadata=metadata)
        return {row[0]: _artifact(row) for row in self._rows_among(_COLUMNS, ids, where, args)}

    def visible_ids(self, ids: list[str], *, agent: str | None, scope: str = "all", author: str | None = None,
                    kind: str | None = None, metadata: dict[str, Any] | None = None) -> dict[str, int]:
        """Which of `ids` `agent` may see and pass the filters, with their write order (seq); reads no text."""
        if not ids:
            return {}
        where, args = reader_filter(agent, scope, author=author, kind=kind, metadata=metadata)
        return dict(self._rows_among("a.id, a.seq", ids, where, args))

    def lexical(self, query: str, *, agent: str | None, scope: str = "all", author: str | None = None,
                kind: str | None = None, metadata: dict[str, Any] | None = None, limit: int = 10) -> list[tuple[str, int, float]]:
        """FTS5 BM25 over the visible artifacts, best first: (id, seq, relevance), relevance = -bm25 (higher is better).

        With only the visibility filter, ranks the 4 × limit best matches in the FTS index alone, then keeps the
        visible ones: those are exactly the best visible matches down to that rank, and joining every match to its
        row first costs about as much as the ranking itself. With a selective filter (scope, author, kind,
        metadata), or when fewer than `limit` survive, the joined query runs instead.
        """
        check_limit(limit)
        where, args = reader_filter(agent, scope, author=author, kind=kind, metadata=check_filters(metadata))
        match = fts_query(query)
        if match is None:
            return []
        if scope != "all" or author is not None or kind is not None or metadata:
            return self._lexical_joined(match, where, args, limit)
        wide = 4 * limit
        ranked = self.conn.execute("SELECT rowid, bm25(memory_fts, 1.0, 0.5) AS rank FROM memory_fts WHERE memory_fts MATCH ?"
                                   " ORDER BY rank LIMIT ?", (match, wide)).fetchall()
        seqs = [seq for seq, _ in ranked]
        visible: dict[int, str] = {}
        for start in range(0, len(seqs), 500):
            chunk = seqs[start:start + 500]
            visible.update(self.conn.execute(f"SELECT a.seq, a.id FROM memory_artifacts a WHERE a.seq IN ({','.join('?' * len(chunk))})"
                                             f" AND {where}", [*chunk, *args]).fetchall())
        found = [(visible[seq], seq, max(0.0, -float(rank))) for seq, rank in ranked if seq in visible][:limit]
        if len(found) >= limit or len(ranked) < wide:
            return found
        return self._lexical_joined(match, where, args, limit)

    def _lexical_joined(self, match: str, where: str, args: list[Any], limit: int) -> list[tuple[str, int, float]]:
        rows = self.conn.execute(
            f"SELECT a.id, a.seq, bm25(memory_fts, 1.0, 0.5) AS rank FROM memory_fts"
            f" JOIN memory_artifacts a ON a.seq = memory_fts.rowid WHERE memory_fts MATCH ? AND {where}"
            f" ORDER BY rank LIMIT ?", [match, *args, limit]).fetchall()
        return [(aid, seq, max(0.0, -float(rank))) for aid, seq, rank in rows]

    # ------------------------------------------------------------------ companion bookkeeping

    def pending(self) -> int:
        """Artifacts not (yet) in the companion: written while it was unavailable."""
        return int(self.conn.execute("SELECT COUNT(*) FROM memory_artifacts WHERE indexed = 0").fetchone()[0])

    def any_indexed(self) -> bool:
        return self.conn.execute("SELECT 1 FROM memory_artifacts WHERE indexed = 1 LIMIT 1").fetchone() is not None

    def pending_artifacts(self, limit: int) -> list[Artifact]:
        rows = self.conn.execute(f"SELECT {_COLUMNS} FROM memory_artifacts a WHERE a.indexed = 0 ORDER BY a.seq LIMIT ?", (limit,))
        return [_artifact(r) for r in rows]

    def mark_indexed(self, ids: list[str], flag: bool = True) -> None:
        with self._tx():
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                self.conn.execute(f"UPDATE memory_artifacts SET indexed = ? WHERE id IN ({','.join('?' * len(chunk))})",
                                  [int(flag), *chunk])

    def last_seq(self) -> int:
        return int(self.conn.execute("SELECT COALESCE(MAX(seq), 0) FROM memory_artifacts").fetchone()[0])

    def iter_artifacts(self, upto_seq: int | None = None, batch: int = 2000) -> Iterator[Artifact]:
        """Every artifact in write order (up to `upto_seq`), read in batches: what a rebuild indexes."""
        last = 0
        bound = upto_seq if upto_seq is not None else self.last_seq()
        while True:
            rows = self.conn.execute(f"SELECT a.seq, {_COLUMNS} FROM memory_artifacts a WHERE a.seq > ? AND a.seq <= ?"
                                     f" ORDER BY a.seq LIMIT ?", (last, bound, batch)).fetchall()
            if not rows:
                return
            for row in rows:
                yield _artifact(row[1:])
            last = rows[-1][0]

    def set_indexed_upto(self, upto_seq: int) -> None:
        """After a rebuild: what it read is in the companion; anything written since must be indexed again."""
        with self._tx():
            self.conn.execute("UPDATE memory_artifacts SET indexed = CASE WHEN seq <= ? THEN 1 ELSE 0 END"
                              " WHERE indexed != CASE WHEN seq <= ? THEN 1 ELSE 0 END", (upto_seq, upto_seq))

    # ------------------------------------------------------------------ stats

    def count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM memory_artifacts").fetchone()[0])

    def stats(self) -> dict[str, Any]:
        per_scope = dict.fromkeys(("private", "shared"), 0)
        per_agent: dict[str, dict[str, int]] = {}
        for agent, scope, n in self.conn.execute("SELECT agent, scope, COUNT(*) FROM memory_artifacts GROUP BY agent, scope"):
            per_scope[scope] += n
            per_agent.setdefault(agent, {"private": 0, "shared": 0})[scope] = n
        kinds = {k or "": n for k, n in self.conn.execute("SELECT kind, COUNT(*) FROM memory_artifacts GROUP BY kind ORDER BY 2 DESC")}
        return {"artifacts": sum(per_scope.values()), "per_scope": per_scope,
                "per_agent": dict(sorted(per_agent.items())), "per_kind": kinds, "pending": self.pending(),
                "store": str(self.path), "store_id": self.store_id}


def write_id(run_id: str | None, tick: int, state: str, text: str, scope: str, kind: str | None) -> str | None:
    """A stable id for a write made by a run's action, so a resumed run that repeats it stores nothing twice."""
    if not run_id:
        return None
    digest = hashlib.sha256("\x1f".join([run_id, str(tick), state, scope, kind or "", text]).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:16]
