"""Shared memory's truth: artifacts in the home's store.db, with FTS5 over their text, and who may read what.

Every read takes the reading agent's name and filters in SQL: shared artifacts, plus the reader's own private
notes. Nothing here hands out another agent's private note, whatever the query. Texts, tags and metadata are
redacted before they are written, so a secret never reaches the file (nor the FTS index, nor the companion).

Here: opening the store, writes and stats. MemoryStore's other jobs are mixed in from their own modules: _reads,
_tidy (dedup, supersede, tensions, decay) and _bookkeeping (what the companion holds).
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, cast

import structlog

from ..db.connection import Connection
from ..db.database import Database
from ..errors import StoreError
from ..redact import redact, redact_value
from ._bookkeeping import _CompanionBookkeeping
from ._hygiene import TIERS, content_hash, tier
from ._models import (
    Abstraction,
    Artifact,
    Scope,
    check_abstraction,
    check_confidence,
    check_metadata,
    check_name,
    check_scope,
    check_tags,
    check_text,
)
from ._position import CompanionPosition
from ._schema import MIGRATIONS
from ._sql import _COLUMNS, CURRENT, _artifact, _dump, reader_filter
from ._tidy import _MemoryTidy

log = structlog.get_logger(__name__)

COMPONENT = "memory"
# The transaction lock's key for "an artifact is being written": seqs then commit in the order they are drawn.
WRITE_LOCK = 0x5348_4552_5041_0026  # "SHERPA" 26


class MemoryStore(_MemoryTidy, _CompanionBookkeeping):
    """The truth of shared memory (the home's SQLite store.db, or the PostgreSQL database in force); safe to open
    from many processes, threads and machines at once."""

    component = COMPONENT
    migrations = MIGRATIONS

    def __init__(
        self,
        db: Database | None = None,
        *,
        home: str | Path | None = None,
        path: str | Path | None = None,
        database: str | None = None,
    ) -> None:
        super().__init__(db, home=home, path=path, database=database)
        #: Where other homes share the truth, how far this home's companion has caught up (set by SharedMemory).
        self.position: CompanionPosition | None = None
        self.store_id = str(self.conn.execute("SELECT value FROM memory_meta WHERE key = 'store_id'").fetchone()[0])

    def reopen(self) -> MemoryStore:
        """Another connection to the same truth (its own, closed with it), following the same companion position."""
        other = MemoryStore(self.db.another())
        other._owns_db = True  # opened here for `other` alone
        other.position = self.position
        return other

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
        now = time.time()

        def write(conn: Connection) -> tuple[list[tuple[Artifact, bool]], dict[str, int]]:
            out: list[tuple[Artifact, bool]] = []
            self.db.serialise_writes(WRITE_LOCK)  # before any seq is drawn: see _position
            existing: dict[str, Artifact] = {}
            ids = [a.id for a in items]
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for row in conn.execute(f"SELECT {_COLUMNS} FROM memory_artifacts a WHERE a.id IN ({marks})", chunk):
                    existing[row[0]] = _artifact(row)
            by_hash: dict[str, Artifact] = {}
            wanted = list(dict.fromkeys(hashes))
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for row in conn.execute(
                    f"SELECT a.content_hash, {_COLUMNS} FROM memory_artifacts a"
                    f" WHERE a.content_hash IN ({marks}) AND {CURRENT}",
                    chunk,
                ):
                    by_hash.setdefault(row[0], _artifact(row[1:]))
            fresh = []
            bumps: dict[str, int] = {}
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
            conn.executemany(
                "INSERT INTO memory_artifacts (id, agent, run_id, scope, kind, tags, metadata, text, "
                "created, content_hash,"
                " confidence, abstraction, category, last_seen, last_access) VALUES (?, ?, ?, ?, ?, ?, ?, ?, "
                "?, ?, ?, ?, ?, ?, ?)",
                fresh,
            )
            conn.executemany(
                "UPDATE memory_artifacts SET seen = seen + ?, last_seen = ?, last_access = ? WHERE id = ?",
                [(n, now, now, aid) for aid, n in bumps.items()],
            )
            return out, bumps

        out, bumps = self.db.transaction(write, what=f"{len(items)} memory artifact(s)")
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

        def write(conn: Connection) -> bool:
            row = conn.execute(
                "SELECT agent, scope, kind, supersedes, superseded_by FROM memory_artifacts WHERE id = ?",
                (artifact_id,),
            ).fetchone()
            if row is None:
                return False
            author, scope, kind, older, newer = row
            conn.execute("DELETE FROM memory_artifacts WHERE id = ?", (artifact_id,))
            if older is not None:  # the chain skips the deleted link: older → newer (or older is current again)
                conn.execute("UPDATE memory_artifacts SET superseded_by = ? WHERE id = ?", (newer, older))
            if newer is not None:
                conn.execute("UPDATE memory_artifacts SET supersedes = ? WHERE id = ?", (older, newer))
            conn.execute("DELETE FROM memory_links WHERE src = ? OR dst = ?", (artifact_id, artifact_id))
            conn.execute("DELETE FROM memory_tensions WHERE a = ? OR b = ?", (artifact_id, artifact_id))
            self._log("delete", artifact_id, operator, reason, {"author": author, "scope": scope, "kind": kind})
            return True

        if not self.db.transaction(write, what=f"memory artifact {artifact_id}'s deletion"):
            return False
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
        where, args = reader_filter(agent, scope, history=history, db=self.db)
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
