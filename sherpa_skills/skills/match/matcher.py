"""Which stored procedure a task is about — or that none is. A match is a decision, not a ranking.

Candidates come from the procedure index (`procedure_index`: the nearest stored vectors by exact cosine) and from
key terms weighted by how rare they are in the store (IDF). Each candidate then gets signals with an absolute
meaning, never divided by the query's best: the exact cosine between the task and the procedure (stored vectors, or
recomputed when the index lacks them or their text changed), the share of the task's key-term weight the procedure
covers and of the description's the task covers, literal agreement (numbers, paths, quoted names, `*.ext`, flags:
see `literals`), the literals its description states that the task does not, and how far its cosine stands above the
best other candidate's. A small logistic model turns them into the relevance, in [0, 1] (`relevance`; coefficients
fitted on the NL2Bash dev split by bench/match_calibrate.py); a task that names the task type, or repeats or
contains the description word for word, has relevance 1.0; so has one that says what the description says, or says
it with fewer words (`wording.says_less`), key words folded, when nothing else stored is described as close. A
candidate is taken only when no literal disagrees, its relevance reaches RELEVANCE_FLOOR, no other candidate comes
within MARGIN of it, and it is confident and healthy enough to replay; floor and margin are calibrated so that
wrong and false replays stay at or under 3 % (bench/match_bench.py, bench/RESULTS.md). That floor is the shipped
one until the questions a person answered in this store show another holds (`floor`: lower where the store's
procedures stand apart, higher where near twins fooled it).

Between sure and nothing there is a third answer, `needs-confirmation`: when no candidate is sure but the best is
plausible (its relevance reaches the ask floor, or its cosine stands clear of the rest), or two sure ones are too
close to tell apart (or the sure one shares its description with another: a coin flip), at most five candidates
whose literals agree and that could be replayed are offered, best first, to the judge at hand (the person, the
caller, or a model: `verifier`). A confirmed wording becomes an alias of the procedure (the same wording is sure
next time; a close one brings the procedure among the candidates, and one said in words of its own that means what
both the description and the alias mean is vouched for: `vouch`); a refused pair is remembered and never offered
again (`store.answers`). Both hold only in the scope (task type) they were given in.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import structlog

from ...errors import ModelFileError
from ..store.answers import RUN_PREFIX, AliasRow, Answers, Asked, WordingAnswer, seen_by
from ..store.database import ProcedureDatabase
from ..store.models import CapturedProcedure
from . import literals as lit
from .alias_table import AliasViews
from .deciding import MAX_OFFERED, Deciding
from .exact import _plain, exact_reason
from .floor import Floor, calibrated_floor
from .models import MARGIN, RELEVANCE_FLOOR, MatchCandidate, MatchDecision
from .procedure_index import INLINE_EMBED, ProcedureIndex, Snapshot, digest
from .relevance import RelevanceModel, default_model, length_feature
from .similarity import TermIndex, cosine_row, cosines, coverage, words
from .texts import describe, procedure_words
from .verifier import Verifier
from .vouch import Evidence, repeated, vouched
from .wording import (
    asked_alike,
    contrast,
    earlier_key,
    key_words,
    same_wording,
    says_less,
    spoken,
    verbatim,
    wording_key,
)

log = structlog.get_logger(__name__)

POOL = 20


@dataclass
class _Row:
    """One candidate's signals while a match is scored."""

    proc: CapturedProcedure
    share: float
    matched: list[str]
    agreement: lit.Agreement
    semantic: float | None
    exact: str | None
    reverse: float


@dataclass
class _Scored:
    """A task's candidates, best first, and what deciding among them needs."""

    candidates: list[MatchCandidate]
    rejected: set[str]
    vouch: MatchCandidate | None
    mode: Literal["semantic", "lexical"]
    degraded: str | None
    exact: set[str]  # replayed whatever the floor: the task says what the description (or a confirmed wording) says


#: A procedure as the matcher reads it: key terms, literals, description words, index text, key words, words as said.
_Prepared = tuple[set[str], lit.ProcedureText, list[str], str, frozenset[str], list[str]]


def astuple_shallow(row: _Row) -> tuple[Any, ...]:
    return (row.proc, row.share, row.matched, row.agreement, row.semantic, row.exact, row.reverse)


def _vector_bytes(vector: Any) -> bytes:
    import numpy as np

    return np.asarray(vector, dtype=np.float32).tobytes()


def _vector_of(row: AliasRow, embedder: str | None) -> Any:
    """The alias's stored vector, when it was made by this embedder."""
    if row.vector is None or embedder is None or row.embedder != embedder:
        return None
    import numpy as np

    return np.frombuffer(row.vector, dtype=np.float32)


class Matcher(Deciding):
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
        calibrate: bool = True,
    ):
        """`floor` is the shipped relevance floor; with `calibrate`, a scope whose answered questions are enough
        replays from the floor they give instead (`floor`)."""
        self.store = store
        self.index_path = index_path or store.path.parent / "index"
        self._embedder = embedder
        self._index = ProcedureIndex(store, self.index_path, lambda: self.embedder, procedure_words)
        self.floor = floor
        self.margin = margin
        self.verify = verify
        self.model = model or default_model()
        self._texts: dict[tuple[str, int, float], _Prepared] = {}
        self._procs: dict[str, CapturedProcedure] = {}  # parsed rows, reused while (version, updated) holds
        self._reverse: dict[tuple[Any, ...], tuple[float, dict[str, float]]] = {}  # description words' IDF per index
        #: Per scope, the aliases as last read (`_alias_views`): only what changed since is read again.
        self._aliases: dict[str, AliasViews] = {}
        #: Each alias's wording and its key words, by alias id (folded once per wording, not at every change).
        self._alias_words: dict[str, tuple[str, frozenset[str]]] = {}
        self.calibrate = calibrate
        self._floors: dict[tuple[int, str], Floor] = {}
        #: Wordings embedded lately, by (embedder, text): a run's request is embedded to match it, to decide its
        #: transitions and to keep it as an alias; once is enough.
        self._embedded: dict[tuple[str | None, str], Any] = {}

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            from ...semantic.embeddings import default_embedder

            self._embedder = default_embedder()
        return self._embedder

    @embedder.setter
    def embedder(self, value: Any) -> None:
        self._embedder = value

    def embed_one(self, text: str, embedder: Any = None) -> Any:
        """`text`'s vector from `embedder` (default: the matcher's), made once for the lately asked wordings."""
        embedder = self.embedder if embedder is None else embedder
        key = (getattr(embedder, "name", None), text)
        found = self._embedded.get(key)
        if found is None:
            if len(self._embedded) >= 256:  # a long-lived process asked many wordings: the old ones go
                self._embedded.clear()
            found = self._embedded[key] = embedder.embed([text])[0]
        return found

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
            vector = self.embed_one(query, embedder)
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
        by: str | None = None,
    ) -> MatchDecision:
        """Decide which procedure the task is about: `match` with the selected one and its parameters, or `no-match`.

        `params` are values the caller already gives (they win over values read from the task);
        `min_confidence` is the caller's floor on confidence (None: the replay rule's); `limit` bounds the candidates
        listed;
        `verify` (else the matcher's own) is asked about a best candidate in the borderline band;
        `by` is who asks (None: a person): an agent's own answers count for it alone (`answers.seen_by`).
        """
        threshold = None if min_confidence is None else float(min_confidence)
        floor = self.floor_for(task_type)
        base = {
            "query": query,
            "task_type": task_type,
            "floor": floor.value,
            "floor_reason": floor.reason,
            "margin": self.margin,
            "min_confidence": threshold,
        }
        if not query.strip():
            return MatchDecision(**base, decision="no-match", reason="the task is empty")
        scored = self._score(query, task_type, include_candidates, params or {}, asker=by)
        shown = scored.candidates[: max(limit, 1)]
        if scored.vouch is not None and scored.vouch not in shown:
            shown.append(scored.vouch)
        return self._decide(
            base,
            shown,
            params or {},
            threshold,
            check_health,
            scored.mode,
            scored.degraded,
            verify=verify or self.verify,
            rejected=scored.rejected,
            vouch=scored.vouch,
        )

    def _score(
        self,
        query: str,
        task_type: str | None,
        include_candidates: bool,
        given: dict[str, Any],
        with_aliases: bool = True,
        asker: str | None = None,
    ) -> _Scored:
        """Every candidate for the task with its relevance, best first; nothing decided yet. Without aliases: as the
        descriptions alone score it (a wording answered before is not sure by its alias)."""
        embedder, _ = self._semantic_embedder()
        snap = self._snapshot(embedder is not None)
        terms = snap.term_index(include_candidates, words)
        weights = terms.weights(query)
        pool = POOL if not task_type else POOL * 10
        vector, near, degraded = self._semantic(query, pool, snap, include_candidates, task_type)
        said = key_words(query)
        read = self._alias_views(task_type) if with_aliases else None
        # A wording no judge confirmed (a run's, an agent's) says the same only when it asks the same kind of question:
        # folding drops the question words a customer's request turns on ("how" / "why verify my identity").
        alias_exact = {
            a.procedure_id: a.id
            for a, keys, _ in (read.saying(said) if read is not None else [])
            if seen_by(a.owner, asker) and same_wording(said, keys) and (not a.exact_only or asked_alike(query, a.text))
        }
        alias_cos, near_cos = self._alias_cosines(vector, read, asker)
        rejected = self.answers.rejected(wording_key(query), task_type, asker)
        if (earlier := earlier_key(query)) != wording_key(query):
            rejected |= self.answers.rejected(
                earlier, task_type, asker
            )  # refused before verbs were folded: still refused
        close_aliases = sorted(near_cos, key=lambda pid: -near_cos[pid][0])[:MAX_OFFERED]
        ids = list(dict.fromkeys([*alias_exact, *close_aliases, *near, *terms.search(weights, pool)]))
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
        # A close alias is not scored as a description (that replayed a near miss in bench/match_ask_bench.py): it
        # brings its procedure among the candidates, and vouches for it only by the stricter rule of `vouch`.
        stated = lit.extract(query)
        plain = _plain(query)
        stamp = (*snap.stamp, include_candidates)
        rows = []
        text_of: dict[str, lit.ProcedureText] = {}
        for proc in procs:
            own_words, text, described, *_ = self._text(proc)
            text_of[proc.id] = text
            share, matched = coverage(weights, own_words)
            agreement = lit.agree(stated, text, given)
            semantic = cosines_of.get(proc.id)
            exact = exact_reason(query, proc, plain, stated)
            if not exact and proc.id in alias_exact:
                exact = f"repeats a confirmed wording ({alias_exact[proc.id]})"
            rows.append(
                _Row(
                    proc,
                    share,
                    matched,
                    agreement,
                    semantic,
                    exact,
                    self._reverse_coverage(proc, described, weights, terms, stamp),
                )
            )
        self._same_wording(rows, said, stated, query)
        for row in rows:
            if row.exact:
                row.semantic, row.matched = 1.0, [*row.matched, row.exact]
        # The gap to the best other cosine, among candidates whose literals agree (the ones that could be taken).
        ranked = sorted(((r.semantic or 0.0) for r in rows if not r.agreement.disagreed), reverse=True)
        length = length_feature(len(weights))
        told = spoken(query)
        candidates = []
        for proc, share, matched, agreement, semantic, exact, reverse in (astuple_shallow(r) for r in rows):
            if not agreement.disagreed and (semantic or 0.0) >= ranked[0]:
                others = ranked[1] if len(ranked) > 1 else 0.0
            else:
                others = ranked[0] if ranked else 0.0
            *_, described_words, described_said = self._text(proc)
            alike = verbatim(told, described_said)
            features = {
                "semantic": semantic or 0.0,
                "terms": share,
                "reverse": reverse,
                "agreed": min(len(agreement.agreed), 3) / 3,
                "gap": (semantic or 0.0) - others,
                "length": length,
                "unstated": min(lit.unstated(stated, text_of[proc.id], query), 3) / 3,
                "verbatim": alike,
                "twin": alike * min(len(said ^ described_words), 3) / 3,
            }
            score = 1.0 if exact else (self.model(features) if semantic is not None else 0.0)
            swapped = None if exact else contrast(said, described_words)
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
                    alias=round(alias_cos[proc.id][0], 4) if proc.id in alias_cos else None,
                    alias_id=alias_cos[proc.id][1] if proc.id in alias_cos else None,
                    contrast=list(swapped) if swapped else [],
                )
            )
        candidates.sort(key=lambda c: (-c.score, -c.terms, c.procedure_id))
        mode: Literal["semantic", "lexical"] = "semantic" if vector is not None else "lexical"
        closest = {pid: cos for pid, (cos, _) in near_cos.items()}
        vouch = self._vouched(candidates, said, read, asker, rejected, closest, stated, query)
        return _Scored(candidates, rejected, vouch, mode, degraded, {r.proc.id for r in rows if r.exact})

    def _vouched(
        self,
        candidates: list[MatchCandidate],
        said: frozenset[str],
        aliases: AliasViews | None,
        asker: str | None,
        rejected: set[str],
        near: dict[str, float],
        stated: list[lit.Literal],
        query: str,
    ) -> MatchCandidate | None:
        """The candidate a confirmed wording vouches for (`vouch`), among those whose literals agree; or None. `near`
        is each procedure's closest wording of all, runs' aliases included: how close a rival stands."""
        agreeing = [c for c in candidates if not c.literals_disagreed and c.semantic is not None]
        if aliases is None or not any(c.alias is not None for c in agreeing):
            return None
        keys = {
            c.procedure_id: [words_of for row, words_of, _ in aliases.of(c.procedure_id) if seen_by(row.owner, asker)]
            for c in agreeing
        }
        by_id = {c.procedure_id: c for c in agreeing}
        evidence = [
            Evidence(
                c.procedure_id,
                c.semantic or 0.0,
                None if c.procedure_id in rejected else c.alias,
                repeated(said, [self._text(self._procs[c.procedure_id])[4], *keys.get(c.procedure_id, [])])
                if c.alias is not None
                else 0.0,
                near.get(c.procedure_id),
            )
            for c in agreeing
        ]
        m = self.model
        found = vouched(evidence, m.alias_floor, m.alias_gap, m.alias_words, m.alias_described)
        if found is None:
            return None
        chosen = by_id[found.procedure_id]
        # The opposite work is never vouched for, whatever a confirmed wording's closeness; it still counts as a rival.
        # Nor is a place the description names and the task leaves unsaid: meaning does not say where the work is.
        text = self._text(self._procs[chosen.procedure_id])[1]
        return None if chosen.contrast or lit.unstated(stated, text, query, lit.PLACES) else chosen

    def _same_wording(self, rows: list[_Row], said: frozenset[str], stated: list[lit.Literal], query: str) -> None:
        """A task that says what a description says, folded (`wording`), is as sure as one repeating it; so is one
        that says it with fewer words (`says_less`) when it leaves none of the description's literals unsaid and no
        other candidate's description holds all its key words too (which one it means is for the judge to say).
        Either holds only when no other candidate lies within `wording_gap` of its cosine: procedures described
        alike are asked about."""
        agreeing = [r for r in rows if not r.agreement.disagreed]
        for row in rows:
            if row.exact or row.agreement.disagreed or row.semantic is None:
                continue
            described = self._text(row.proc)[4]
            # A trajectory's description is a request as someone wrote it: its question words are part of the ask.
            if same_wording(said, described) and (row.proc.kind == "shell" or asked_alike(query, row.proc.description)):
                why = "says what the description says"
            elif (
                # A trajectory is described by a request as someone wrote it: a clause left out may be why it was
                # decided as it was ("it arrived damaged"), not a step of the work.
                row.proc.kind == "shell"
                and said < described
                and says_less(said, row.proc.description)
                and not lit.unstated(stated, self._text(row.proc)[1], query)
                and not any(r is not row and said <= self._text(r.proc)[4] for r in agreeing)
            ):
                why = "says less than the description, nothing else"
            else:
                continue
            rivals = [r.semantic or 0.0 for r in agreeing if r is not row]
            if not rivals or max(rivals) <= row.semantic - self.model.wording_gap:
                row.exact = why

    # ------------------------------------------------------------------ answers (aliases, rejections)

    def floor_for(self, task_type: str | None = None) -> Floor:
        """The relevance floor tasks in this scope replay from, and why (`floor`): read again when an answer changes."""
        if not self.calibrate:
            return Floor(self.floor, "shipped", "the shipped floor (the store's own is off)")
        key = (self.answers.version(), task_type or "")
        found = self._floors.get(key)
        if found is None:
            points = self.answers.asked_points(task_type)
            if len(self._floors) > 1000:
                self._floors.clear()
            found = self._floors[key] = calibrated_floor(points, self.floor, self.model.bound, task_type or "")
        return found

    def _asked(self, query: str, task_type: str | None, asker: str | None = None) -> tuple[str, float] | None:
        """What a judge is being asked about this task: the best candidate that could be replayed directly were the
        floor low enough, and its relevance as the descriptions alone score it (an answer given before does not make it
        sure); None when none could be, or it replays whatever the floor (it says what its description says)."""
        if not query.strip():
            return None
        scored = self._score(query, task_type, False, {}, with_aliases=False, asker=asker)
        for c in scored.candidates:
            if c.procedure_id in scored.rejected or c.literals_disagreed or c.semantic is None or c.contrast:
                continue
            if c.procedure_id in scored.exact:
                return None
            return c.procedure_id, self.model(c.features)
        return None

    @property
    def answers(self) -> Answers:
        return Answers(self.store)

    def _alias_views(self, scope: str | None) -> AliasViews:
        """The aliases a match in this scope may use, each with its key words and vector (embedded now when missing,
        and kept); after an answer changes, only the aliases written since are read (a run that learns adds one, and
        reading them all again after each was a growing share of a long stream's cost)."""
        version, removals = self.answers.alias_changes()
        cached = self._aliases.get(scope or "")
        if cached is not None and (cached.version, cached.removals) == (version, removals):
            return cached
        # While no alias was removed, what is kept holds but for the rows written since.
        kept = cached if cached is not None and cached.removals == removals else None
        rows = self.answers.alias_rows(scope, since=kept.version if kept is not None else None)
        embedder, _ = self._semantic_embedder() if rows else (None, None)
        name = getattr(embedder, "name", None)
        missing = [r for r in rows if r.vector is None or r.embedder != name] if embedder is not None else []
        if missing and embedder is not None:
            try:
                fresh = embedder.embed([r.text for r in missing])
                for row, vec in zip(missing, fresh, strict=True):
                    row.vector, row.embedder = _vector_bytes(vec), name
                    self.answers.set_vector(row.id, row.vector, str(name))
            except Exception as exc:  # found by their exact wording still; the reason is logged
                log.warning("alias_embed_failed", aliases=len(missing), reason=str(exc))
        # Key words read again from the wording, not its stored key: a key stored before verbs were folded would miss
        # a wording said with the folded verb. Kept per alias: folding them all again at each change was most of a
        # match's cost late in a long stream.
        words = self._alias_words
        # A new alias has a higher id than any kept (a removal reads all again), so the views stay in id order.
        by_id = dict(kept.by_id) if kept is not None else {}
        for r in rows:
            known = words.get(r.id)
            if known is None or known[0] != r.text:
                known = words[r.id] = (r.text, key_words(r.text))
            by_id[r.id] = (r, known[1], _vector_of(r, name))
        if len(self._aliases) > 100:  # scopes are task types: a handful; a caller inventing them is not kept
            self._aliases.clear()
        found = self._aliases[scope or ""] = (
            kept.grown(version, removals, by_id, [r.id for r in rows])
            if kept is not None
            else AliasViews(version, removals, by_id, list(by_id.values()))
        )
        return found

    def _alias_cosines(
        self, vector: Any, aliases: AliasViews | None, asker: str | None
    ) -> tuple[dict[str, tuple[float, str]], dict[str, tuple[float, str]]]:
        """Per procedure, the best cosine between the task and one of its aliases `asker` sees, and that alias's id:
        among those a judge confirmed (what may vouch), and among all (how close the procedure stands: a candidate,
        and a rival). A run's or an agent's alias (`AliasRow.exact_only`) never vouches: no judge said what words
        near it mean."""
        judged: dict[str, tuple[float, str]] = {}
        near: dict[str, tuple[float, str]] = {}
        if vector is None or aliases is None:
            return judged, near
        table = aliases.table()
        if not table.rows:
            return judged, near
        import numpy as np

        sims = np.clip(cosine_row(vector, table.matrix, table.lengths), 0.0, 1.0)
        seen = table.owner == 0
        if asker in table.owners and asker:
            seen |= table.owner == table.owners[asker]
        return table.best(sims, seen & ~table.exact_only), table.best(sims, seen)

    def params_for(self, query: str, proc: CapturedProcedure) -> dict[str, str]:
        """The parameter values a task's literals give this procedure (none where they disagree)."""
        agreement = lit.agree(lit.extract(query), self._text(proc)[1])
        return {} if agreement.disagreed else dict(agreement.params)

    def confirm(
        self, query: str, procedure_id: str, *, task_type: str | None = None, by: str | None = None
    ) -> WordingAnswer:
        """A judge said the task is this procedure: its wording (redacted, literals as the procedure's parameters)
        becomes an alias in this scope. Refused when the task's literals disagree with the procedure."""
        from ...errors import UsageError
        from ...redact import redact

        proc = self.store.get(procedure_id)
        if task_type and proc.task_type != task_type:
            raise UsageError(f"{proc.id} is a {proc.task_type!r} procedure, not {task_type!r}: an alias never crosses")
        agreement = lit.agree(lit.extract(query), self._text(proc)[1])
        if agreement.disagreed:
            raise UsageError(
                f"not recorded: the task's literals disagree with {proc.id}: {'; '.join(agreement.disagreed)}"
            )
        spoken = redact(query.strip())
        text = spoken
        for name, value in agreement.params.items():
            text = re.sub(re.escape(value), "{{ " + name + " }}", text, count=1, flags=re.IGNORECASE)
        vector, name_of = None, None
        embedder, _ = self._semantic_embedder()
        if embedder is not None:
            try:
                vector, name_of = _vector_bytes(self.embed_one(text, embedder)), str(embedder.name)
            except Exception as exc:
                log.warning("alias_embed_failed", aliases=1, reason=str(exc))
        asked = None
        if not str(by or "").startswith(RUN_PREFIX):  # a run's wording answered no question
            top = self._asked(query, task_type, by)
            asked = None if top is None else Asked(score=top[1], top=top[0] == proc.id)
        return self.answers.add_alias(
            proc.id, text, wording_key(text), scope=task_type, by=by, vector=vector, embedder=name_of, asked=asked
        )

    def reject(
        self, query: str, procedure_ids: list[str], *, task_type: str | None = None, by: str | None = None
    ) -> list[WordingAnswer]:
        """A judge said the task is none of these procedures: each pair is remembered and not offered again."""
        from ...redact import redact

        text = redact(query.strip())
        top = self._asked(query, task_type, by)
        return [
            self.answers.add_rejection(
                pid,
                text,
                wording_key(text),
                scope=task_type,
                by=by,
                asked=Asked(score=top[1], top=True) if top is not None and top[0] == pid else None,
            )
            for pid in dict.fromkeys(procedure_ids)
        ]

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

    def _text(self, proc: CapturedProcedure) -> _Prepared:
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
                key_words(proc.description),
                spoken(proc.description),
            )
            self._texts[key] = found
        return found

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
