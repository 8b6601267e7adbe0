"""The scores relevance decisions are made of, written once for procedures (`matcher`) and learnings (`learnings`).

Every score keeps its meaning from one query to the next, so a fixed floor can be calibrated on it: the exact cosine
between the task's vector and an item's stored vector (the companion's neighbours are only approximate), and the share
of the task's key-term weight an item covers, each term weighed by how rare it is among the items (IDF).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import Any

import structlog

log = structlog.get_logger(__name__)

_WORD = re.compile(r"[a-z0-9][a-z0-9_]*")
# A real stop-word list: function words and the verbs every task description uses.
STOP_WORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before being below between
    both but by can could did do does doing done down during each every few for from further had has have having he her
    here hers him his how i if in into is it its itself just me more most my myself no nor not now of off on once only
    or other our ours out over own same she should so some such than that the their theirs them then there these they
    this those through to too under until up very was we were what when where which while who whom whose why will with
    would you your yours please want need like make sure get via per using use""".split()
)


def words(text: str) -> list[str]:
    """Lower-case key terms of a text, stop words removed."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]


def task_type_words(task_type: str | None) -> set[str]:
    return set(words((task_type or "").replace("-", " ").replace("_", " ")))


class TermIndex:
    """Items' key terms with their IDF, as numpy postings: a term shared by thousands of items costs one vector add,
    not a Python loop. Built from rows of (id, terms), or from postings saved beside a store (`from_postings`)."""

    def __init__(self, rows: Iterable[tuple[str, Iterable[str]]] = (), *, words_of: Callable[[str], list[str]] = words):
        import numpy as np

        ids: list[str] = []
        postings: dict[str, list[int]] = {}
        for item_id, terms in rows:
            index = len(ids)
            ids.append(item_id)
            for term in set(terms):
                postings.setdefault(term, []).append(index)
        self._setup(ids, {t: np.asarray(ix, dtype=np.int32) for t, ix in postings.items()}, words_of)

    @classmethod
    def from_postings(
        cls, ids: list[str], postings: dict[str, Any], words_of: Callable[[str], list[str]] = words
    ) -> TermIndex:
        """An index over postings already built (term → row numbers into `ids`)."""
        index = cls.__new__(cls)
        index._setup(ids, postings, words_of)
        return index

    def _setup(self, ids: list[str], postings: dict[str, Any], words_of: Callable[[str], list[str]]) -> None:
        import numpy as np

        self.ids, self.postings, self.words = ids, postings, words_of
        self.n = max(len(ids), 1)
        self._scores = np.zeros(len(ids), dtype=np.float32)

    def _idf(self, df: int) -> float:
        return math.log(1.0 + (self.n - df + 0.5) / (df + 0.5))

    def idf_of(self, term: str) -> float:
        """A stored term's IDF; 0 for a term no item has (it cannot be shared)."""
        rows = self.postings.get(term)
        return self._idf(len(rows)) if rows is not None else 0.0

    def weights(self, query: str) -> dict[str, float]:
        """The task's key terms and their weights; a word no item has weighs as much as the rarest."""
        return {
            w: self._idf(len(self.postings[w]) if w in self.postings else 0) for w in dict.fromkeys(self.words(query))
        }

    def search(self, weights: dict[str, float], limit: int) -> list[str]:
        """The ids of the `limit` items covering the most key-term weight."""
        import numpy as np

        hits = [(self.postings[t], w) for t, w in weights.items() if t in self.postings]
        if not hits or not self.ids:
            return []
        scores = self._scores
        for indices, weight in hits:
            scores[indices] += weight
        k = min(limit, len(scores))
        top = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        top = top[scores[top] > 0]
        top = top[np.argsort(-scores[top], kind="stable")]
        found = [self.ids[i] for i in top]
        scores.fill(0.0)
        return found


def coverage(weights: dict[str, float], item_terms: set[str]) -> tuple[float, list[str]]:
    """Share of the task's key-term weight that the item's own terms cover, and which terms."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0, []
    matched = [t for t in weights if t in item_terms]
    return sum(weights[t] for t in matched) / total, matched


def cosine(a: Any, b: Any) -> float:
    """Cosine of two vectors, clamped to [0, 1]: opposite meanings are as irrelevant as unrelated ones."""
    import numpy as np

    a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    denominator = float(np.linalg.norm(a) * np.linalg.norm(b)) or 1.0
    return max(0.0, min(1.0, float(a @ b) / denominator))


def cosines(query: Any, vectors: dict[str, Any]) -> dict[str, float]:
    """`cosine` of the query with each of these vectors (by key), in one product; empty without a query."""
    if query is None or not vectors:
        return {}
    import numpy as np

    m = np.asarray(list(vectors.values()), dtype=np.float32)
    sims = cosine_row(query, m, np.linalg.norm(m, axis=1))
    return {key: max(0.0, min(1.0, float(x))) for key, x in zip(vectors, sims, strict=True)}


def cosine_row(query: Any, matrix: Any, lengths: Any) -> Any:
    """The query's cosine with each row of `matrix` (whose lengths are `lengths`), unclamped, as an array; a zero row
    or query scores 0."""
    import numpy as np

    q = np.asarray(query, dtype=np.float32)
    norms = lengths * (float(np.linalg.norm(q)) or 1.0)
    # einsum, not `m @ q`: a BLAS product wakes OpenBLAS threads that then slow the next query embedding.
    return np.einsum("ij,j->i", matrix, q) / np.where(norms > 0, norms, 1.0)


def semantic_query(
    companion: Any, collection: str, query: str, pool: int, where: dict[str, Any] | None, what: str
) -> tuple[Any, list[str], str | None]:
    """The task's vector and the ids of its approximate neighbours in `collection`; or why meaning is unavailable.

    `what` says what a missing meaning costs (it ends the reason, e.g. "nothing is replayed by meaning").
    """
    try:
        if not getattr(companion.embedder, "semantic", False):
            return (
                None,
                [],
                (
                    f"the embedder {companion.embedder.name!r} matches words, not meaning; "
                    f"the relevance floor is calibrated for MiniLM, so {what}"
                ),
            )
        vector = companion.embed_query(query)
    except Exception as exc:
        return None, [], f"semantic scoring unavailable ({exc})"
    try:
        near = [item_id for item_id, _ in companion.query(collection, query, n=pool, where=where, vector=vector)]
    except Exception as exc:  # the index is missing or broken: candidates come from key terms, scores stay exact
        log.warning("companion_unavailable", collection=collection, reason=str(exc))
        return (
            vector,
            [],
            f"semantic index unavailable ({exc}); candidates found by key terms only (`learn reindex` rebuilds it)",
        )
    return vector, near, None


def stored_vectors(
    companion: Any, collection: str, ids: list[str], describe: Callable[[str], tuple[str, dict[str, Any] | None]]
) -> dict[str, Any]:
    """Stored vectors of these items; any the companion lacks are embedded now (and stored, so the index heals).

    `describe(id)` gives the text whose meaning is indexed and its metadata.
    """
    try:
        found = companion.vectors(collection, ids)
    except Exception:
        found = {}
    missing = [i for i in ids if i not in found]
    if missing:
        described = [describe(i) for i in missing]
        try:
            vectors = companion.embedder.embed([text for text, _ in described])
        except Exception as exc:
            log.warning("embed_failed", reason=str(exc))
            return found
        found.update(dict(zip(missing, vectors, strict=True)))
        try:
            companion.upsert(collection, missing, [text for text, _ in described], [meta for _, meta in described])
        except Exception as exc:  # the truth is unaffected; the next reindex catches up
            log.debug("companion_heal_failed", collection=collection, reason=str(exc))
    return found
