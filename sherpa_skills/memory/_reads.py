"""Reading shared memory, always as some agent: one artifact, those among ids, full-text ranking."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..errors import StoreError
from ._base import _MemoryStoreBase
from ._models import Artifact, check_filters, check_limit
from ._sql import _COLUMNS, MEMORY_TEXT, _artifact, query_terms, reader_filter


class _MemoryReads(_MemoryStoreBase):
    """The memory store's reads."""

    # ------------------------------------------------------------------ reading (always as some agent)

    def get(self, artifact_id: str, *, agent: str | None, history: bool = True) -> Artifact:
        where, args = reader_filter(agent, history=history, db=self.db)
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
            agent, scope, author=author, kind=kind, metadata=metadata, history=history, db=self.db
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
            agent, scope, author=author, kind=kind, metadata=metadata, history=history, db=self.db
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
        """Full-text ranking of the visible artifacts, best first: (id, seq, relevance), higher is better (-bm25 on
        SQLite, ts_rank on PostgreSQL).

        Where the index ranks alone (FTS5), with only the visibility filter, ranks the 4 × limit best matches in the
        index, then keeps the visible ones: those are exactly the best visible matches down to that rank, and joining
        every match to its row first costs about as much as the ranking itself. With a selective filter (scope,
        author, kind, metadata), or when fewer than `limit` survive, the joined query runs instead.
        """
        check_limit(limit)
        where, args = reader_filter(
            agent,
            scope,
            author=author,
            kind=kind,
            metadata=check_filters(metadata),
            history=history,
            db=self.db,
        )
        words = query_terms(query)
        if not words:
            return []
        text = self.db.text_search(MEMORY_TEXT)
        if not text.ranks_alone or scope != "all" or author is not None or kind is not None or metadata:
            return self._lexical_joined(words, where, args, limit)
        wide = 4 * limit
        ranked = text.rank(words, wide)
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
        found = [(visible[seq], seq, relevance) for seq, relevance in ranked if seq in visible][:limit]
        if len(found) >= limit or len(ranked) < wide:
            return found
        return self._lexical_joined(words, where, args, limit)

    def _lexical_joined(
        self, words: list[str], where: str, args: list[Any], limit: int
    ) -> list[tuple[str, int, float]]:
        """The ranking and the visibility filter in one query."""
        rows = self.db.text_search(MEMORY_TEXT).search(words, "a.id, a.seq", where, args, limit)
        return [(aid, seq, relevance) for aid, seq, relevance in rows]
