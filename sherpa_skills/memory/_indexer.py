"""Puts new artifacts into the companion off the write path: one thread per SharedMemory, woken by writes.

A chromadb upsert commits its own SQLite file with several fsyncs (tens of milliseconds, hundreds on a busy disk),
so a write returns once the truth has committed and this thread indexes what was written when writes pause (a burst
in one upsert: an upsert locks the collection, and a write's near-duplicate query would wait for it). Nothing is lost on
the way: an artifact stays `indexed = 0` in the truth until the companion holds it, so a
crash leaves it to the catch-up (here, on the next write of any process) or to `memory reindex`. Until then its
vector stays in `held`, so searches and near-duplicate checks in this process still find it by meaning.
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import structlog

from ..errors import SherpaError
from ._models import Artifact

if TYPE_CHECKING:
    from ..semantic.companion import Companion
    from ._store import MemoryStore

log = structlog.get_logger(__name__)

# The thread indexes once writes pause for QUIET seconds, or MAX_LAG after the first held write, or at BATCH held.
QUIET = 0.1
MAX_LAG = 1.0
BATCH = 256
CATCH_UP = 32  # artifacts another process left out of the companion, indexed with each batch
MAX_HELD = 1024  # past this (the companion keeps failing), writes index synchronously again and say why
_BACKOFF = (1.0, 30.0)
_live: weakref.WeakSet[Indexer] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """A process that ends without closing its memory (a cached `shared_memory`) still indexes what it wrote."""
    for indexer in list(_live):
        try:
            indexer.close()
        except Exception as exc:  # exiting must not fail here: what is left stays pending in the truth
            log.warning("memory_index_pending_at_exit", reason=f"{type(exc).__name__}: {exc}")


class Indexer:
    """Artifacts written here and not yet in the companion (id → artifact, vector), and the thread that drains them."""

    def __init__(
        self,
        open_store: Callable[[], MemoryStore],
        companion: Callable[[], Companion],
        collection: str,
        metadata: Callable[[Artifact], dict[str, Any]],
        on_result: Callable[[str | None], None],
    ):
        self._open_store, self._companion, self.collection = open_store, companion, collection
        self._metadata, self._on_result = metadata, on_result
        self.lock = threading.RLock()  # held while `held` and the truth's `indexed` flags change together
        self._drain_lock = threading.Lock()  # one drain at a time: the thread's, or a caller's `flush`
        self.held: dict[str, tuple[Artifact, list[float]]] = {}
        self._store: MemoryStore | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def accepts(self) -> bool:
        return len(self.held) < MAX_HELD and not self._stop.is_set()

    def add(self, artifact: Artifact, vector: list[float]) -> None:
        """Index `artifact` soon; its truth row is committed with `indexed = 0`."""
        with self.lock:
            self.held[artifact.id] = (artifact, vector)
        if self._thread is None:
            _live.add(self)
            self._thread = threading.Thread(
                target=self._run, name=f"sherpa-memory-index:{self.collection}", daemon=True
            )
            self._thread.start()
        self._wake.set()

    def forget(self, ids: list[str]) -> None:
        """These ids are in the companion already (indexed synchronously), or deleted: nothing to do for them."""
        with self.lock:
            for aid in ids:
                self.held.pop(aid, None)

    def nearest(self, vector: list[float]) -> list[tuple[str, float]]:
        """Every held artifact as (id, cosine clamped to [0, 1]): exact, as the companion would score it."""
        with self.lock:
            items = [(aid, v) for aid, (_, v) in self.held.items()]
        if not items:
            return []
        import numpy as np

        # einsum, not `@`: a BLAS matmul wakes OpenBLAS's thread pool, whose spinning threads slow the next
        # onnxruntime query embedding several times over on a small machine.
        sims = np.einsum(
            "ij,j->i", np.asarray([v for _, v in items], dtype=np.float32), np.asarray(vector, dtype=np.float32)
        )
        return [(aid, max(0.0, min(1.0, float(s)))) for (aid, _), s in zip(items, sims, strict=True)]

    # ------------------------------------------------------------------ draining

    def drain(self) -> int:
        """Index one batch of held artifacts (and a few pending from elsewhere); how many went in. Raises
        CompanionUnavailable (or another SherpaError) when the companion cannot take them:
        they stay held and pending."""

        with self._drain_lock:
            with self.lock:
                batch = list(self.held.values())[:BATCH]
            if self._store is None:
                self._store = self._open_store()  # its own connection: the writer's may be mid-transaction
            store: MemoryStore = self._store
            mine = {a.id for a, _ in batch}
            others = [a for a in store.pending_artifacts(CATCH_UP + len(mine)) if a.id not in mine][:CATCH_UP]
            if not batch and not others:
                return 0
            companion = self._companion()
            if store.any_indexed():
                companion.count(self.collection)  # a collection gone under us must not be recreated holding only these
            if batch:
                companion.upsert(
                    self.collection,
                    [a.id for a, _ in batch],
                    [a.text for a, _ in batch],
                    [self._metadata(a) for a, _ in batch],
                    vectors=[v for _, v in batch],
                )
            if others:
                companion.upsert(
                    self.collection,
                    [a.id for a in others],
                    [a.text for a in others],
                    [self._metadata(a) for a in others],
                )
            ids = [*mine, *(a.id for a in others)]
            stored = {row[0] for row in store._rows_among("a.id", ids, "TRUE", [])}
            gone = [aid for aid in ids if aid not in stored]
            if gone:  # deleted by an operator while being indexed: the truth wins
                companion.delete(self.collection, gone)
            with self.lock:
                store.mark_indexed(ids)
                for aid in mine:
                    self.held.pop(aid, None)
            return len(ids)

    def flush(self) -> str | None:
        """Drain everything now, in the caller's thread; why the companion refused, or None when all went in."""
        try:
            while self.drain():
                pass
        except SherpaError as exc:
            reason = getattr(exc, "reason", str(exc))
            self._on_result(reason)
            return reason
        return None

    def _run(self) -> None:
        delay: float | None = None
        while not self._stop.is_set():  # `close` sets stop, then wake: checked before every wait, it is never missed
            self._wake.wait(delay)
            self._wake.clear()
            if self._stop.is_set():
                return
            first = time.monotonic()
            while time.monotonic() - first < MAX_LAG and len(self.held) < BATCH and not self._stop.is_set():
                if not self._wake.wait(QUIET):
                    break  # writes paused
                self._wake.clear()
            try:
                drained = 0
                while not self._stop.is_set() and (done := self.drain()):
                    drained += done
                delay = None
                if drained:
                    self._on_result(None)
            except SherpaError as exc:
                reason = getattr(exc, "reason", str(exc))
                self._on_result(reason)
                log.warning("memory_index_pending", reason=reason, artifacts=len(self.held))
                delay = min(_BACKOFF[1], (delay or _BACKOFF[0] / 2) * 2)
            except Exception as exc:  # the thread must not die silently: what it held stays pending in the truth
                log.error("memory_indexer_failed", error=f"{type(exc).__name__}: {exc}", artifacts=len(self.held))
                delay = _BACKOFF[1]

    def close(self) -> str | None:
        """Stop the thread, then index what is left (a process that exits leaves nothing pending it could index)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        _live.discard(self)
        problem = self.flush() if self.held else None
        if self._store is not None:
            self._store.close()
            self._store = None
        return problem
