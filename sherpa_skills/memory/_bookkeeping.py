"""Which artifacts the home's companion (the vector index) holds: flags on SQLite, a position on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

from ..db.connection import Connection
from ._models import Artifact
from ._reads import _MemoryReads
from ._sql import _COLUMNS, _artifact


class _CompanionBookkeeping(_MemoryReads):
    """The memory store's companion bookkeeping."""

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

        def write(conn: Connection) -> None:
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                conn.execute(
                    f"UPDATE memory_artifacts SET indexed = ? WHERE id IN ({','.join('?' * len(chunk))})",
                    [int(flag), *chunk],
                )

        self.db.transaction(write, what="the companion's indexed flags")

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
        self.db.transaction(
            lambda conn: conn.execute(
                "UPDATE memory_artifacts SET indexed = CASE WHEN seq <= ? THEN 1 ELSE 0 END"
                " WHERE indexed != CASE WHEN seq <= ? THEN 1 ELSE 0 END",
                (upto_seq, upto_seq),
            ),
            what="the companion's indexed flags",
        )
