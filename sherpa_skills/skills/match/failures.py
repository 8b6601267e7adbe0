"""Which defensive learnings a task should be shown: found by what the task means, with the procedures' scores.

A planner for "build the frontend" must see the `npm run build` failures mined under `npm-run`, and must not see
`tar` failures when it is asked to write a poem. Each learning is scored with the matcher's parts (`similarity`): the
exact cosine between the task and the learning's closest view (what ran: its task type and command; what it was
for: its `about`, the agent's description or the task, when known; the error is what went wrong, not what a task
asks for), and the share of the task's key-term weight (IDF over the learnings) its words cover:

    relevance = semantic + TERMS_WEIGHT * terms

A learning is shown when its relevance reaches FLOOR, or when it was learned under the task's exact task type
(always shown, relevance 1.0). Without meaning (the hashing embedder, a failed embedder) learnings are found by key
terms alone, at LEXICAL_FLOOR (the floor of the lexical pick this replaced), and the answer says so.

FLOOR and TERMS_WEIGHT are calibrated on the NL2Bash dev split (bench/learnings_bench.py, bench/RESULTS.md): each
command is a learning, kept with one annotator's description as its about (and again without it, as a shell history
gives it), and another annotator's description is a task that must find it. Of the weights and floors swept, the
pair shipped has the best recall among those that show a learning of an unrelated program at most once in five plans
in both stores: a stray learning costs a prompt line, a missed one lets the planner repeat a known failure.

SQLite holds the learnings; their vectors live in the companion's `learnings` collection, kept current on write
and by a sync whenever the store holds learnings the collection lacks, and rebuilt by `learn reindex`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import structlog
from pydantic import BaseModel, Field

from ..store.database import ProcedureDatabase
from ..store.models import CapturedLearning
from .similarity import TermIndex, cosine, coverage, semantic_query, stored_vectors, task_type_words, words

log = structlog.get_logger(__name__)

_Row = tuple[str | None, str, str]  # (task type, about, command) of a stored learning
_ABOUT = ".about"  # the companion id of a learning's about view: its id with this suffix

COLLECTION = "learnings"
#: Relevance a learning of another task type must reach (semantic + TERMS_WEIGHT * terms); see the module docstring.
FLOOR = 0.725
#: How much the key terms a task shares with a learning add to the cosine.
TERMS_WEIGHT = 0.1
#: Share of the task's key-term weight a learning must cover when meaning is unavailable.
LEXICAL_FLOOR = 0.3
#: Candidates weighed per lookup, from the companion's neighbours and from key terms each.
POOL = 40


def learning_items(learning_id: str, row: _Row) -> list[tuple[str, str]]:
    """(companion id, text) of each view of a learning whose meaning is indexed: what ran (task type and command) and,
    when known, what it was for (alone: a command beside it drowns its meaning). The error is what went wrong, not what
    a task asks for. A learning is as close to a task as its closest view."""
    task_type, about, command = row
    kind = (task_type or "").replace("-", " ").replace("_", " ")
    items = [(learning_id, ". ".join(x for x in (kind, command[:2000]) if x))]
    if about.strip():
        items.append((f"{learning_id}{_ABOUT}", about[:500]))
    return items


def learning_texts(rows: list[_Row]) -> list[list[str]]:
    """Per view, the texts of these learnings (a learning without an about repeats its command text):
    for calibration."""
    views = [learning_items("", row) for row in rows]
    return [[v[0][1] for v in views], [v[-1][1] for v in views]]


def learning_words(task_type: str | None, about: str, command: str) -> set[str]:
    """What a task may name to find a learning: the words of its task type, of what it was for and of its command."""
    return (
        task_type_words(task_type)
        | set(words(about[:500]))
        | set(words(re.sub(r"[^\w\s.-]", " ", command[:2000]).replace("/", " ")))
    )


class FoundLearning(BaseModel):
    """A learning shown for a task, with how relevant it is and why it was taken."""

    learning: CapturedLearning
    relevance: float = Field(description="semantic + TERMS_WEIGHT * terms (1.0 for the task's own task type)")
    semantic: float | None = Field(description="exact cosine between the task and the learning, in [0, 1]")
    terms: float = Field(description="share of the task's key-term weight (IDF) the learning covers, in [0, 1]")
    matched_terms: list[str] = Field(default_factory=list)
    why: str


class LearningsFound(BaseModel):
    """What `find(task)` decided: the learnings the task is about, most relevant first, and how they were weighed."""

    query: str
    task_type: str | None = None
    found: list[FoundLearning] = Field(default_factory=list)
    considered: int = 0
    floor: float = FLOOR
    mode: Literal["semantic", "lexical"] = "semantic"
    degraded: str | None = None


class FailureFinder:
    """Finds the learnings a task is about; the key-term index is rebuilt only when learnings were added."""

    def __init__(self, store: ProcedureDatabase, companion_path: Path | None = None, companion: Any = None):
        self.store = store
        self.companion_path = companion_path or store.path.parent / "companion"
        self._companion = companion
        self._owns_companion = companion is None  # a companion given is its giver's to close
        self._index: tuple[tuple[int, int], TermIndex, dict[str, _Row]] | None = None
        self._synced: tuple[int, int] | None = None

    def companion(self) -> Any:
        if self._companion is None:
            from ...semantic.companion import Companion

            self._companion = Companion(self.companion_path)
        return self._companion

    def close(self) -> None:
        """Release the companion it opened (its files); the store is its opener's. The next lookup opens it again."""
        companion = self._companion
        if companion is not None and self._owns_companion:
            self._companion = None
            companion.close()

    def _terms(self) -> tuple[TermIndex, dict[str, _Row]]:
        version = self.store.learnings_version()
        if self._index is None or self._index[0] != version:
            rows = {str(i): (task_type, about, command) for i, task_type, about, command in self.store.learning_rows()}
            index = TermIndex((i, learning_words(*row)) for i, row in rows.items())
            self._index = (version, index, rows)
        return self._index[1], self._index[2]

    def find(self, task: str, task_type: str | None = None, limit: int = 5) -> LearningsFound:
        """The learnings this task is about (at most `limit`), most relevant then most recently seen first."""
        found = LearningsFound(query=task, task_type=task_type)
        query = " ".join(x for x in (task.strip(), " ".join(sorted(task_type_words(task_type)))) if x)
        if not query or not self.store.learnings_version()[0]:
            return found
        terms, rows = self._terms()
        weights = terms.weights(query)
        own = [str(x.id) for x in self.store.learnings(task_type, limit=POOL)] if task_type else []
        # Meaning is read from the task as written (as calibrated); its task type's words only add key terms.
        vector, near, degraded = self._semantic(task.strip() or query)
        near = [i.removesuffix(_ABOUT) for i in near]
        ids = list(dict.fromkeys([*own, *near, *terms.search(weights, POOL)]))
        ids = [i for i in ids if i in rows]  # the companion may know an id the truth no longer has: the truth wins
        closest = self._closest(vector, ids, rows) if vector is not None else {}
        found.mode, found.degraded, found.considered = (
            ("semantic" if vector is not None else "lexical"),
            degraded,
            len(ids),
        )
        found.floor = FLOOR if vector is not None else LEXICAL_FLOOR
        scored: list[tuple[str, float, float | None, float, list[str], str]] = []
        for i in ids:
            kind = rows[i][0]
            share, matched = coverage(weights, learning_words(*rows[i]))
            semantic = closest.get(i)
            if vector is not None and semantic is None:
                continue  # not embeddable now: never shown on key terms alone while meaning decides the others
            relevance = (semantic or 0.0) + TERMS_WEIGHT * share if vector is not None else share
            if task_type and kind == task_type:
                scored.append((i, 1.0, semantic, share, matched, f"learned under this task type ({task_type})"))
            elif relevance >= found.floor:
                how = f"meaning {semantic:.2f}" if semantic is not None else "key terms"
                shared = f", shares {', '.join(matched)}" if matched else ""
                scored.append(
                    (
                        i,
                        relevance,
                        semantic,
                        share,
                        matched,
                        f"relevance {relevance:.2f} >= floor {found.floor:g} ({how}{shared})",
                    )
                )
        scored.sort(key=lambda x: -x[1])
        learnings = self.store.learnings_by_id([int(x[0]) for x in scored[: max(limit, 0)]])
        found.found = [
            FoundLearning(
                learning=learnings[int(i)],
                relevance=round(r, 4),
                semantic=None if s is None else round(s, 4),
                terms=round(t, 4),
                matched_terms=m,
                why=why,
            )
            for i, r, s, t, m, why in scored[: max(limit, 0)]
            if int(i) in learnings
        ]
        # Equally relevant ones (a task type's own learnings) are shown most recently seen first.
        found.found.sort(key=lambda x: (-x.relevance, -(x.learning.last_seen or x.learning.created)))
        return found

    # ------------------------------------------------------------------ meaning

    def _semantic(self, query: str) -> tuple[Any, list[str], str | None]:
        try:
            companion = self.companion()
        except Exception as exc:
            return None, [], f"semantic scoring unavailable ({exc})"
        if not getattr(getattr(companion, "embedder", None), "semantic", False):
            return semantic_query(companion, COLLECTION, query, POOL, None, "learnings are found by key terms")
        self.sync()  # learnings another writer added (mining, another process) are embedded before they are looked for
        vector, near, degraded = semantic_query(
            companion, COLLECTION, query, POOL, None, "learnings are found by key terms"
        )
        if vector is not None and degraded and self.sync(force=True):  # the collection went missing: rebuilt, ask again
            vector, near, degraded = semantic_query(
                companion, COLLECTION, query, POOL, None, "learnings are found by key terms"
            )
        return vector, near, degraded

    def _closest(self, vector: Any, ids: list[str], rows: dict[str, _Row]) -> dict[str, float]:
        """Each learning's exact cosine to the task: that of its closest view (stored vectors;
        missing ones embedded now)."""
        texts = {item: (text, _meta(rows[i])) for i in ids for item, text in learning_items(i, rows[i])}
        vectors = stored_vectors(self.companion(), COLLECTION, list(texts), lambda item: texts[item])
        closest: dict[str, float] = {}
        for item, v in vectors.items():
            i = item.removesuffix(_ABOUT)
            closest[i] = max(closest.get(i, 0.0), cosine(vector, v))
        return closest

    def sync(self, *, force: bool = False) -> int:
        """Embed the learnings the companion lacks (mined ones, another process's);
        returns how many. Cheap when current;
        `force` checks the companion even when this finder saw no new learning (its folder may have been deleted)."""
        version = self.store.learnings_version()
        if self._synced == version and not force:
            return 0
        try:
            companion = self.companion()
            if not version[0]:
                self._synced = version
                return 0
            _, rows = self._terms()
            items = {item: (text, _meta(row)) for i, row in rows.items() for item, text in learning_items(i, row)}
            try:
                known = companion.ids(COLLECTION) if companion.count(COLLECTION) != len(items) else None
            except Exception:
                known = set()  # missing (never indexed, or the folder was deleted): index everything
            if known is not None:
                missing = [item for item in items if item not in known]
                for start in range(0, len(missing), 256):
                    chunk = missing[start : start + 256]
                    companion.upsert(COLLECTION, chunk, [items[x][0] for x in chunk], [items[x][1] for x in chunk])
                gone = sorted(known - set(items))
                if gone:
                    companion.delete(COLLECTION, gone)
                self._synced = version
                return len({x.removesuffix(_ABOUT) for x in missing})
        except Exception as exc:  # the truth is unaffected; lookups fall back to key terms and say so
            log.warning("learnings_index_failed", reason=str(exc))
            return 0
        self._synced = version
        return 0

    def reindex(self) -> int:
        """Rebuild the companion's learnings collection from SQLite, the truth; returns how many learnings it holds."""
        _, rows = self._terms()
        items = ((item, text, _meta(row)) for i, row in rows.items() for item, text in learning_items(i, row))
        self.companion().rebuild(COLLECTION, items)
        self._synced = self.store.learnings_version()
        return len(rows)


def _meta(row: _Row) -> dict[str, Any]:
    return {"task_type": row[0]}
