"""Which stored procedure a task is about — or that none is. A match is a decision, not a ranking.

Candidates come from the procedure index (`procedure_index`: the nearest stored vectors by exact cosine) and
from key terms weighted by how rare they are in the store (IDF). Each candidate then gets signals with an absolute
meaning, never divided by the query's best: the exact cosine between the task and the procedure (stored vectors,
or recomputed when the index lacks them or their text changed), the share of the task's key-term weight the procedure
covers and of the description's
the task covers, literal agreement (numbers, paths, quoted names, `*.ext`, flags: see `literals`), and how far
its cosine stands above the best other candidate's. A small logistic model turns them into the relevance, in
[0, 1] (`relevance`; coefficients fitted on the NL2Bash dev split by bench/match_calibrate.py); a task that names
the task type, or repeats or contains the description word for word, has relevance 1.0. A candidate is taken
only when no literal disagrees, its relevance reaches RELEVANCE_FLOOR, no other candidate comes within MARGIN
of it, and it is confident and healthy enough to replay; floor and margin are calibrated so that wrong and
false replays stay at or under 3 % (bench/match_bench.py, bench/RESULTS.md). When unsure, plan — or, with a
verifier, ask one short question about a best candidate in the band just under the floor (`verifier`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import structlog
from pydantic import BaseModel, Field

from ...errors import ModelFileError
from ..store.database import ProcedureDatabase
from ..store.models import CapturedProcedure
from ..store.scoring import REPLAY_THRESHOLD, replay_refusal
from . import literals as lit
from .procedure_index import INLINE_EMBED, ProcedureIndex, Snapshot, digest, index_text
from .relevance import RelevanceModel, default_model, length_feature
from .similarity import STOP_WORDS, TermIndex, cosines, coverage, words
from .verifier import Verdict, Verifier

log = structlog.get_logger(__name__)

RELEVANCE_FLOOR = default_model().floor
MARGIN = default_model().margin
POOL = 20


def _program(command: str) -> str:
    first = command.strip().split(None, 1)[0] if command.strip() else ""
    return first.rsplit("/", 1)[-1].lower()


def procedure_words(task_type: str, description: str, tags: list[str], commands: list[str]) -> set[str]:
    """What a task may name to find this procedure: task type, description, tags and the programs it runs."""
    found = set(words(task_type.replace("-", " ").replace("_", " ")))
    found |= set(words(description))
    for tag in tags:
        found |= set(words(tag))
    found |= {p for p in (_program(c) for c in commands) if p and p not in STOP_WORDS}
    return found


class MatchCandidate(BaseModel):
    """One procedure considered for a task, with its scores and, unless it was taken, why not."""

    procedure_id: str
    task_type: str
    version: int
    description: str = ""
    confidence: float
    score: float = Field(
        description="relevance in [0, 1] (the logistic model over the signals); compared with the floor"
    )
    semantic: float | None = Field(description="exact cosine between task and procedure, in [0, 1]")
    terms: float = Field(description="share of the task's key-term weight (IDF) the procedure covers, in [0, 1]")
    reverse: float = Field(
        default=0.0, description="share of the description's key-term weight the task covers, in [0, 1]"
    )
    features: dict[str, float] = Field(default_factory=dict, description="the relevance model's inputs")
    matched_terms: list[str] = Field(default_factory=list)
    literals_agreed: list[str] = Field(default_factory=list)
    literals_disagreed: list[str] = Field(default_factory=list)
    params: dict[str, str] = Field(default_factory=dict, description="parameter values taken from the task's literals")
    health: str | None = None
    reason: str | None = Field(default=None, description="why it was not taken; None for the selected one")


class MatchDecision(BaseModel):
    """What `match(task)` decided: the procedure to replay (with filled parameters), or `no-match` and why."""

    query: str
    task_type: str | None = None
    decision: Literal["match", "no-match"]
    selected: MatchCandidate | None = None
    params: dict[str, str] = Field(default_factory=dict)
    candidates: list[MatchCandidate] = Field(default_factory=list, description="best first, the selected one included")
    reason: str | None = None
    floor: float = RELEVANCE_FLOOR
    margin: float = MARGIN
    min_confidence: float = REPLAY_THRESHOLD
    mode: Literal["semantic", "lexical"] = "semantic"
    degraded: str | None = None
    verification: Verdict | None = Field(
        default=None,
        description="the verifier's answer about a borderline candidate, with "
        "its calls and tokens; None when it was off or not asked",
    )

    @property
    def llm_calls(self) -> int:
        return self.verification.calls if self.verification else 0

    @property
    def tokens(self) -> int:
        return self.verification.tokens if self.verification else 0

    @property
    def procedure_id(self) -> str | None:
        return self.selected.procedure_id if self.selected else None


def _plain(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def exact_reason(
    query: str, proc: CapturedProcedure, plain: str | None = None, stated: list[lit.Literal] | None = None
) -> str | None:
    """The task repeats the procedure's description or names its task type, word for word: the strongest evidence.
    `plain` and `stated` (the task's plain words and literals) may be given, when one task is checked many times."""
    plain = _plain(query) if plain is None else plain
    if not plain:
        return None
    if plain == _plain(proc.task_type):
        return "names the task type"
    described = _plain(proc.description)
    if described and plain == described:
        return "repeats the description"
    if described and len(described.split()) >= 4 and f" {described} " in f" {plain} ":
        # Only specifics may be added (a path, a file, a number: their agreement is still checked); added words
        # ask for more work ("… and run ps2pdf for each"), which is for meaning to judge, not this rule.
        extra = f" {plain} ".replace(f" {described} ", " ", 1).split()
        stated_words = set(" ".join(_plain(str(x)) for x in (lit.extract(query) if stated is None else stated)).split())
        specific = [w in STOP_WORDS or w.isdigit() or w in stated_words for w in extra]
        # A word that introduces a specific ("labelled monday", "named x.txt") is part of it.
        introduces = [
            any(specific[j] and extra[j] in stated_words for j in range(i + 1, min(i + 3, len(extra))))
            for i in range(len(extra))
        ]
        if all(a or b for a, b in zip(specific, introduces, strict=True)):
            return "contains the description"
    return None


def describe(p: CapturedProcedure) -> str:
    """The text whose meaning the procedure index holds."""
    return index_text(p.task_type, p.description, p.tags, [s.command for s in p.steps[:8]])


class Matcher:
    """Decides which procedure a task is about; its index (vectors, key terms) is re-read only when the store's
    generation changes, and kept in `index_path` (the home's `index/`) for the next process."""

    def __init__(
        self,
        store: ProcedureDatabase,
        index_path: Path | None = None,
        *,
        embedder: Any = None,
        floor: float = RELEVANCE_FLOOR,
        margin: float = MARGIN,
        verify: Verifier | None = None,
        model: RelevanceModel | None = None,
    ):
        self.store = store
        self.index_path = index_path or store.path.parent / "index"
        self._embedder = embedder
        self._index = ProcedureIndex(store, self.index_path, lambda: self.embedder, procedure_words)
        self.floor = floor
        self.margin = margin
        self.verify = verify
        self.model = model or default_model()
        self._texts: dict[tuple[str, int, float], tuple[set[str], lit.ProcedureText, list[str], str]] = {}
        self._procs: dict[str, CapturedProcedure] = {}  # parsed rows, reused while (version, updated) holds
        self._reverse: dict[tuple[Any, ...], tuple[float, dict[str, float]]] = {}  # description words' IDF per index

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            from ...semantic.embeddings import default_embedder

            self._embedder = default_embedder()
        return self._embedder

    @embedder.setter
    def embedder(self, value: Any) -> None:
        self._embedder = value

    def _semantic_embedder(self) -> tuple[Any, str | None]:
        """The embedder when it gives meaning; else None and why not."""
        try:
            embedder = self.embedder
        except Exception as exc:
            return None, f"semantic scoring unavailable ({exc})"
        if not getattr(embedder, "semantic", False):
            return None, (
                f"the embedder {embedder.name!r} matches words, not meaning; "
                "the relevance floor is calibrated for MiniLM, so nothing is replayed by meaning"
            )
        return embedder, None

    # ------------------------------------------------------------------ candidates

    def _snapshot(self, semantic: bool) -> Snapshot:
        return self._index.snapshot(embed=INLINE_EMBED if semantic else 0)

    def _semantic(
        self, query: str, pool: int, snap: Snapshot, include_candidates: bool, task_type: str | None
    ) -> tuple[Any, list[str], str | None]:
        """The query vector and its nearest procedures' ids; or why meaning is unavailable."""
        embedder, why = self._semantic_embedder()
        if embedder is None:
            return None, [], why
        try:
            vector = embedder.embed([query])[0]
        except ModelFileError:
            raise  # a model that is not the one pinned is refused out loud, not quietly matched around
        except Exception as exc:
            return None, [], f"semantic scoring unavailable ({exc})"
        near = [pid for pid, _ in snap.nearest(vector, pool, include_candidates, task_type)]
        have, total = snap.coverage
        degraded = (
            None
            if have == total
            else (
                f"semantic index covers {have} of {total} procedures; the others are found by key terms only "
                "(`learn reindex` embeds them all)"
            )
        )
        return vector, near, degraded

    def _vectors(self, procs: list[CapturedProcedure], snap: Snapshot) -> dict[str, Any]:
        """Stored vectors of the candidates; any missing, or embedded from a text since changed, are embedded now
        (and kept, so the index heals)."""
        found: dict[str, Any] = {}
        missing: list[tuple[CapturedProcedure, str]] = []
        for p in procs:
            text = self._text(p)[3]
            vector = snap.vector(p.id, digest(text))
            if vector is None:
                missing.append((p, text))
            else:
                found[p.id] = vector
        if missing:
            try:
                vectors = self.embedder.embed([text for _, text in missing])
            except Exception as exc:
                log.warning("embed_failed", reason=str(exc))
                return found
            found.update({p.id: v for (p, _), v in zip(missing, vectors, strict=True)})
            self._index.put([p.id for p, _ in missing], [text for _, text in missing], vectors)
        return found

    def match(
        self,
        query: str,
        *,
        task_type: str | None = None,
        include_candidates: bool = False,
        params: dict[str, Any] | None = None,
        min_confidence: float | None = None,
        check_health: bool = True,
        limit: int = 5,
        verify: Verifier | None = None,
    ) -> MatchDecision:
        """Decide which procedure the task is about: `match` with the selected one and its parameters, or `no-match`.

        `params` are values the caller already gives (they win over values read from the task);
        `min_confidence` defaults to the replay threshold; `limit` bounds the candidates listed;
        `verify` (else the matcher's own) is asked about a best candidate in the borderline band.
        """
        threshold = REPLAY_THRESHOLD if min_confidence is None else float(min_confidence)
        base = {
            "query": query,
            "task_type": task_type,
            "floor": self.floor,
            "margin": self.margin,
            "min_confidence": threshold,
        }
        if not query.strip():
            return MatchDecision(**base, decision="no-match", reason="the task is empty")
        embedder, _ = self._semantic_embedder()
        snap = self._snapshot(embedder is not None)
        terms = snap.term_index(include_candidates, words)
        weights = terms.weights(query)
        pool = POOL if not task_type else POOL * 10
        vector, near, degraded = self._semantic(query, pool, snap, include_candidates, task_type)
        ids = list(dict.fromkeys([*near, *terms.search(weights, pool)]))
        procs: list[CapturedProcedure] = []
        stored = self._current(ids)
        for pid in ids:
            proc = stored.get(pid)
            if proc is None:
                continue  # the index knows an id the truth no longer has: the truth wins
            if (
                (task_type and proc.task_type != task_type)
                or proc.status == "rejected"
                or (proc.status == "candidate" and not include_candidates)
            ):
                continue
            procs.append(proc)
        vectors = self._vectors(procs, snap) if vector is not None else {}
        cosines_of = cosines(vector, vectors)
        stated = lit.extract(query)
        plain = _plain(query)
        stamp = (*snap.stamp, include_candidates)
        given = params or {}
        rows = []
        for proc in procs:
            own_words, text, described, _ = self._text(proc)
            share, matched = coverage(weights, own_words)
            agreement = lit.agree(stated, text, given)
            semantic = cosines_of.get(proc.id)
            exact = exact_reason(query, proc, plain, stated)
            if exact:
                semantic, matched = 1.0, [*matched, exact]
            rows.append(
                (
                    proc,
                    share,
                    matched,
                    agreement,
                    semantic,
                    exact,
                    self._reverse_coverage(proc, described, weights, terms, stamp),
                )
            )
        # The gap to the best other cosine, among candidates whose literals agree (the ones that could be taken).
        ranked = sorted(((r[4] or 0.0) for r in rows if not r[3].disagreed), reverse=True)
        length = length_feature(len(weights))
        candidates = []
        for proc, share, matched, agreement, semantic, exact, reverse in rows:
            if not agreement.disagreed and (semantic or 0.0) >= ranked[0]:
                others = ranked[1] if len(ranked) > 1 else 0.0
            else:
                others = ranked[0] if ranked else 0.0
            features = {
                "semantic": semantic or 0.0,
                "terms": share,
                "reverse": reverse,
                "agreed": min(len(agreement.agreed), 3) / 3,
                "gap": (semantic or 0.0) - others,
                "length": length,
            }
            score = 1.0 if exact else (self.model(features) if semantic is not None else 0.0)
            candidates.append(
                MatchCandidate(
                    procedure_id=proc.id,
                    task_type=proc.task_type,
                    version=proc.version,
                    description=proc.description,
                    confidence=proc.confidence,
                    score=round(score, 4),
                    semantic=None if semantic is None else round(semantic, 4),
                    terms=round(share, 4),
                    reverse=round(reverse, 4),
                    features={k: round(v, 4) for k, v in features.items()},
                    matched_terms=matched,
                    literals_agreed=agreement.agreed,
                    literals_disagreed=agreement.disagreed,
                    params=agreement.params,
                )
            )
        candidates.sort(key=lambda c: (-c.score, -c.terms, c.procedure_id))
        mode: Literal["semantic", "lexical"] = "semantic" if vector is not None else "lexical"
        return self._decide(
            base,
            candidates[: max(limit, 1)],
            given,
            threshold,
            check_health,
            mode,
            degraded,
            verify=verify or self.verify,
        )

    def _current(self, ids: list[str]) -> dict[str, CapturedProcedure]:
        """The current versions of these procedures: a light query says which changed; only those are read whole."""
        stamps = self.store.stamps(ids)
        fresh = [
            pid
            for pid, stamp in stamps.items()
            if (cached := self._procs.get(pid)) is None or (cached.version, cached.updated) != stamp
        ]
        if fresh:
            if len(self._procs) > 50_000:
                self._procs.clear()
            self._procs.update(self.store.get_many(fresh))
        return {pid: self._procs[pid] for pid in stamps if pid in self._procs}

    def _reverse_coverage(
        self,
        proc: CapturedProcedure,
        described: list[str],
        weights: dict[str, float],
        terms: TermIndex,
        stamp: tuple[Any, ...],
    ) -> float:
        """Share of the description's key-term weight (IDF) that the task repeats: a task saying less than the
        procedure does is less surely about it. The words' IDF is kept per procedure version and index."""
        key = (proc.id, proc.version, proc.updated, *stamp)
        found = self._reverse.get(key)
        if found is None:
            if len(self._reverse) > 50_000:
                self._reverse.clear()
            idf = {w: terms.idf_of(w) for w in described}
            found = self._reverse[key] = (sum(idf.values()), idf)
        total, idf = found
        return sum(v for w, v in idf.items() if w in weights) / total if total > 0 else 0.0

    def _text(self, proc: CapturedProcedure) -> tuple[set[str], lit.ProcedureText, list[str], str]:
        """A procedure's key terms, literals and description words, prepared once per version."""
        key = (proc.id, proc.version, proc.updated)
        found = self._texts.get(key)
        if found is None:
            if len(self._texts) > 50_000:
                self._texts.clear()
            # A trajectory has no commands: its parametrised task text carries its parameters instead.
            commands = [s.command for s in proc.steps] or ([proc.description] if proc.kind == "trajectory" else [])
            found = (
                procedure_words(proc.task_type, proc.description, proc.tags, commands),
                lit.procedure_text(proc.description, proc.task_type, proc.tags, commands),
                list(dict.fromkeys(words(proc.description))),
                describe(proc),
            )
            self._texts[key] = found
        return found

    def _decide(
        self,
        base: dict[str, Any],
        candidates: list[MatchCandidate],
        given: dict[str, Any],
        threshold: float,
        check_health: bool,
        mode: Literal["semantic", "lexical"],
        degraded: str | None,
        *,
        verify: Verifier | None = None,
    ) -> MatchDecision:
        floor = base["floor"]
        lower = min(verify.lower, floor) if verify is not None else floor
        for c in candidates:
            if c.literals_disagreed:
                c.reason = f"literals disagree: {'; '.join(c.literals_disagreed)}"
            elif c.semantic is None:
                c.reason = "no semantic score (meaning unavailable): not replayed on key terms alone"
            elif c.score < floor:
                c.reason = f"below relevance floor {floor:g} ({c.score:.2f})"
        contenders = [c for c in candidates if c.reason is None]
        # The borderline band: sure enough to ask the verifier, not sure enough to replay without it.
        band = (
            []
            if contenders
            else [c for c in candidates if not c.literals_disagreed and c.semantic is not None and c.score >= lower]
        )
        decision = MatchDecision(**base, decision="no-match", candidates=candidates, mode=mode, degraded=degraded)
        if not contenders and not band:
            if candidates:
                decision.reason = "no stored procedure is about this task"
            elif not self.store.count():
                decision.reason = (
                    "the store holds no procedures yet: capture one with `sherpa-skills learn capture-success`"
                )
            else:
                decision.reason = "no stored procedure shares a key term or meaning with this task"
            return decision
        pool = contenders or band
        best = pool[0]
        close = [c for c in pool[1:] if best.score - c.score < self.margin]
        if close:
            names = ", ".join(c.procedure_id for c in [best, *close])
            for c in [best, *close]:
                c.reason = f"ambiguous: {names} score within {self.margin:g} of each other"
            decision.reason = f"ambiguous between {names}: when unsure, plan"
            return decision
        for c in pool[1:]:
            c.reason = f"less relevant than {best.procedure_id} ({c.score:.2f} < {best.score:.2f})"
        best.reason = None  # a borderline best is judged below, by the verifier
        proc = self.store.get(best.procedure_id)
        health = self.store.health(proc.id) if check_health else None
        best.health = health.status if health is not None else None
        best.reason = replay_refusal(proc, health, threshold)
        if best.reason is not None:
            decision.reason = f"{best.procedure_id} is about the task but not replayable: {best.reason}"
            return decision
        verified: dict[str, str] = {}
        if (
            not contenders and verify is not None
        ):  # borderline: one short question decides, a no or any doubt is no-match
            declared = self._text(proc)[1].params
            verdict = verify.verify(base["query"], proc, declared)
            decision.verification = verdict
            if not verdict.same_task:
                best.reason = f"borderline ({best.score:.2f}, band {lower:g}–{floor:g}): {verdict.reason}"
                decision.reason = f"{best.procedure_id} was not confirmed: {verdict.reason}"
                return decision
            verified = verdict.params
        decision.decision = "match"
        decision.selected = best
        decision.params = {**verified, **best.params, **{k: str(v) for k, v in given.items()}}
        return decision

    # ------------------------------------------------------------------ the index

    def index(self, procedure: CapturedProcedure) -> str | None:
        """Embed one procedure into the index now; returns why not, when it cannot."""
        return self.index_many([procedure])

    def index_many(self, procedures: list[CapturedProcedure]) -> str | None:
        """Embed procedures into the index now, in batches; returns why not, when it cannot."""
        if not procedures:
            return None
        try:
            snap = self._index.snapshot(embed=0)
            todo = [(p.id, describe(p)) for p in procedures]
            todo = [(pid, text) for pid, text in todo if snap.vector(pid, digest(text)) is None]
            for start in range(0, len(todo), 256):
                chunk = todo[start : start + 256]
                vectors = self.embedder.embed([text for _, text in chunk])
                self._index.put([pid for pid, _ in chunk], [text for _, text in chunk], vectors)
            return None
        except Exception as exc:
            log.warning("procedure_index_failed", procedures=len(procedures), reason=str(exc))
            return str(exc)

    def refresh(self, progress: Callable[[int], None] | None = None) -> int:
        """Bring the index up to date with the store, embedding every missing vector; returns how many it holds."""
        return self._index.refresh(progress)

    def reindex(self, progress: Callable[[int], None] | None = None) -> int:
        """Rebuild the index from SQLite, the truth, embedding every procedure again in batches."""
        return self._index.rebuild(progress=progress)
