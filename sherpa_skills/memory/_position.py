"""How far a companion has caught up with a PostgreSQL truth that several homes write: a watermark on the database's
own write order (`memory_artifacts.seq`), kept beside the companion's vectors.

On SQLite one home owns the truth, so each artifact's `indexed` flag says whether the (one) companion holds it. On
PostgreSQL every home keeps its own companion of the same rows, so the flag cannot speak for all of them: each
companion keeps the highest seq below which it holds every artifact. Writers take a transaction lock before they draw a
seq (MemoryStore.add_checked), so no seq becomes visible before a smaller one: "seq > watermark" never skips a row
that committed late. The file sits inside an embedded companion's folder, so deleting the folder forgets the
watermark too and the companion is refilled from the database.
"""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from ..db.connection import Connection

if TYPE_CHECKING:
    from ..semantic.companion import Companion


class CompanionPosition:
    """The watermark of one companion collection, and the ids this process put in it above the watermark."""

    def __init__(self, file: Path, *, inside_companion: bool):
        self.file, self.inside_companion = file, inside_companion
        self.lock = threading.Lock()
        self.above: set[str] = set()  # upserted here, not yet covered by the watermark (a smaller seq is missing)

    def upto(self) -> int:
        try:
            return int(self.file.read_text(encoding="ascii").strip() or 0)
        except (OSError, ValueError):  # never written, or the companion folder was deleted: start from the beginning
            return 0

    def _save(self, upto: int) -> None:
        if self.inside_companion and not self.file.parent.is_dir():
            return  # the companion folder is gone: its watermark goes with it
        self.file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.file.with_name(f"{self.file.name}.{os.getpid()}.{uuid.uuid4().hex[:12]}")  # per writer
        tmp.write_text(str(upto), encoding="ascii")
        os.replace(tmp, self.file)

    def mark(self, conn: Connection, ids: list[str]) -> None:
        """`ids` are in the companion now: move the watermark over every artifact, in seq order, that is."""
        with self.lock:
            upto = self.upto()
            self.above.update(ids)
            moved = upto
            while self.above:
                rows = conn.execute(
                    "SELECT seq, id FROM memory_artifacts WHERE seq > ? ORDER BY seq LIMIT ?",
                    (moved, len(self.above) + 1),
                ).fetchall()
                gap = not rows
                for seq, aid in rows:
                    if aid not in self.above:
                        gap = True  # an artifact this companion lacks: the watermark stops below it
                        break
                    self.above.discard(aid)
                    moved = seq
                if gap:
                    break
            if moved != upto:
                self._save(moved)

    def reset(self, upto: int) -> None:
        """After a rebuild that read everything up to `upto`."""
        with self.lock:
            self.above.clear()
            self._save(upto)

    def pending(self, conn: Connection, limit: int) -> list[tuple[int, str]]:
        """(seq, id) of the oldest artifacts this companion lacks, at most `limit`."""
        with self.lock:
            above = set(self.above)
        rows = conn.execute(
            "SELECT seq, id FROM memory_artifacts WHERE seq > ? ORDER BY seq LIMIT ?",
            (self.upto(), limit + len(above)),
        ).fetchall()
        return [(seq, aid) for seq, aid in rows if aid not in above][:limit]

    def count_pending(self, conn: Connection) -> int:
        behind = int(conn.execute("SELECT COUNT(*) FROM memory_artifacts WHERE seq > ?", (self.upto(),)).fetchone()[0])
        return max(0, behind - len(self.above))


def position_file(home: Path, companion: Companion, collection: str) -> tuple[Path, bool]:
    """Where a companion's watermark is kept: inside its folder, or (a chroma server) in the home, by server."""
    if companion.path is not None:
        return companion.path / f"{collection}.seq", True
    return home / "companion-positions" / f"{companion.host}_{companion.port}_{collection}.seq", False
