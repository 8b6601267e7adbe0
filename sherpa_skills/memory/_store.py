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
from typing import Any, cast

import structlog

from ..db.connection import Connection, dialect_of
from ..db.locks import serialise_writes
from ..db.opening import open_truth
from ..errors import StoreError, UsageError
from ..redact import redact, redact_value
from ..sqlite_db import Transaction, execute_script
from ._hygiene import TIERS, content_hash, contradiction, related, tier
from ._models import (
    Abstraction,
    Artifact,
    Scope,
    check_abstraction,
    check_confidence,
    check_filters,
    check_limit,
    check_metadata,
    check_name,
    check_scope,
    check_tags,
    check_text,
)
from ._position import CompanionPosition

log = structlog.get_logger(__name__)

COMPONENT = "memory"
MAX_QUERY_CHARS = 64 << 10
_MAX_TERMS = 64
_TERM = re.compile(r"\w+", re.UNICODE)
# Words that match nearly every artifact: dropped from the FTS5 query (unless they are all the query has),
# because OR-ing them makes SQLite score most of the table for no change in ranking.
_STOPWORDS = frozenset(
    """a an and are as at be but by for from has have how i in into is it its of on or our so that the their then there
    these this to was we were what when where which who why will with you your do does did not no""".split()
)
# pg_advisory_xact_lock's key for "an artifact is being written": seqs then commit in the order they are drawn.
WRITE_LOCK = 0x5348_4552_5041_0026  # "SHERPA" 26
# ts_rank's weights for D, C, B, A: the text (A) weighs 1.0, the tags (B) 0.5, as bm25(memory_fts, 1.0, 0.5) does.
_TS_WEIGHTS = "'{0, 0, 0.5, 1.0}'"


def m001_memory(conn: sqlite3.Connection) -> None:
    execute_script(
        conn,
        """
        CREATE TABLE memory_artifacts (
            seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, agent TEXT NOT NULL, run_id TEXT,
            scope TEXT NOT NULL CHECK (scope IN ('private', 'shared')), kind TEXT, tags TEXT NOT NULL,
            metadata TEXT NOT NULL, text TEXT NOT NULL, created REAL NOT NULL, indexed INTEGER NOT NULL DEFAULT 0);
        CREATE INDEX memory_artifacts_reader ON memory_artifacts (scope, agent);
        CREATE INDEX memory_artifacts_kind ON memory_artifacts (kind) WHERE kind IS NOT NULL;
        CREATE INDEX memory_artifacts_pending ON memory_artifacts (seq) WHERE indexed = 0;
        CREATE TABLE memory_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """,
    )
    execute_script(conn, POSTGRES_FULL_TEXT if dialect_of(conn) == "postgresql" else SQLITE_FULL_TEXT)
    # Names this store's companion collection, so several homes can share one chroma server without clashing.
    conn.execute("INSERT INTO memory_meta (key, value) VALUES ('store_id', ?)", (uuid.uuid4().hex[:12],))


# FTS5 over text and tags, kept in step with the rows by triggers.
SQLITE_FULL_TEXT = """
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
"""
# PostgreSQL's own full-text search: a stored tsvector of the text (weight A) and tags (weight B), GIN-indexed;
# 'simple' lower-cases without stemming, as FTS5's unicode61 does (it does not fold diacritics, unicode61 does).
POSTGRES_FULL_TEXT = """
        ALTER TABLE memory_artifacts ADD COLUMN fts tsvector GENERATED ALWAYS AS (
            setweight(to_tsvector('simple', text), 'A') || setweight(to_tsvector('simple', tags), 'B')) STORED;
        CREATE INDEX memory_artifacts_fts ON memory_artifacts USING GIN (fts);
"""


def m002_hygiene(conn: sqlite3.Connection) -> None:
    """Dedup, supersede, decay and tensions:
    new columns with defaults, so a home written by older code upgrades in place."""
    execute_script(
        conn,
        """
        ALTER TABLE memory_artifacts ADD COLUMN content_hash TEXT;
        ALTER TABLE memory_artifacts ADD COLUMN seen INTEGER NOT NULL DEFAULT 1;
        ALTER TABLE memory_artifacts ADD COLUMN last_seen REAL;
        ALTER TABLE memory_artifacts ADD COLUMN last_access REAL;
        ALTER TABLE memory_artifacts ADD COLUMN reads INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE memory_artifacts ADD COLUMN confidence REAL NOT NULL DEFAULT 0.8;
        ALTER TABLE memory_artifacts ADD COLUMN abstraction TEXT NOT NULL DEFAULT 'episode';
        ALTER TABLE memory_artifacts ADD COLUMN category TEXT;
        ALTER TABLE memory_artifacts ADD COLUMN supersedes TEXT;
        ALTER TABLE memory_artifacts ADD COLUMN superseded_by TEXT;
        ALTER TABLE memory_artifacts ADD COLUMN tier TEXT NOT NULL DEFAULT 'hot';
        CREATE TABLE memory_tensions (
            id TEXT PRIMARY KEY, a TEXT NOT NULL, b TEXT NOT NULL, scope TEXT NOT NULL, agent TEXT,
            reason TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved')), kept TEXT,
            created REAL NOT NULL,
            resolved REAL, resolved_by TEXT, UNIQUE (a, b));
        CREATE INDEX memory_tensions_open ON memory_tensions (status, scope, agent);
        CREATE TABLE memory_links (src TEXT NOT NULL, dst TEXT NOT NULL, relation TEXT NOT NULL, score REAL,
            created REAL NOT NULL, PRIMARY KEY (src, dst, relation));
        CREATE TABLE memory_log (seq INTEGER PRIMARY KEY, at REAL NOT NULL, action TEXT NOT NULL, artifact TEXT,
            operator TEXT NOT NULL, reason TEXT, detail TEXT NOT NULL);
    """,
    )
    rows = conn.execute("SELECT seq, text, scope, agent, kind, created FROM memory_artifacts").fetchall()
    conn.executemany(
        "UPDATE memory_artifacts SET content_hash = ?, last_access = ? WHERE seq = ?",
        [(content_hash(text, scope, agent, kind), created, seq) for seq, text, scope, agent, kind, created in rows],
    )
    execute_script(
        conn,
        """
        CREATE INDEX memory_artifacts_hash ON memory_artifacts (content_hash) WHERE superseded_by IS NULL;
        CREATE INDEX memory_artifacts_access ON memory_artifacts (last_access);
    """,
    )


MIGRATIONS = [m001_memory, m002_hygiene]

_COLUMNS = (
    "a.id, a.text, a.agent, a.run_id, a.scope, a.kind, a.tags, a.metadata, a.created, a.confidence, a.abstraction,"
    " a.category, a.seen, a.last_seen, a.last_access, a.reads, a.supersedes, a.superseded_by"
)
#: Rows that are the newest of their chain: what reads return unless the history is asked for.
CURRENT = "a.superseded_by IS NULL"


def _artifact(row: tuple[Any, ...]) -> Artifact:
    (
        aid,
        text,
        agent,
        run_id,
        scope,
        kind,
        tags,
        metadata,
        created,
        confidence,
        abstraction,
        category,
        seen,
        last_seen,
        last_access,
        reads,
        supersedes,
        superseded_by,
    ) = row
    return Artifact.model_construct(
        id=aid,
        text=text,
        agent=agent,
        run_id=run_id,
        scope=scope,
        kind=kind,
        tags=json.loads(tags),
        metadata=json.loads(metadata),
        created=created,
        confidence=confidence,
        abstraction=abstraction,
        category=category,
        seen=seen,
        last_seen=last_seen,
        last_access=last_access,
        reads=reads,
        supersedes=supersedes,
        superseded_by=superseded_by,
    )


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def query_terms(query: str) -> list[str]:
    """The words a free-text query is searched by: stop words dropped unless they are all it has."""
    words = list(dict.fromkeys(t.lower() for t in _TERM.findall(query) if len(t) > 1 or t.isdigit()))
    return ([w for w in words if w not in _STOPWORDS] or words)[:_MAX_TERMS]


def fts_query(query: str) -> str | None:
    """The FTS5 MATCH expression for a free-text query: its words, quoted, OR-ed; None when it has none."""
    kept = query_terms(query)
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in kept) if kept else None


def ts_query(query: str) -> str | None:
    """The same words as a PostgreSQL tsquery (`to_tsquery('simple', …)`), OR-ed: words of \\w carry no operator."""
    kept = query_terms(query)
    return " | ".join(kept) if kept else None


def reader_filter(
    agent: str | None,
    scope: str = "all",
    *,
    author: str | None = None,
    kind: str | None = None,
    metadata: dict[str, Any] | None = None,
    history: bool = False,
    dialect: str = "sqlite",
) -> tuple[str, list[Any]]:
    """SQL over `memory_artifacts a` for what `agent` may see: shared artifacts and its own private notes
    (the newest of each supersede chain only, unless `history`)."""
    scope = check_scope(scope, reading=True)
    clauses: list[str] = [] if history else [CURRENT]
    args: list[Any] = []
    if scope == "private":
        if agent is None:
            raise UsageError(
                "shared memory: private notes are read by their author only; give the reading agent's name"
            )
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
        if dialect == "postgresql":  # metadata is JSON text: read as jsonb, compared as JSON values
            if value is None:
                clauses.append("COALESCE(a.metadata::jsonb -> ?, 'null'::jsonb) = 'null'::jsonb")
                args.append(key)
            else:
                clauses.append("a.metadata::jsonb -> ? = ?::jsonb")
                args.extend([key, json.dumps(value)])
        elif value is None:
            clauses.append("json_extract(a.metadata, ?) IS NULL")
            args.append(f"$.{key}")
        else:
            clauses.append("json_extract(a.metadata, ?) = ?")
            args.extend([f"$.{key}", value])
    return " AND ".join(clauses), args


class MemoryStore:
    """The truth of shared memory (the home's SQLite store.db, or the PostgreSQL database in force); safe to open
    from many processes, threads and machines at once."""

    def __init__(self, path: str | Path | None = None, *, home: str | Path | None = None, database: str | None = None):
        self.conn: Connection
        self.conn, self.path, self.where = open_truth(COMPONENT, MIGRATIONS, home=home, path=path, database=database)
        self._explicit_path = path is not None
        self._database = database
        self.dialect = dialect_of(self.conn)
        #: On PostgreSQL, how far this home's companion has caught up (set by SharedMemory); see _position.
        self.position: CompanionPosition | None = None
        self._lock = threading.RLock()
        self.store_id = str(self.conn.execute("SELECT value FROM memory_meta WHERE key = 'store_id'").fetchone()[0])

    def close(self) -> None:
        self.conn.close()

    def reopen(self) -> MemoryStore:
        """Another connection to the same truth, following the same companion position."""
        if self._explicit_path:
            other = MemoryStore(self.path)
        else:
            other = MemoryStore(home=self.path.parent, database=self._database)
        other.position = self.position
        return other

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _tx(self) -> Transaction:
        return Transaction(self.conn, self._lock)

    # ------------------------------------------------------------------ writing

    def prepare(
        self,
        text: str,
        *,
        agent: str,
        scope: str = "private",
        kind: str | None = None,
        tags: Any = None,
        metadata: dict[str, Any] | None = None,
        run_id: str | None = None,
        id: str | None = None,
        created: float | None = None,
        confidence: float | None = None,
        abstraction: str | None = None,
        category: str | None = None,
    ) -> Artifact:
        """Check and redact one artifact; raises UsageError before anything is written."""
        text = check_text(text)
        confidence = check_confidence(confidence)
        abstraction = check_abstraction(abstraction)
        category = check_name(category, "category", required=False)
        agent = str(check_name(agent, "the writing agent's name"))
        scope = check_scope(scope)
        kind = check_name(kind, "kind", required=False)
        clean_tags = check_tags(tags)
        clean_meta = check_metadata(metadata)
        run_id = check_name(run_id, "run_id", required=False)
        aid = check_name(id, "id", required=False) or uuid.uuid4().hex[:16]
        return Artifact.model_construct(
            id=aid,
            text=redact(text),
            agent=agent,
            run_id=run_id,
            scope=cast(Scope, scope),  # checked above
            kind=None if kind is None else redact(kind),
            tags=[redact(t) for t in clean_tags],
            metadata=redact_value(clean_meta),
            created=created if created is not None else time.time(),
            confidence=confidence,
            abstraction=cast(Abstraction, abstraction),  # checked above
            category=None if category is None else redact(category),
        )

    def write(
        self,
        text: str,
        *,
        agent: str,
        scope: str = "private",
        kind: str | None = None,
        tags: Any = None,
        metadata: dict[str, Any] | None = None,
        run_id: str | None = None,
        id: str | None = None,
    ) -> Artifact:
        """Store one artifact (redacted); a repeated `id` with the same content returns the stored one."""
        return self.add(
            [
                self.prepare(
                    text, agent=agent, scope=scope, kind=kind, tags=tags, metadata=metadata, run_id=run_id, id=id
                )
            ]
        )[0]

    def add(self, artifacts: Iterable[Artifact]) -> list[Artifact]:
        """Insert prepared artifacts in one transaction; see `add_checked`."""
        return [a for a, _ in self.add_checked(artifacts)]

    def add_checked(
        self, artifacts: Iterable[Artifact], *, supersedes: str | None = None
    ) -> list[tuple[Artifact, bool]]:
        """Insert prepared artifacts in one transaction, each with whether it was an exact duplicate.

        An id already stored must hold the same content (a replayed write: returned as is). Content equal to a current
        artifact of the same (scope, owner, kind) is not stored again: that artifact's `seen` and `last_seen` go up.
        """
        items = list(artifacts)
        if not items:
            return []
        hashes = [content_hash(a.text, a.scope, a.agent, a.kind) for a in items]
        rows = [
            (
                a.id,
                a.agent,
                a.run_id,
                a.scope,
                a.kind,
                _dump(a.tags),
                _dump(a.metadata),
                a.text,
                a.created,
                h,
                a.confidence,
                a.abstraction,
                a.category,
                a.created,
                a.created,
            )
            for a, h in zip(items, hashes, strict=True)
        ]
        out: list[tuple[Artifact, bool]] = []
        with self._tx():
            serialise_writes(self.conn, WRITE_LOCK)  # before any seq is drawn: see _position
            existing: dict[str, Artifact] = {}
            ids = [a.id for a in items]
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for row in self.conn.execute(
                    f"SELECT {_COLUMNS} FROM memory_artifacts a WHERE a.id IN ({marks})", chunk
                ):
                    existing[row[0]] = _artifact(row)
            by_hash: dict[str, Artifact] = {}
            wanted = list(dict.fromkeys(hashes))
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for row in self.conn.execute(
                    f"SELECT a.content_hash, {_COLUMNS} FROM memory_artifacts a"
                    f" WHERE a.content_hash IN ({marks}) AND {CURRENT}",
                    chunk,
                ):
                    by_hash.setdefault(row[0], _artifact(row[1:]))
            fresh = []
            bumps: dict[str, int] = {}
            now = time.time()
            for a, row, h in zip(items, rows, hashes, strict=True):
                old = existing.get(a.id)
                if old is not None:
                    if (old.text, old.agent, old.scope) != (a.text, a.agent, a.scope):
                        raise StoreError(f"shared memory: artifact id {a.id!r} is already taken by different content")
                    out.append((old, False))  # a replayed write (a resumed run): nothing new
                    continue
                same = by_hash.get(h)
                if same is not None and same.id != supersedes:
                    bumps[same.id] = bumps.get(same.id, 0) + 1
                    existing[a.id] = same
                    out.append((same, True))
                    continue
                fresh.append(row)
                existing[a.id] = by_hash[h] = a
                out.append((a, False))
            self.conn.executemany(
                "INSERT INTO memory_artifacts (id, agent, run_id, scope, kind, tags, metadata, text, "
                "created, content_hash,"
                " confidence, abstraction, category, last_seen, last_access) VALUES (?, ?, ?, ?, ?, ?, ?, ?, "
                "?, ?, ?, ?, ?, ?, ?)",
                fresh,
            )
            self.conn.executemany(
                "UPDATE memory_artifacts SET seen = seen + ?, last_seen = ?, last_access = ? WHERE id = ?",
                [(n, now, now, aid) for aid, n in bumps.items()],
            )
        for n, (a, dup) in enumerate(out):
            if dup:
                out[n] = (
                    a.model_copy(update={"seen": a.seen + bumps[a.id], "last_seen": now, "last_access": now}),
                    True,
                )
        return out

    def delete(self, artifact_id: str, *, operator: str, reason: str | None = None) -> bool:
        """Remove an artifact for good: an operator's act, recorded in `memory_log` (agents supersede instead).
        False when there is no such artifact. Links and tensions that named it go with it; its chain closes over it."""
        operator = str(check_name(operator, "the operator's name"))
        with self._tx():
            row = self.conn.execute(
                "SELECT agent, scope, kind, supersedes, superseded_by FROM memory_artifacts WHERE id = ?",
                (artifact_id,),
            ).fetchone()
            if row is None:
                return False
            author, scope, kind, older, newer = row
            self.conn.execute("DELETE FROM memory_artifacts WHERE id = ?", (artifact_id,))
            if older is not None:  # the chain skips the deleted link: older → newer (or older is current again)
                self.conn.execute("UPDATE memory_artifacts SET superseded_by = ? WHERE id = ?", (newer, older))
            if newer is not None:
                self.conn.execute("UPDATE memory_artifacts SET supersedes = ? WHERE id = ?", (older, newer))
            self.conn.execute("DELETE FROM memory_links WHERE src = ? OR dst = ?", (artifact_id, artifact_id))
            self.conn.execute("DELETE FROM memory_tensions WHERE a = ? OR b = ?", (artifact_id, artifact_id))
            self._log("delete", artifact_id, operator, reason, {"author": author, "scope": scope, "kind": kind})
        log.info("memory_deleted", artifact=artifact_id, operator=operator, reason=reason)
        return True

    def _log(
        self, action: str, artifact: str | None, operator: str, reason: str | None, detail: dict[str, Any]
    ) -> None:
        self.conn.execute(
            "INSERT INTO memory_log (at, action, artifact, operator, reason, detail) VALUES (?, ?, ?, ?, ?, ?)",
            (time.time(), action, artifact, operator, None if reason is None else redact(reason), _dump(detail)),
        )

    def operator_log(self, limit: int = 100) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT at, action, artifact, operator, reason, detail FROM memory_log ORDER BY seq DESC LIMIT ?", (limit,)
        ).fetchall()
        return [
            {
                "at": at,
                "action": action,
                "artifact": art,
                "operator": op,
                "reason": reason,
                "detail": json.loads(detail),
            }
            for at, action, art, op, reason, detail in rows
        ]

    # ------------------------------------------------------------------ supersede, links, tensions

    def check_supersede(self, old_id: str, new: Artifact) -> Artifact:
        """The artifact `new` may replace: visible to its writer, current, and no more visible than `new` (a private
        note cannot hide a shared fact from everyone else). Raises UsageError naming what is wrong."""
        try:
            old = self.get(old_id, agent=new.agent, history=True)
        except StoreError:
            raise UsageError(
                f"shared memory: supersedes {old_id!r}: no artifact with that id visible to agent {new.agent!r}"
            ) from None
        if old.superseded_by is not None:
            raise UsageError(
                f"shared memory: {old_id} is already superseded by {old.superseded_by}; supersede that one instead"
            )
        if old.scope == "shared" and new.scope == "private":
            raise UsageError(
                f"shared memory: {old_id} is shared; a private note cannot supersede it (write the correction --shared)"
            )
        return old

    def supersede(self, old_id: str, new_id: str) -> None:
        with self._tx():
            self.conn.execute(
                "UPDATE memory_artifacts SET superseded_by = ? WHERE id = ? AND superseded_by IS NULL", (new_id, old_id)
            )
            self.conn.execute("UPDATE memory_artifacts SET supersedes = ? WHERE id = ?", (old_id, new_id))
            # Every open tension of the replaced artifact is settled by the correction (which is checked on its own).
            self.conn.execute(
                "UPDATE memory_tensions SET status = 'resolved', kept = ?, resolved = ?, resolved_by = 'supersede'"
                " WHERE status = 'open' AND (a = ? OR b = ?)",
                (new_id, time.time(), old_id, old_id),
            )

    def chain(self, artifact_id: str, *, agent: str | None) -> list[Artifact]:
        """The supersede chain through `artifact_id`, newest first, as far as `agent` may see it."""
        start = self.get(artifact_id, agent=agent, history=True)
        where, args = reader_filter(agent, history=True, dialect=self.dialect)

        def walk(link: str) -> list[Artifact]:
            found: list[Artifact] = []
            current = start
            while getattr(current, link) is not None and len(found) < 1000:
                row = self.conn.execute(
                    f"SELECT {_COLUMNS} FROM memory_artifacts a WHERE a.id = ? AND {where}",
                    [getattr(current, link), *args],
                ).fetchone()
                if row is None:  # deleted, or not this reader's to see
                    break
                current = _artifact(row)
                found.append(current)
            return found

        newer, older = walk("superseded_by"), walk("supersedes")
        return [*reversed(newer), start, *older]

    def link(self, src: str, dst: str, relation: str, score: float | None = None) -> None:
        with self._tx():
            self.conn.execute(
                "INSERT INTO memory_links (src, dst, relation, score, created) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                (src, dst, relation, score, time.time()),
            )

    def links(self, artifact_id: str) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT src, dst, relation, score FROM memory_links WHERE src = ? OR dst = ?", (artifact_id, artifact_id)
        )
        return [{"src": a, "dst": b, "relation": r, "score": sc} for a, b, r, sc in rows]

    def exact(self, artifact: Artifact) -> str | None:
        """The id of the current artifact holding the same content as `artifact` in its (scope, owner, kind), if any."""
        row = self.conn.execute(
            f"SELECT a.id FROM memory_artifacts a WHERE a.content_hash = ? AND {CURRENT} LIMIT 1",
            (content_hash(artifact.text, artifact.scope, artifact.agent, artifact.kind),),
        ).fetchone()
        return None if row is None else str(row[0])

    def has_id(self, artifact_id: str) -> bool:
        return self.conn.execute("SELECT 1 FROM memory_artifacts WHERE id = ?", (artifact_id,)).fetchone() is not None

    def merge_into(self, target: Artifact) -> Artifact:
        """A near-duplicate the caller chose to merge: counted as another sighting of `target`, nothing new stored."""
        now = time.time()
        with self._tx():
            self.conn.execute(
                "UPDATE memory_artifacts SET seen = seen + 1, last_seen = ?, last_access = ? WHERE id = ?",
                (now, now, target.id),
            )
        return target.model_copy(update={"seen": target.seen + 1, "last_seen": now, "last_access": now})

    def find_tensions(
        self, artifact: Artifact, *, candidates: int = 20, record: int = 3, judge: Any = None, ask: int = 3
    ) -> list[dict[str, Any]]:
        """Rule-checked contradictions between `artifact` and current facts of its scope (and owner, when private)
        that share its words; records at most `record` of them as open tensions. Episodes are records of what
        happened, each true in its time, so only patterns and principles are checked. `judge(new, old)` (the
        optional LLM check) is asked about at most `ask` candidates on a related subject that no rule flagged."""
        if artifact.abstraction == "episode":
            return []
        postgres = self.dialect == "postgresql"
        match = ts_query(artifact.text) if postgres else fts_query(artifact.text)
        if match is None:
            return []
        owner = "AND a.agent = ?" if artifact.scope == "private" else ""
        args: list[Any] = [match, artifact.scope, artifact.id, *([artifact.agent] if owner else []), candidates]
        same = f"a.scope = ? AND a.id != ? AND {CURRENT} AND a.abstraction != 'episode' {owner}"
        if postgres:
            sql = (
                f"SELECT a.id, a.text FROM memory_artifacts a, to_tsquery('simple', ?) q WHERE a.fts @@ q AND {same}"
                f" ORDER BY ts_rank({_TS_WEIGHTS}, a.fts, q) DESC LIMIT ?"
            )
        else:
            sql = (
                f"SELECT a.id, a.text FROM memory_fts JOIN memory_artifacts a ON a.seq = memory_fts.rowid"
                f" WHERE memory_fts MATCH ? AND {same} ORDER BY bm25(memory_fts, 1.0, 0.5) LIMIT ?"
            )
        rows = self.conn.execute(sql, args).fetchall()
        found: list[dict[str, Any]] = []
        now = time.time()
        with self._tx():
            for other_id, other_text in rows:
                reason = contradiction(artifact.text, other_text)
                if reason is None and judge is not None and ask > 0 and related(artifact.text, other_text):
                    ask -= 1
                    reason = judge(artifact.text, other_text)
                if reason is None:
                    continue
                tid = hashlib.sha256(f"{other_id}\x1f{artifact.id}".encode()).hexdigest()[:12]
                self.conn.execute(
                    "INSERT INTO memory_tensions (id, a, b, scope, agent, reason, created)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    (
                        tid,
                        other_id,
                        artifact.id,
                        artifact.scope,
                        artifact.agent if artifact.scope == "private" else None,
                        reason,
                        now,
                    ),
                )
                found.append({"id": tid, "a": other_id, "b": artifact.id, "reason": reason})
                if len(found) >= record:
                    break
        return found

    def tensions(self, *, agent: str | None, status: str = "open", limit: int = 100) -> list[dict[str, Any]]:
        """Tensions `agent` may see (shared ones, and those between its own private notes),
        newest first, with both texts."""
        if status not in ("open", "resolved", "all"):
            raise UsageError(f"shared memory: tension status {status!r} is not one of: open, resolved, all")
        clauses = ["(t.scope = 'shared' OR t.agent = ?)" if agent else "t.scope = 'shared'"]
        args: list[Any] = [agent] if agent else []
        if status != "all":
            clauses.append("t.status = ?")
            args.append(status)
        rows = self.conn.execute(
            "SELECT t.id, t.a, t.b, t.scope, t.reason, t.status, t.kept, t.created, t.resolved, "
            "t.resolved_by, x.text, y.text"
            f" FROM memory_tensions t JOIN memory_artifacts x ON x.id = t.a JOIN memory_artifacts y ON y.id = t.b"
            f" WHERE {' AND '.join(clauses)} ORDER BY t.created DESC LIMIT ?",
            [*args, check_limit(limit)],
        ).fetchall()
        return [
            {
                "id": tid,
                "a": {"id": a, "text": ta},
                "b": {"id": b, "text": tb},
                "scope": scope,
                "reason": reason,
                "status": st,
                "kept": kept,
                "created": created,
                "resolved": resolved,
                "resolved_by": by,
            }
            for tid, a, b, scope, reason, st, kept, created, resolved, by, ta, tb in rows
        ]

    def open_tensions(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM memory_tensions WHERE status = 'open'").fetchone()[0])

    def resolve(self, tension_id: str, keep: str, *, agent: str) -> dict[str, Any]:
        """Settle an open tension `agent` may see: `keep` stays current, the other side is superseded by it."""
        found = [t for t in self.tensions(agent=agent, status="all", limit=1000) if t["id"] == tension_id]
        if not found:
            raise UsageError(
                f"shared memory: no tension {tension_id!r} visible to agent {agent!r}; `memory tensions` lists them"
            )
        t = found[0]
        if t["status"] != "open":
            raise UsageError(f"shared memory: tension {tension_id} is already resolved (kept {t['kept']})")
        sides = {t["a"]["id"]: t["b"]["id"], t["b"]["id"]: t["a"]["id"]}
        if keep not in sides:
            raise UsageError(
                f"shared memory: tension {tension_id} is between {t['a']['id']} and {t['b']['id']}; keep one of them"
            )
        loser = sides[keep]
        with self._tx():
            self.conn.execute(
                "UPDATE memory_artifacts SET superseded_by = ? WHERE id = ? AND superseded_by IS NULL", (keep, loser)
            )
            self.conn.execute(
                "UPDATE memory_artifacts SET supersedes = COALESCE(supersedes, ?) WHERE id = ?", (loser, keep)
            )
            self.conn.execute(
                "UPDATE memory_tensions SET status = 'resolved', kept = ?, resolved = ?, resolved_by = ? WHERE id = ?",
                (keep, time.time(), agent, tension_id),
            )
        return {**t, "status": "resolved", "kept": keep, "superseded": loser}

    # ------------------------------------------------------------------ decay

    def touch(self, ids: list[str]) -> None:
        """Returned by a search: read once more, and fresh again for decay."""
        if not ids:
            return
        now = time.time()
        with self._tx():
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                self.conn.execute(
                    f"UPDATE memory_artifacts SET reads = reads + 1, last_access = ?"
                    f" WHERE id IN ({','.join('?' * len(chunk))})",
                    [now, *chunk],
                )

    def decay_inputs(self, ids: list[str]) -> dict[str, tuple[float, float, int, str]]:
        """id → (last access, confidence, reads, abstraction): what `tier` needs, for ranking candidates."""
        out: dict[str, tuple[float, float, int, str]] = {}
        for row in self._rows_among(
            "a.id, COALESCE(a.last_access, a.created), a.confidence, a.reads, a.abstraction", ids, "TRUE", []
        ):
            out[row[0]] = row[1:]
        return out

    def apply_decay(self, now: float | None = None) -> dict[str, Any]:
        """Store every current artifact's tier as of `now`; how many sit in each, and how many moved."""
        now = now if now is not None else time.time()
        counts = dict.fromkeys(TIERS, 0)
        moved: dict[str, int] = {}
        changes: list[tuple[str, int]] = []
        for seq, last, conf, reads, abstraction, old in self.conn.execute(
            f"SELECT a.seq, COALESCE(a.last_access, a.created), a.confidence, a.reads, a.abstraction, a.tier"
            f" FROM memory_artifacts a WHERE {CURRENT}"
        ):
            new = tier(last, confidence=conf, reads=reads, abstraction=abstraction, now=now)
            counts[new] += 1
            if new != old:
                changes.append((new, seq))
                moved[f"{old}→{new}"] = moved.get(f"{old}→{new}", 0) + 1
        with self._tx():
            self.conn.executemany("UPDATE memory_artifacts SET tier = ? WHERE seq = ?", changes)
        return {"tiers": counts, "moved": moved}

    # ------------------------------------------------------------------ reading (always as some agent)

    def get(self, artifact_id: str, *, agent: str | None, history: bool = True) -> Artifact:
        where, args = reader_filter(agent, history=history, dialect=self.dialect)
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM memory_artifacts a WHERE a.id = ? AND {where}", [artifact_id, *args]
        ).fetchone()
        if row is None:  # another agent's private note is reported exactly like a missing one
            raise StoreError(
                f"shared memory: no artifact {artifact_id!r} visible to "
                f"{'agent ' + repr(agent) if agent else 'a reader without an agent name'}"
            )
        return _artifact(row)

    def _rows_among(self, columns: str, ids: list[str], where: str, args: list[Any]) -> Iterator[tuple[Any, ...]]:
        """Rows whose id is among `ids` and that pass `where`,
        asked in chunks that stay under SQLite's variable limit."""
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            yield from self.conn.execute(
                f"SELECT {columns} FROM memory_artifacts a WHERE a.id IN ({marks}) AND {where}", [*chunk, *args]
            )

    def visible(
        self,
        ids: list[str],
        *,
        agent: str | None,
        scope: str = "all",
        author: str | None = None,
        kind: str | None = None,
        metadata: dict[str, Any] | None = None,
        history: bool = False,
    ) -> dict[str, Artifact]:
        """The artifacts among `ids` that `agent` may see and that pass the filters, by id."""
        if not ids:
            return {}
        where, args = reader_filter(
            agent, scope, author=author, kind=kind, metadata=metadata, history=history, dialect=self.dialect
        )
        return {row[0]: _artifact(row) for row in self._rows_among(_COLUMNS, ids, where, args)}

    def visible_ids(
        self,
        ids: list[str],
        *,
        agent: str | None,
        scope: str = "all",
        author: str | None = None,
        kind: str | None = None,
        metadata: dict[str, Any] | None = None,
        history: bool = False,
    ) -> dict[str, int]:
        """Which of `ids` `agent` may see and pass the filters, with their write order (seq); reads no text."""
        if not ids:
            return {}
        where, args = reader_filter(
            agent, scope, author=author, kind=kind, metadata=metadata, history=history, dialect=self.dialect
        )
        return dict(self._rows_among("a.id, a.seq", ids, where, args))

    def lexical(
        self,
        query: str,
        *,
        agent: str | None,
        scope: str = "all",
        author: str | None = None,
        kind: str | None = None,
        metadata: dict[str, Any] | None = None,
        limit: int = 10,
        history: bool = False,
    ) -> list[tuple[str, int, float]]:
        """FTS5 BM25 over the visible artifacts, best first: (id, seq, relevance), relevance = -bm25 (higher is better).

        With only the visibility filter, ranks the 4 × limit best matches in the FTS index alone, then keeps the
        visible ones: those are exactly the best visible matches down to that rank, and joining every match to its
        row first costs about as much as the ranking itself. With a selective filter (scope, author, kind,
        metadata), or when fewer than `limit` survive, the joined query runs instead.
        """
        check_limit(limit)
        where, args = reader_filter(
            agent,
            scope,
            author=author,
            kind=kind,
            metadata=check_filters(metadata),
            history=history,
            dialect=self.dialect,
        )
        if self.dialect == "postgresql":
            return self._lexical_postgres(query, where, args, limit)
        match = fts_query(query)
        if match is None:
            return []
        if scope != "all" or author is not None or kind is not None or metadata:
            return self._lexical_joined(match, where, args, limit)
        wide = 4 * limit
        ranked = self.conn.execute(
            "SELECT rowid, bm25(memory_fts, 1.0, 0.5) AS rank FROM memory_fts WHERE memory_fts MATCH ?"
            " ORDER BY rank LIMIT ?",
            (match, wide),
        ).fetchall()
        seqs = [seq for seq, _ in ranked]
        visible: dict[int, str] = {}
        for start in range(0, len(seqs), 500):
            chunk = seqs[start : start + 500]
            visible.update(
                self.conn.execute(
                    f"SELECT a.seq, a.id FROM memory_artifacts a WHERE a.seq IN ({','.join('?' * len(chunk))})"
                    f" AND {where}",
                    [*chunk, *args],
                ).fetchall()
            )
        found = [(visible[seq], seq, max(0.0, -float(rank))) for seq, rank in ranked if seq in visible][:limit]
        if len(found) >= limit or len(ranked) < wide:
            return found
        return self._lexical_joined(match, where, args, limit)

    def _lexical_postgres(self, query: str, where: str, args: list[Any], limit: int) -> list[tuple[str, int, float]]:
        """PostgreSQL's full text: ts_rank over the GIN-indexed tsvector, the visibility filter in the same query."""
        terms = ts_query(query)
        if terms is None:
            return []
        rows = self.conn.execute(
            f"SELECT a.id, a.seq, ts_rank({_TS_WEIGHTS}, a.fts, q) AS relevance"
            f" FROM memory_artifacts a, to_tsquery('simple', ?) q WHERE a.fts @@ q AND {where}"
            f" ORDER BY relevance DESC, a.seq DESC LIMIT ?",
            [terms, *args, limit],
        ).fetchall()
        return [(aid, seq, float(relevance)) for aid, seq, relevance in rows]

    def _lexical_joined(self, match: str, where: str, args: list[Any], limit: int) -> list[tuple[str, int, float]]:
        rows = self.conn.execute(
            f"SELECT a.id, a.seq, bm25(memory_fts, 1.0, 0.5) AS rank FROM memory_fts"
            f" JOIN memory_artifacts a ON a.seq = memory_fts.rowid WHERE memory_fts MATCH ? AND {where}"
            f" ORDER BY rank LIMIT ?",
            [match, *args, limit],
        ).fetchall()
        return [(aid, seq, max(0.0, -float(rank))) for aid, seq, rank in rows]

    # ------------------------------------------------------------------ companion bookkeeping

    # On SQLite each row's `indexed` flag says whether the home's companion holds it; on PostgreSQL, where every
    # home keeps its own companion of the same rows, `position` says it (a watermark on seq, see _position).

    def pending(self) -> int:
        """Artifacts not (yet) in the companion: written while it was unavailable (or, on PostgreSQL, elsewhere)."""
        if self.position is not None:
            return self.position.count_pending(self.conn)
        return int(self.conn.execute("SELECT COUNT(*) FROM memory_artifacts WHERE indexed = 0").fetchone()[0])

    def any_indexed(self) -> bool:
        if self.position is not None:
            return self.position.upto() > 0 or bool(self.position.above)
        return self.conn.execute("SELECT 1 FROM memory_artifacts WHERE indexed = 1 LIMIT 1").fetchone() is not None

    def pending_artifacts(self, limit: int) -> list[Artifact]:
        if self.position is not None:
            ids = [aid for _, aid in self.position.pending(self.conn, limit)]
            found = {row[0]: _artifact(row) for row in self._rows_among(_COLUMNS, ids, "TRUE", [])}
            return [found[aid] for aid in ids if aid in found]
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM memory_artifacts a WHERE a.indexed = 0 ORDER BY a.seq LIMIT ?", (limit,)
        )
        return [_artifact(r) for r in rows]

    def indexed_among(self, ids: list[str]) -> list[str]:
        """Which of `ids` the companion holds already, as far as the truth knows."""
        if self.position is not None:
            return [row[0] for row in self._rows_among("a.id", ids, "a.seq <= ?", [self.position.upto()])]
        return [row[0] for row in self._rows_among("a.id", ids, "a.indexed = 1", [])]

    def mark_indexed(self, ids: list[str], flag: bool = True) -> None:
        if self.position is not None and flag:
            self.position.mark(self.conn, ids)
            return
        with self._tx():
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                self.conn.execute(
                    f"UPDATE memory_artifacts SET indexed = ? WHERE id IN ({','.join('?' * len(chunk))})",
                    [int(flag), *chunk],
                )

    def last_seq(self) -> int:
        return int(self.conn.execute("SELECT COALESCE(MAX(seq), 0) FROM memory_artifacts").fetchone()[0])

    def iter_artifacts(self, upto_seq: int | None = None, batch: int = 2000) -> Iterator[Artifact]:
        """Every artifact in write order (up to `upto_seq`), read in batches: what a rebuild indexes."""
        last = 0
        bound = upto_seq if upto_seq is not None else self.last_seq()
        while True:
            rows = self.conn.execute(
                f"SELECT a.seq, {_COLUMNS} FROM memory_artifacts a WHERE a.seq > ? AND a.seq <= ?"
                f" ORDER BY a.seq LIMIT ?",
                (last, bound, batch),
            ).fetchall()
            if not rows:
                return
            for row in rows:
                yield _artifact(row[1:])
            last = rows[-1][0]

    def set_indexed_upto(self, upto_seq: int) -> None:
        """After a rebuild: what it read is in the companion; anything written since must be indexed again."""
        if self.position is not None:
            self.position.reset(upto_seq)
            return
        with self._tx():
            self.conn.execute(
                "UPDATE memory_artifacts SET indexed = CASE WHEN seq <= ? THEN 1 ELSE 0 END"
                " WHERE indexed != CASE WHEN seq <= ? THEN 1 ELSE 0 END",
                (upto_seq, upto_seq),
            )

    # ------------------------------------------------------------------ stats

    def count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM memory_artifacts").fetchone()[0])

    def stats(self) -> dict[str, Any]:
        per_scope = dict.fromkeys(("private", "shared"), 0)
        per_agent: dict[str, dict[str, int]] = {}
        for agent, scope, n in self.conn.execute(
            "SELECT agent, scope, COUNT(*) FROM memory_artifacts GROUP BY agent, scope"
        ):
            per_scope[scope] += n
            per_agent.setdefault(agent, {"private": 0, "shared": 0})[scope] = n
        kinds = {
            k or "": n
            for k, n in self.conn.execute("SELECT kind, COUNT(*) FROM memory_artifacts GROUP BY kind ORDER BY 2 DESC")
        }
        per_tier = dict.fromkeys(TIERS, 0)
        now = time.time()
        for last, conf, reads, abstraction in self.conn.execute(
            "SELECT COALESCE(a.last_access, a.created), a.confidence, a.reads, "
            f"a.abstraction FROM memory_artifacts a WHERE {CURRENT}"
        ):
            per_tier[tier(last, confidence=conf, reads=reads, abstraction=abstraction, now=now)] += 1
        superseded, repeats = self.conn.execute(
            "SELECT COUNT(superseded_by), COALESCE(SUM(seen - 1), 0) FROM memory_artifacts"
        ).fetchone()
        return {
            "artifacts": sum(per_scope.values()),
            "per_scope": per_scope,
            "per_agent": dict(sorted(per_agent.items())),
            "per_kind": kinds,
            "per_tier": per_tier,
            "superseded": int(superseded),
            "duplicates_merged": int(repeats),
            "open_tensions": self.open_tensions(),
            "pending": self.pending(),
            "store": str(self.path),
            "store_id": self.store_id,
        }

    def export(self, *, agent: str | None, scope: str = "all", history: bool = False) -> Iterator[Artifact]:
        """Every artifact `agent` may see, in write order: a scoped dump (another agent's private notes never leave)."""
        where, args = reader_filter(agent, scope, history=history, dialect=self.dialect)
        last = 0
        while True:
            rows = self.conn.execute(
                f"SELECT a.seq, {_COLUMNS} FROM memory_artifacts a WHERE a.seq > ? AND {where}"
                f" ORDER BY a.seq LIMIT 1000",
                [last, *args],
            ).fetchall()
            if not rows:
                return
            for row in rows:
                yield _artifact(row[1:])
            last = rows[-1][0]


def write_id(run_id: str | None, tick: int, state: str, text: str, scope: str, kind: str | None) -> str | None:
    """A stable id for a write made by a run's action, so a resumed run that repeats it stores nothing twice."""
    if not run_id:
        return None
    digest = hashlib.sha256(
        "\x1f".join([run_id, str(tick), state, scope, kind or "", text]).encode("utf-8", "surrogatepass")
    )
    return digest.hexdigest()[:16]
