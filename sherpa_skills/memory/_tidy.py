"""Memory hygiene on the stored rows: exact and near duplicates, supersede chains, links, tensions between facts,
and decay."""

from __future__ import annotations

import hashlib
import time
from typing import Any

from ..db.connection import Connection
from ..errors import StoreError, UsageError
from ._hygiene import TIERS, content_hash, contradiction, related, tier
from ._models import Artifact, check_limit
from ._reads import _MemoryReads
from ._sql import _COLUMNS, CURRENT, MEMORY_TEXT, _artifact, query_terms, reader_filter


class _MemoryTidy(_MemoryReads):
    """The memory store's hygiene."""

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
        now = time.time()

        def write(conn: Connection) -> None:
            conn.execute(
                "UPDATE memory_artifacts SET superseded_by = ? WHERE id = ? AND superseded_by IS NULL", (new_id, old_id)
            )
            conn.execute("UPDATE memory_artifacts SET supersedes = ? WHERE id = ?", (old_id, new_id))
            # Every open tension of the replaced artifact is settled by the correction (which is checked on its own).
            conn.execute(
                "UPDATE memory_tensions SET status = 'resolved', kept = ?, resolved = ?, resolved_by = 'supersede'"
                " WHERE status = 'open' AND (a = ? OR b = ?)",
                (new_id, now, old_id, old_id),
            )

        self.db.transaction(write, what=f"memory artifact {new_id} superseding {old_id}")

    def chain(self, artifact_id: str, *, agent: str | None) -> list[Artifact]:
        """The supersede chain through `artifact_id`, newest first, as far as `agent` may see it."""
        start = self.get(artifact_id, agent=agent, history=True)
        where, args = reader_filter(agent, history=True, db=self.db)

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
        row = (src, dst, relation, score, time.time())
        self.db.transaction(
            lambda conn: conn.execute(
                "INSERT INTO memory_links (src, dst, relation, score, created) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                row,
            ),
            what=f"a memory link {src} → {dst}",
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
        self.db.transaction(
            lambda conn: conn.execute(
                "UPDATE memory_artifacts SET seen = seen + 1, last_seen = ?, last_access = ? WHERE id = ?",
                (now, now, target.id),
            ),
            what=f"memory artifact {target.id}'s sighting",
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
        words = query_terms(artifact.text)
        if not words:
            return []
        owner = "AND a.agent = ?" if artifact.scope == "private" else ""
        same = f"a.scope = ? AND a.id != ? AND {CURRENT} AND a.abstraction != 'episode' {owner}"
        args: list[Any] = [artifact.scope, artifact.id, *([artifact.agent] if owner else [])]
        rows = self.db.text_search(MEMORY_TEXT).search(words, "a.id, a.text", same, args, candidates)
        found: list[dict[str, Any]] = []
        # Judged before the transaction: the optional LLM check holds no write lock while it thinks.
        for other_id, other_text, _ in rows:
            reason = contradiction(artifact.text, other_text)
            if reason is None and judge is not None and ask > 0 and related(artifact.text, other_text):
                ask -= 1
                reason = judge(artifact.text, other_text)
            if reason is None:
                continue
            tid = hashlib.sha256(f"{other_id}\x1f{artifact.id}".encode()).hexdigest()[:12]
            found.append({"id": tid, "a": other_id, "b": artifact.id, "reason": reason})
            if len(found) >= record:
                break
        now = time.time()
        owned = artifact.agent if artifact.scope == "private" else None
        rows_out = [(t["id"], t["a"], t["b"], artifact.scope, owned, t["reason"], now) for t in found]
        if rows_out:
            self.db.transaction(
                lambda conn: conn.executemany(
                    "INSERT INTO memory_tensions (id, a, b, scope, agent, reason, created)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    rows_out,
                ),
                what=f"memory tensions of {artifact.id}",
            )
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
        now = time.time()

        def write(conn: Connection) -> None:
            conn.execute(
                "UPDATE memory_artifacts SET superseded_by = ? WHERE id = ? AND superseded_by IS NULL", (keep, loser)
            )
            conn.execute("UPDATE memory_artifacts SET supersedes = COALESCE(supersedes, ?) WHERE id = ?", (loser, keep))
            conn.execute(
                "UPDATE memory_tensions SET status = 'resolved', kept = ?, resolved = ?, resolved_by = ? WHERE id = ?",
                (keep, now, agent, tension_id),
            )

        self.db.transaction(write, what=f"memory tension {tension_id}'s resolution")
        return {**t, "status": "resolved", "kept": keep, "superseded": loser}

    # ------------------------------------------------------------------ decay

    def touch(self, ids: list[str]) -> None:
        """Returned by a search: read once more, and fresh again for decay."""
        if not ids:
            return
        now = time.time()

        def write(conn: Connection) -> None:
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                conn.execute(
                    f"UPDATE memory_artifacts SET reads = reads + 1, last_access = ?"
                    f" WHERE id IN ({','.join('?' * len(chunk))})",
                    [now, *chunk],
                )

        self.db.transaction(write, what="memory reads")

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
        self.db.transaction(
            lambda conn: conn.executemany("UPDATE memory_artifacts SET tier = ? WHERE seq = ?", changes),
            what="memory tiers",
        )
        return {"tiers": counts, "moved": moved}
