"""What matching searches, kept in one rebuildable file beside the store: every procedure's vector and key terms.

Exact search needs no approximate index at this size: the cosine against every stored vector is one numpy
matrix-vector product (10k × 384 float32, 15 MB), so procedures are not kept in chromadb, and a fresh process does
not import it (about a second) to match. The store (SQLite or PostgreSQL) stays the truth: the
file (`index/procedures.npz` in the home) records the store generation it reflects and, per procedure, a digest of
the text its vector was embedded from; a changed generation re-reads the rows (the key-term postings with them, so a
fresh process need not rebuild them), and a vector whose text changed, or that is missing, is embedded again —
never scored 0. Deleting the file loses nothing: `learn reindex` (or the next match, a few at a time) rebuilds it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import structlog

from ...errors import StoreError
from ..store.database import ProcedureDatabase
from .similarity import TermIndex

log = structlog.get_logger(__name__)

FILE = "procedures.npz"
#: 2: vectors hold commands as their words (`command_words`); a file of another format is built again from the store.
FORMAT = 2
#: At most this many missing vectors are embedded inside a match (about a second); more waits for `learn reindex`.
INLINE_EMBED = 64
BATCH = 256

TermsOf = Callable[[str, str, list[str], list[str]], set[str]]


_COMMAND_WORD = re.compile(r"[A-Za-z][A-Za-z]+")


def command_words(command: str) -> str:
    """A command as the words MiniLM can read: programs, option names, plain words, each once. Paths, quoted
    values and punctuation become many word pieces that add cost but little meaning (their agreement with the
    task is checked literally); on NL2Bash this text decides as well as the whole command and embeds 1.6× faster."""
    return " ".join(dict.fromkeys(_COMMAND_WORD.findall(command)))


def index_text(task_type: str, description: str, tags: list[str], commands: list[str]) -> str:
    """The text whose meaning a procedure's vector holds:
    task type, description, tags and the words of its first commands."""
    parts = [task_type.replace("-", " ").replace("_", " "), description, " ".join(tags)]
    parts += [command_words(c) for c in commands[:8]]
    return ". ".join(x for x in parts if x)


def digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


class Snapshot:
    """The index as of one store generation: rows (every procedure not rejected, in store order), their vectors
    (a row may lack one), and the key-term postings in CSR form (terms, offsets, rows)."""

    def __init__(self, arrays: dict[str, Any], meta: dict[str, Any]):
        import numpy as np

        self.meta = meta
        self.stamp = (int(meta["store"]), int(meta["generation"]))
        self.embedder = str(meta.get("embedder") or "")
        self.ids: Any = arrays["ids"]
        self.task_types: Any = arrays["task_types"]
        self.active: Any = arrays["active"].astype(bool)
        self.digests: Any = arrays["digests"]
        self.vectors: Any = arrays["vectors"]
        self.has_vector: Any = arrays["has_vector"].astype(bool)
        self.terms: Any = arrays["terms"]
        self.offsets: Any = arrays["offsets"]
        self.rows: Any = arrays["rows"]
        self.id_list: list[str] = self.ids.tolist()
        self.row_of = {pid: i for i, pid in enumerate(self.id_list)}
        if "norms" in arrays:  # saved with the vectors: a fresh process computes nothing over 10k rows to start
            self.norms = arrays["norms"]
        else:
            norms = np.linalg.norm(self.vectors, axis=1) if len(self.vectors) else np.zeros(0, dtype=np.float32)
            self.norms = np.where(norms > 0, norms, 1.0).astype(np.float32)
        self._term_indexes: dict[bool, TermIndex] = {}

    # ------------------------------------------------------------ building and files

    @classmethod
    def build(
        cls,
        rows: Iterable[tuple[str, str, str, list[str], list[str], str]],
        stamp: tuple[int, int],
        embedder: str,
        dim: int,
        terms_of: TermsOf,
        previous: Snapshot | None,
    ) -> tuple[Snapshot, list[tuple[str, str]]]:
        """A snapshot of these store rows; vectors whose text is unchanged are taken from `previous`.
        Returns it with the (id, text) of the rows still needing a vector."""
        import numpy as np

        ids: list[str] = []
        task_types, active, digests, texts = [], [], [], []
        postings: dict[str, list[int]] = {}
        for pid, task_type, description, tags, commands, status in rows:
            index = len(ids)
            ids.append(pid)
            task_types.append(task_type)
            active.append(status == "active")
            text = index_text(task_type, description, tags, commands)
            texts.append(text)
            digests.append(digest(text))
            for term in terms_of(task_type, description, tags, commands):
                postings.setdefault(term, []).append(index)
        vectors = np.zeros((len(ids), dim), dtype=np.float32)
        has = np.zeros(len(ids), dtype=bool)
        if previous is not None and previous.embedder == embedder and previous.vectors.shape[1:] == (dim,):
            for i, (pid, d) in enumerate(zip(ids, digests, strict=True)):
                j = previous.row_of.get(pid)
                if j is not None and previous.has_vector[j] and previous.digests[j] == d:
                    vectors[i] = previous.vectors[j]
                    has[i] = True
        terms = sorted(postings)
        offsets = np.zeros(len(terms) + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([len(postings[t]) for t in terms])
        flat = np.fromiter((i for t in terms for i in postings[t]), dtype=np.int32, count=int(offsets[-1]))
        arrays = {
            "ids": np.asarray(ids, dtype=str),
            "task_types": np.asarray(task_types, dtype=str),
            "active": np.asarray(active, dtype=bool),
            "digests": np.asarray(digests, dtype=str),
            "vectors": vectors,
            "has_vector": has,
            "terms": np.asarray(terms, dtype=str),
            "offsets": offsets,
            "rows": flat,
        }
        meta = {"format": FORMAT, "store": stamp[0], "generation": stamp[1], "embedder": embedder, "dim": dim}
        snap = cls(arrays, meta)
        missing = [(ids[i], texts[i]) for i in np.flatnonzero(~has)]
        return snap, missing

    @classmethod
    def load(cls, path: Path) -> Snapshot | None:
        """The snapshot in `path`, or None when there is none; a file that cannot be read is reported and ignored."""
        import numpy as np

        if not path.is_file():
            return None
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}
            meta = json.loads(str(arrays.pop("meta")))
            if meta.get("format") != FORMAT:  # written by another version: its vectors may embed other texts
                log.info("procedure_index_outdated", path=str(path), format=meta.get("format"), expected=FORMAT)
                return None
            _check(arrays, int(meta["dim"]))
            return cls(arrays, meta)
        except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile, json.JSONDecodeError) as exc:
            log.warning("procedure_index_unreadable", path=str(path), reason=f"{type(exc).__name__}: {exc}")
            return None

    def save(self, path: Path) -> None:
        """Write atomically (a temporary file renamed over the old one), so a reader never sees half a file."""
        import numpy as np

        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".procedures-", suffix=".npz", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(
                    f,
                    meta=np.asarray(json.dumps(self.meta)),
                    ids=self.ids,
                    task_types=self.task_types,
                    active=self.active,
                    digests=self.digests,
                    vectors=self.vectors,
                    has_vector=self.has_vector,
                    terms=self.terms,
                    offsets=self.offsets,
                    rows=self.rows,
                    norms=self.norms,
                )
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    # ------------------------------------------------------------ reading

    def set_vectors(self, ids: list[str], digests: list[str], vectors: Any) -> int:
        """Put fresh vectors in (ids the snapshot lacks are skipped); returns how many rows changed."""
        import numpy as np

        vectors = np.asarray(vectors, dtype=np.float32)
        changed = 0
        for pid, d, v in zip(ids, digests, vectors, strict=True):
            i = self.row_of.get(pid)
            if i is None:
                continue
            self.vectors[i], self.digests[i], self.has_vector[i] = v, d, True
            norm = float(np.linalg.norm(v))
            self.norms[i] = norm if norm > 0 else 1.0
            changed += 1
        return changed

    def vector(self, pid: str, text_digest: str) -> Any | None:
        """The stored vector of this procedure when it was embedded from this very text; else None (recompute it)."""
        i = self.row_of.get(pid)
        if i is None or not self.has_vector[i] or self.digests[i] != text_digest:
            return None
        return self.vectors[i]

    def allowed(self, include_candidates: bool, task_type: str | None) -> Any:
        mask = self.has_vector.copy() if include_candidates else self.has_vector & self.active
        if task_type:
            mask &= self.task_types == task_type
        return mask

    def nearest(self, query: Any, n: int, include_candidates: bool, task_type: str | None) -> list[tuple[str, float]]:
        """The `n` procedures whose vectors are closest to `query` (exact cosine, best first), among those allowed."""
        import numpy as np

        mask = self.allowed(include_candidates, task_type)
        allowed = int(mask.sum())
        if n <= 0 or not allowed:
            return []
        q = np.asarray(query, dtype=np.float32)
        # Every row at once (cheaper than copying out the allowed ones). einsum, not `@`: a matrix-vector product this
        # size wakes OpenBLAS's thread pool, whose spinning threads then slowed the next query embedding about 4x.
        sims = np.einsum("ij,j->i", self.vectors, q) / (self.norms * (float(np.linalg.norm(q)) or 1.0))
        sims[~mask] = -np.inf
        k = min(n, allowed)
        top = np.argpartition(-sims, k - 1)[:k] if k < len(sims) else np.arange(len(sims))
        top = top[np.argsort(-sims[top], kind="stable")]
        return [(self.id_list[i], float(sims[i])) for i in top if sims[i] > -np.inf]

    def term_index(self, include_candidates: bool, words: Callable[[str], list[str]]) -> TermIndex:
        """The key-term postings of active procedures (or of every one not rejected), with their own IDF."""
        import numpy as np

        found = self._term_indexes.get(include_candidates)
        if found is not None:
            return found
        names: list[str] = self.terms.tolist()
        if include_candidates or bool(self.active.all()):
            ids, rows, offsets = self.id_list, self.rows, self.offsets
        else:  # renumber the rows of active procedures only, as if the others were not stored
            local = np.cumsum(self.active) - 1
            keep = self.active[self.rows]
            rows = local[self.rows[keep]].astype(np.int32)
            counts = np.concatenate([[0], np.cumsum(keep)])
            offsets = counts[self.offsets]
            ids = [pid for pid, a in zip(self.id_list, self.active.tolist(), strict=True) if a]
        postings = {t: rows[offsets[i] : offsets[i + 1]] for i, t in enumerate(names) if offsets[i + 1] > offsets[i]}
        found = self._term_indexes[include_candidates] = TermIndex.from_postings(ids, postings, words)
        return found

    @property
    def coverage(self) -> tuple[int, int]:
        """(rows with a vector, rows)."""
        return int(self.has_vector.sum()), len(self.id_list)


def _check(arrays: dict[str, Any], dim: int) -> None:
    """Shapes and ranges agree, so a damaged or hand-made file is refused before a matmul or a posting reads past it."""
    n = len(arrays["ids"])
    for name in ("task_types", "active", "digests", "has_vector", "norms"):
        if arrays[name].shape != (n,):
            raise ValueError(f"{name} has shape {arrays[name].shape}, expected ({n},)")
    if arrays["vectors"].shape != (n, dim) or arrays["vectors"].dtype.kind != "f":
        raise ValueError(f"vectors have shape {arrays['vectors'].shape}, expected ({n}, {dim})")
    offsets, rows = arrays["offsets"], arrays["rows"]
    if (
        offsets.shape != (len(arrays["terms"]) + 1,)
        or (len(offsets) and (offsets[0] != 0 or offsets[-1] != len(rows)))
        or (len(offsets) > 1 and bool((offsets[1:] < offsets[:-1]).any()))
    ):
        raise ValueError("term offsets do not fit the postings")
    if len(rows) and (int(rows.min()) < 0 or int(rows.max()) >= n):
        raise ValueError("a term posting names a row the index lacks")


class ProcedureIndex:
    """The snapshot matching reads, kept in step with the store: re-read when its generation moves, saved for the
    next process, vectors embedded in batches when asked (`refresh`) or a few at a time when found missing."""

    def __init__(self, store: ProcedureDatabase, path: Path, embedder: Callable[[], Any], terms_of: TermsOf):
        self.store = store
        self.path = Path(path)
        self._embedder = embedder
        self.terms_of = terms_of
        self._snap: Snapshot | None = None

    @property
    def file(self) -> Path:
        return self.path / FILE

    def snapshot(self, *, embed: int = INLINE_EMBED, progress: Callable[[int], None] | None = None) -> Snapshot:
        """The index as of the store's current generation, with up to `embed` missing vectors embedded now."""
        stamp = (self.store.identity(), self.store.generation())
        try:
            embedder = self._embedder()
            name, dim = embedder.name, embedder.dim
        except Exception as exc:  # key terms still work; the saved vectors are left for when it loads again
            log.warning("embedder_unavailable", reason=str(exc))
            embedder, name, dim = None, "", 0
        snap = self._snap
        if snap is None or snap.stamp != stamp or snap.embedder != name:
            loaded = Snapshot.load(self.file)
            if loaded is not None and loaded.stamp == stamp and (loaded.embedder == name or embedder is None):
                snap = loaded
            else:  # vectors of unchanged texts are kept from the newest snapshot at hand
                previous = snap if snap is not None and (loaded is None or snap.stamp[1] >= loaded.stamp[1]) else loaded
                snap, _ = Snapshot.build(self.store.index_rows(), stamp, name, dim, self.terms_of, previous)
                if embedder is not None:
                    self._save(snap)
            self._snap = snap
        if embedder is not None and embed > 0 and not bool(snap.has_vector.all()):
            self._embed_missing(snap, embed, progress)
        return snap

    def _embed_missing(self, snap: Snapshot, limit: int, progress: Callable[[int], None] | None) -> None:
        import numpy as np

        todo = [int(i) for i in np.flatnonzero(~snap.has_vector)][:limit]
        if not todo:
            return
        texts = {int(i): t for i, t in self._texts([snap.id_list[i] for i in todo]).items()}
        embedder = self._embedder()
        done = 0
        try:
            for start in range(0, len(todo), BATCH):
                chunk = [i for i in todo[start : start + BATCH] if i in texts]
                vectors = embedder.embed([texts[i] for i in chunk])
                snap.set_vectors([snap.id_list[i] for i in chunk], [digest(texts[i]) for i in chunk], vectors)
                done += len(chunk)
                if progress is not None:
                    progress(done)
        except Exception as exc:  # the truth is unaffected; the vectors stay missing and are tried again
            log.warning("procedure_embed_failed", reason=str(exc))
        self._save(snap)

    def _texts(self, ids: list[str]) -> dict[int, str]:
        """Row number → text to embed, read again from the store (the snapshot keeps digests, not texts)."""
        snap = self._snap
        assert snap is not None
        return {
            snap.row_of[pid]: index_text(task_type, description, tags, commands)
            for pid, task_type, description, tags, commands, _ in self.store.index_rows(ids)
            if pid in snap.row_of
        }

    def _save(self, snap: Snapshot, strict: bool = False) -> None:
        try:
            snap.save(self.file)
        except OSError as exc:
            if strict:
                raise StoreError(f"cannot write the procedure index {self.file}: {exc}") from exc
            log.warning("procedure_index_not_saved", path=str(self.file), reason=str(exc))  # matching goes on in memory

    def put(self, pids: list[str], texts: list[str], vectors: Any) -> None:
        """Vectors just embedded for these procedures (from their current text): keep them, and save."""
        snap = self._snap
        if snap is not None and snap.set_vectors(pids, [digest(t) for t in texts], vectors):
            self._save(snap)

    def rebuild(self, progress: Callable[[int], None] | None = None) -> int:
        """Every vector embedded again from the store, the truth; returns how many procedures the index holds."""
        self._snap = None
        embedder = self._embedder()
        snap, _ = Snapshot.build(
            self.store.index_rows(),
            (self.store.identity(), self.store.generation()),
            embedder.name,
            embedder.dim,
            self.terms_of,
            None,
        )
        self._snap = snap
        return self._complete(snap, progress)

    def refresh(self, progress: Callable[[int], None] | None = None) -> int:
        """Bring the index up to date with the store, embedding every vector it lacks; returns how many it holds."""
        return self._complete(self.snapshot(embed=0), progress)

    def _complete(self, snap: Snapshot, progress: Callable[[int], None] | None) -> int:
        lacking = not bool(snap.has_vector.all()) or not self.file.is_file()
        self._embed_missing(snap, len(snap.id_list), progress)
        if not bool(snap.has_vector.all()):
            raise StoreError(
                f"the procedure index at {self.file} could not embed {int((~snap.has_vector).sum())} "
                "procedures; see the log"
            )
        if lacking:
            self._save(snap, strict=True)
        return len(snap.id_list)
