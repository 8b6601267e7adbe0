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
    terms: dict[str, float] = {}

    def put(term: str, weight: float) -> None:
        term = " ".join(words(term))
        if term and term not in _STOP and len(term) > 1:
            terms[term] = max(terms.get(term, 0.0), weight)

    put(p.task_type.replace("-", " ").replace("_", " "), WEIGHTS["task_type"])
    for w in words(p.task_type.replace("-", " ").replace("_", " ")):
        put(w, WEIGHTS["task_word"])
    for tag in p.tags:
        put(tag, WEIGHTS["tag"])
    for w in words(p.description):
        if len(w) > 2:
            put(w, WEIGHTS["term"])
    for step in p.steps:
        first = step.command.strip().split(" ", 1)[0]
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


class _Automaton:
    """Term → [(procedure id, weight)], searched in one pass over the query."""

    def __init__(self, store: SkillStore, include_candidates: bool):
        import ahocorasick

        postings: dict[str, list[tuple[str, float]]] = {}
        for p in store.iter_procedures():
            if p.status == "candidate" and not include_candidates:
                continue
            for term, weight in procedure_terms(p).items():
                postings.setdefault(term, []).append((p.id, weight))
        automaton = ahocorasick.Automaton()
        for term, plist in postings.items():
            automaton.add_word(f" {term} ", (term, plist))
        if postings:
            automaton.make_automaton()
        self.automaton = automaton if postings else None

    def search(self, query: str) -> dict[str, tuple[float, list[str]]]:
        scores: dict[str, tuple[float, list[str]]] = {}
        if self.automaton is None:
            return scores
        seen: set[str] = set()
        for _, (term, plist) in self.automaton.iter(f" {' '.join(words(query))} "):
            if term in seen:
                continue
            seen.add(term)
            for pid, weight in plist:
                score, terms = scores.get(pid, (0.0, []))
                scores[pid] = (score + weight, [*terms, term])
        return scores


class Matcher:
    """Ranks procedures for a query; the automaton is rebuilt only when the store's generation changes."""

    def __init__(self, store: SkillStore, companion_path: Path | None = None, companion: Any = None):
        self.store = store
        self.companion_path = companion_path or store.path.parent / "companion"
        self._companion = companion
        self._automaton: dict[bool, tuple[int, _Automaton]] = {}

    def companion(self) -> Any:
        if self._companion is None:
            from ..companion import Companion

            self._companion = Companion(self.companion_path)
        return self._companion

    def _lexical(self, query: str, include_candidates: bool) -> dict[str, tuple[float, list[str]]]:
        generation = self.store.generation()
        cached = self._automaton.get(include_candidates)
        if cached is None or cached[0] != generation:
            cached = (generation, _Automaton(self.store, include_candidates))
            self._automaton[include_candidates] = cached
        return cached[1].search(query)

    def match(self, query: str, *, task_type: str | None = None, limit: int = 5, include_candidates: bool = False) -> MatchResult:
        lexical = self._lexical(query, include_candidates)
        semantic: dict[str, float] = {}
        degraded = None
        try:
            semantic = dict(self.companion().query(COLLECTION, query, n=max(limit * 4, 20)))
        except Exception as exc:  # CompanionUnavailable, or a companion that cannot even be opened
            degraded = f"semantic index unavailable ({exc}); matched lexically with FTS5 and key terms"
            log.warning("companion_unavailable", reason=str(exc))
            for pid, score in self.store.fts_search(query, limit=max(limit * 4, 20)):
                base, terms = lexical.get(pid, (0.0, []))
                lexical[pid] = (base + score * 2.0, terms)
        best = max((s for s, _ in lexical.values()), default=0.0) or 1.0
        candidates = set(lexical) | set(semantic)
        ranked: list[Match] = []
        for pid in candidates:
            try:
                proc = self.store.get(pid)
            except Exception:
                continue  # the companion knows an id the truth no longer has: the truth wins
            if task_type and proc.task_type != task_type:
                continue
            if proc.status == "candidate" and not include_candidates:
                continue
            lex, terms = lexical.get(pid, (0.0, []))
            lex_norm = lex / best
            sem = semantic.get(pid)
            score = lex_norm if degraded else SEMANTIC_WEIGHT * (sem or 0.0) + (1 - SEMANTIC_WEIGHT) * lex_norm
            ranked.append(Match(proc, score, lex_norm, None if degraded else sem, terms))
        ranked.sort(key=lambda m: (-m.score, -m.procedure.confidence, m.procedure.id))
        return MatchResult(ranked[:limit], "lexical" if degraded else "hybrid", degraded)

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
