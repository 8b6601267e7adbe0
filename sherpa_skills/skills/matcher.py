"""Find the procedure for a task: an Aho-Corasick pass over task types, tags and key terms, plus meaning
through the chromadb companion; when the companion is unavailable, FTS5 stands in and the result says so."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from .models import CapturedProcedure
from .store import SkillStore

log = structlog.get_logger(__name__)

COLLECTION = "procedures"
_WORD = re.compile(r"[a-z0-9][a-z0-9_.+-]*")
_STOP = frozenset("""a an and are as at be by for from has have in into is it its of on or that the this to was were will with
    then than them they their there these those what when where which who why how all any can could should would do does did
    run runs running use using via per""".split())
WEIGHTS = {"task_type": 3.0, "task_word": 1.5, "tag": 2.0, "term": 1.0, "program": 1.0}
SEMANTIC_WEIGHT = 0.6


def words(text: str) -> list[str]:
    return [w.strip(".+-_") for w in _WORD.findall(text.lower()) if w.strip(".+-_")]


def procedure_terms(p: CapturedProcedure) -> dict[str, float]:
    """What a query may name to find this procedure, with how much each counts."""
    return terms_of(p.task_type, p.description, p.tags, [s.command for s in p.steps])


def terms_of(task_type: str, description: str, tags: list[str], commands: list[str]) -> dict[str, float]:
    terms: dict[str, float] = {}

    def put(term: str, weight: float) -> None:
        term = " ".join(words(term))
        if term and term not in _STOP and len(term) > 1:
            terms[term] = max(terms.get(term, 0.0), weight)

    spaced = task_type.replace("-", " ").replace("_", " ")
    put(spaced, WEIGHTS["task_type"])
    for w in words(spaced):
        put(w, WEIGHTS["task_word"])
    for tag in tags:
        put(tag, WEIGHTS["tag"])
    for w in words(description):
        if len(w) > 2:
            put(w, WEIGHTS["term"])
    for command in commands:
        first = command.strip().split(" ", 1)[0]
        put(first.rsplit("/", 1)[-1], WEIGHTS["program"])
    return terms


@dataclass
class Match:
    procedure: CapturedProcedure
    score: float
    lexical: float
    semantic: float | None
    matched_terms: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        p = self.procedure
        return {"procedure_id": p.id, "task_type": p.task_type, "version": p.version, "confidence": p.confidence,
                "score": round(self.score, 4), "lexical": round(self.lexical, 4),
                "semantic": None if self.semantic is None else round(self.semantic, 4), "matched_terms": self.matched_terms}


@dataclass
class MatchResult:
    matches: list[Match]
    mode: str  # "hybrid" | "lexical"
    degraded: str | None = None


class _Lexicon:
    """Every procedure's key terms in one Aho-Corasick automaton; postings as numpy arrays, so a term shared by
    thousands of procedures costs one vector add, not a Python loop."""

    def __init__(self, store: SkillStore, include_candidates: bool):
        import ahocorasick
        import numpy as np

        self.ids: list[str] = []
        postings: dict[str, tuple[list[int], list[float]]] = {}
        for pid, task_type, description, tags, commands in store.term_rows(include_candidates):
            index = len(self.ids)
            self.ids.append(pid)
            for term, weight in terms_of(task_type, description, tags, commands).items():
                entry = postings.setdefault(term, ([], []))
                entry[0].append(index)
                entry[1].append(weight)
        automaton = ahocorasick.Automaton()
        for term, (indices, weights) in postings.items():
            automaton.add_word(f" {term} ", (term, np.asarray(indices, dtype=np.int32), np.asarray(weights, dtype=np.float32)))
        if postings:
            automaton.make_automaton()
        self.automaton = automaton if postings else None
        self._scores = np.zeros(len(self.ids), dtype=np.float32)

    def search(self, query: str, limit: int) -> dict[str, tuple[float, list[str]]]:
        """The `limit` best-scoring procedures for the query's key terms, with the terms each matched."""
        import numpy as np

        if self.automaton is None:
            return {}
        hits: dict[str, Any] = {}
        for _, (term, indices, weights) in self.automaton.iter(f" {' '.join(words(query))} "):
            hits[term] = (indices, weights)
        if not hits:
            return {}
        scores = self._scores
        for indices, weights in hits.values():
            scores[indices] += weights
        k = min(limit, len(scores))
        top = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        top = top[scores[top] > 0]
        found = {int(i): float(scores[i]) for i in top}
        scores.fill(0.0)
        chosen = np.fromiter(found, dtype=np.int32, count=len(found))
        matched: dict[int, list[str]] = {i: [] for i in found}
        for term, (indices, _) in hits.items():
            at = np.minimum(np.searchsorted(indices, chosen), len(indices) - 1)
            for slot in np.flatnonzero(indices[at] == chosen):
                matched[int(chosen[slot])].append(term)
        return {self.ids[i]: (score, matched[i]) for i, score in found.items()}


class Matcher:
    """Ranks procedures for a query; the automaton is rebuilt only when the store's generation changes."""

    def __init__(self, store: SkillStore, companion_path: Path | None = None, companion: Any = None):
        self.store = store
        self.companion_path = companion_path or store.path.parent / "companion"
        self._companion = companion
        self._lexicons: dict[bool, tuple[int, _Lexicon]] = {}

    def companion(self) -> Any:
        if self._companion is None:
            from ..semantic.companion import Companion

            self._companion = Companion(self.companion_path)
        return self._companion

    def _lexical(self, query: str, include_candidates: bool, limit: int) -> dict[str, tuple[float, list[str]]]:
        generation = self.store.generation()
        cached = self._lexicons.get(include_candidates)
        if cached is None or cached[0] != generation:
            cached = (generation, _Lexicon(self.store, include_candidates))
            self._lexicons[include_candidates] = cached
        return cached[1].search(query, limit)

    def match(self, query: str, *, task_type: str | None = None, limit: int = 5, include_candidates: bool = False) -> MatchResult:
        """Rank by key terms and meaning; only the few best are loaded from the store."""
        pool = max(limit * 4, 20) if not task_type else max(limit * 40, 200)
        lexical = self._lexical(query, include_candidates, pool)
        semantic: dict[str, float] = {}
        degraded = None
        try:
            semantic = dict(self.companion().query(COLLECTION, query, n=pool))
        except Exception as exc:  # CompanionUnavailable, or a companion that cannot even be opened
            degraded = f"semantic index unavailable ({exc}); matched lexically with FTS5 and key terms"
            log.warning("companion_unavailable", reason=str(exc))
            # Full-text search reads every word of every procedure (~60 ms at 100k): only when key terms found too little.
            for pid, score in (self.store.fts_search(query, limit=pool) if len(lexical) < limit else []):
                base, terms = lexical.get(pid, (0.0, []))
                lexical[pid] = (base + score * 2.0, terms)
        best = max((s for s, _ in lexical.values()), default=0.0) or 1.0
        scored = []
        for pid in set(lexical) | set(semantic):
            lex, terms = lexical.get(pid, (0.0, []))
            sem = semantic.get(pid)
            score = lex / best if degraded else SEMANTIC_WEIGHT * (sem or 0.0) + (1 - SEMANTIC_WEIGHT) * lex / best
            scored.append((score, pid, lex / best, sem, terms))
        scored.sort(key=lambda x: (-x[0], x[1]))
        ranked: list[Match] = []
        for score, pid, lex, sem, terms in scored:
            try:
                proc = self.store.get(pid)
            except Exception:
                continue  # the companion knows an id the truth no longer has: the truth wins
            if (task_type and proc.task_type != task_type) or proc.status == "rejected" or (proc.status == "candidate" and not include_candidates):
                continue
            ranked.append(Match(proc, score, lex, None if degraded else sem, terms))
            if len(ranked) >= limit:
                break
        ranked.sort(key=lambda m: (-m.score, -m.procedure.confidence, m.procedure.id))
        return MatchResult(ranked, "lexical" if degraded else "hybrid", degraded)

    def index(self, procedure: CapturedProcedure) -> str | None:
        """Add or refresh one procedure in the companion; returns why not, when it cannot."""
        try:
            self.companion().upsert(COLLECTION, [procedure.id], [describe(procedure)], [{"task_type": procedure.task_type}])
            return None
        except Exception as exc:
            log.warning("companion_index_failed", procedure=procedure.id, reason=str(exc))
            return str(exc)

    def reindex(self) -> int:
        """Rebuild the companion collection from SQLite, the truth."""
        items = ((p.id, describe(p), {"task_type": p.task_type}) for p in self.store.iter_procedures())
        self.companion().rebuild(COLLECTION, items)
        return self.store.count()


def describe(p: CapturedProcedure) -> str:
    """The text whose meaning the companion indexes."""
    parts = [p.task_type.replace("-", " ").replace("_", " "), p.description, " ".join(p.tags)]
    parts += [s.command for s in p.steps[:8]]
    return ". ".join(x for x in parts if x)
