"""Shared memory as agents use it: write to the truth then the companion; search both and combine the scores.

Hybrid score, per query, over the union of the lexical and the semantic candidates::

    lexical  = bm25 / max(bm25 over this query's lexical candidates)      in [0, 1]; 0 when not a lexical candidate
    semantic = cosine(query, artifact), clamped to [0, 1]                 0 when not among the semantic candidates,
                                                                          and 0 below SEMANTIC_FLOOR = 0.25
    score    = 0.6 * semantic + 0.4 * lexical                            (SEMANTIC_WEIGHT = 0.6); 0 → not a hit

bm25 is SQLite FTS5's (sign flipped so higher is better; the text weighs 1.0, the tags 0.5); each list holds
max(4 × limit, 50) lexical candidates and up to 4 × that many semantic ones, both filtered to what the reading
agent may see. Cosine stays absolute (not
rescaled per query), so a query that means nothing close to any artifact does not inflate its best guess; the
floor drops the nearest-but-unrelated neighbours a vector index always returns (with MiniLM, unrelated sentences score
about 0 to 0.2 here, paraphrases 0.4 and above).
When the companion is unavailable, score = lexical and the result says why (`degraded`). A write is put in the
companion by a thread once writes pause (`_indexer`); until then this process scores it exactly against its vector.
The score is then weighed by the artifact's decay tier (`_hygiene`: hot 1.0, warm 0.7, cold 0.4), so a stale note
ranks below a fresh one as relevant; only the newest of a supersede chain is returned unless `history` is asked.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from ..errors import SherpaError, UsageError
from ..home import per_home
from ._hygiene import NEAR_DUPLICATE, TIER_WEIGHT, contradiction, tier
from ._indexer import Indexer
from ._models import (
    Artifact,
    Hit,
    SearchResult,
    Written,
    check_filters,
    check_limit,
    check_name,
    check_near,
    check_scope,
)
from ._position import CompanionPosition, position_file
from ._sql import MAX_QUERY_CHARS
from ._store import MemoryStore

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    from ..semantic.companion import Companion

#: What the lookup thread finds: the query's vector, the nearest held here, the companion's nearest.
Nearest = tuple[list[float], list[tuple[str, float]], list[tuple[str, float]]]

log = structlog.get_logger(__name__)

SEMANTIC_WEIGHT = 0.6
SEMANTIC_FLOOR = 0.25
CATCH_UP = 32  # artifacts left out of the companion earlier, indexed again with each synchronous indexing
_META_PREFIX = "m."
_META_MAX_CHARS = 512


def candidates(limit: int) -> int:
    return max(4 * limit, 50)


def hybrid(
    lexical: dict[str, float],
    semantic: dict[str, float] | None,
    weight: float = SEMANTIC_WEIGHT,
    floor: float = SEMANTIC_FLOOR,
) -> dict[str, tuple[float, float, float | None]]:
    """id → (score, normalised lexical, semantic); `semantic` None means lexical only. Pure: the formula above."""
    best = max(lexical.values(), default=0.0)
    scored: dict[str, tuple[float, float, float | None]] = {}
    for aid in lexical.keys() | (semantic or {}).keys():
        lex = lexical.get(aid, 0.0) / best if best > 0 else 0.0
        if semantic is None:
            if lex > 0:
                scored[aid] = (lex, lex, None)
        else:
            sem = min(1.0, max(0.0, semantic.get(aid, 0.0)))
            score = weight * (sem if sem >= floor else 0.0) + (1.0 - weight) * lex
            if score > 0:
                scored[aid] = (score, lex, sem)
    return scored


def _merged(*lists: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """(id, similarity) lists as one, best first; an id in several keeps its best similarity."""
    best: dict[str, float] = {}
    for found in lists:
        for aid, sim in found:
            if sim > best.get(aid, -1.0):
                best[aid] = sim
    return sorted(best.items(), key=lambda item: -item[1])


def companion_metadata(a: Artifact) -> dict[str, Any]:
    """What the companion filters on: visibility, kind, and the artifact's flat scalar metadata under `m.`."""
    meta: dict[str, Any] = {"agent": a.agent, "scope": a.scope}
    if a.kind is not None:
        meta["kind"] = a.kind
    for key, value in a.metadata.items():
        if isinstance(value, (str, int, float, bool)) and not (isinstance(value, str) and len(value) > _META_MAX_CHARS):
            meta[_META_PREFIX + key] = value
    return meta


def companion_where(
    agent: str | None, scope: str, author: str | None, kind: str | None, metadata: dict[str, Any]
) -> dict[str, Any]:
    """The same visibility as the truth's SQL, as a chromadb `where` (the truth checks every hit again)."""
    clauses: list[dict[str, Any]] = []
    if scope == "private":
        clauses += [{"scope": "private"}, {"agent": agent}]
    elif scope == "shared" or agent is None:
        clauses.append({"scope": "shared"})
    else:
        clauses.append({"$or": [{"scope": "shared"}, {"agent": agent}]})
    if author is not None:
        clauses.append({"agent": author})
    if kind is not None:
        clauses.append({"kind": kind})
    clauses += [{_META_PREFIX + k: v} for k, v in metadata.items() if v is not None]
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


class SharedMemory:
    """Artifacts agents write and search: the SQLite truth, and a chromadb companion rebuilt from it on demand."""

    def __init__(
        self, home: str | Path | None = None, *, store: MemoryStore | None = None, companion: Companion | None = None
    ):
        self.store = store if store is not None else MemoryStore(home=home)
        self.home = self.store.path.parent
        self.collection = f"memory-{self.store.store_id}"
        self._companion = companion
        self._lock = threading.RLock()
        #: Why the last companion call failed (None when it worked): writes still succeed, only indexing waits.
        self.companion_problem: str | None = None
        if self.store.db.shared:  # this home's companion follows a truth other homes write too
            file, inside = position_file(self.home, self.companion(), self.collection)
            self.store.position = CompanionPosition(file, inside_companion=inside)
        self.indexer = Indexer(self.store.reopen, self.companion, self.collection, companion_metadata, self._indexed)
        self._lookup: ThreadPoolExecutor | None = (
            None  # one worker thread: the companion lookup runs while SQLite ranks the words
        )

    def _nearest(self, query: str, wide: int) -> Nearest:
        """(query vector, held nearest, companion nearest): the meaning half of a search; touches no SQLite, so it
        runs in the lookup thread while this thread's connection runs the FTS5 ranking (both release the GIL)."""
        companion = self.companion()
        vector = companion.embed_query(query)
        held = self.indexer.nearest(vector)  # written here, not in the companion yet: scored exactly
        return vector, held, companion.query(self.collection, query, n=wide, vector=vector)

    def _start_lookup(self, query: str, wide: int) -> Future[Nearest]:
        from concurrent.futures import ThreadPoolExecutor

        with self._lock:
            if self._lookup is None:
                self._lookup = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memory-lookup")
            return self._lookup.submit(self._nearest, query, wide)

    def _indexed(self, problem: str | None) -> None:
        self.companion_problem = problem

    def close(self) -> None:
        """Index what is still held (so another process finds it by meaning), then release the files."""
        self.indexer.close()
        if self._lookup is not None:
            self._lookup.shutdown(wait=True)
            self._lookup = None
        if self._companion is not None:
            self._companion.close()
        self.store.close()

    def flush(self) -> str | None:
        """Wait until every artifact written here is in the companion; why not, or None."""
        return self.indexer.flush()

    def __enter__(self) -> SharedMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def companion(self) -> Companion:
        if self._companion is None:
            from ._config import open_companion

            self._companion = open_companion(self.home)
        return self._companion

    # ------------------------------------------------------------------ writing

    def write(
        self,
        text: str,
        *,
        agent: str,
        scope: str = "private",
        kind: str | None = None,
        tags: str | Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        run_id: str | None = None,
        id: str | None = None,
        **checks: Any,
    ) -> Artifact:
        """Store an artifact (redacted) in the truth, then index it; a companion failure leaves it pending, not lost.
        An identical current artifact is returned instead of a copy; see `remember` for what else a write checks."""
        return self.remember(
            text, agent=agent, scope=scope, kind=kind, tags=tags, metadata=metadata, run_id=run_id, id=id, **checks
        ).artifact

    def remember(
        self,
        text: str,
        *,
        agent: str,
        scope: str = "private",
        kind: str | None = None,
        tags: str | Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        run_id: str | None = None,
        id: str | None = None,
        confidence: float | None = None,
        abstraction: str | None = None,
        category: str | None = None,
        supersedes: str | None = None,
        on_near: str = "flag",
        near_threshold: float = NEAR_DUPLICATE,
        check_tensions: bool = True,
        tension_model: str | None = None,
        model_dir: str | Path | None = None,
    ) -> Written:
        """Write with hygiene: an exact duplicate bumps the stored one's `seen`; a near-duplicate (cosine ≥
        `near_threshold`, same scope, owner and kind) is flagged, linked (`on_near="link"`) or merged into the stored
        one (`"merge"`); `supersedes` marks an older artifact replaced; contradicting facts become open tensions
        (by rules, and, with `tension_model`, by asking that model through litellm about related
        facts no rule flagged)."""
        on_near = check_near(on_near)
        prepared = self.store.prepare(
            text,
            agent=agent,
            scope=scope,
            kind=kind,
            tags=tags,
            metadata=metadata,
            run_id=run_id,
            id=id,
            confidence=confidence,
            abstraction=abstraction,
            category=category,
        )
        if supersedes is not None:
            supersedes = str(check_name(supersedes, "supersedes"))
            self.store.check_supersede(supersedes, prepared)
        result = Written(prepared)
        vector: list[float] | None = (
            None  # the new text's embedding, when the companion answered the near-duplicate query
        )
        if self.store.exact(prepared) is None and not self.store.has_id(prepared.id):
            result.near, problem, vector = self._near(
                prepared, near_threshold, exclude={supersedes} if supersedes else set()
            )
            if problem:
                result.skipped.append(f"near-duplicate check: {problem}")
            if result.near and on_near == "merge":
                target = self.store.get(result.near[0][0], agent=prepared.agent)
                result.artifact, result.merged_into = self.store.merge_into(target), target.id
                return result
        [(artifact, duplicate)] = self.store.add_checked([prepared], supersedes=supersedes)
        result.artifact, result.duplicate = artifact, duplicate
        if artifact is not prepared:  # an exact duplicate, or a replayed write: nothing new to check or index
            if supersedes is not None and artifact.id != supersedes and artifact.superseded_by is None:
                self.store.supersede(supersedes, artifact.id)  # the correction was already stored: it wins now
            return result
        if result.near and on_near == "link":
            for other, score in result.near:
                self.store.link(prepared.id, other, "near_duplicate", score)
            result.linked = [other for other, _ in result.near]
        if supersedes is not None:
            self.store.supersede(supersedes, prepared.id)
            result.artifact = self.store.get(prepared.id, agent=prepared.agent)
        if check_tensions:
            judge = None
            if tension_model:
                from ._judge import llm_judge

                judge = llm_judge(tension_model, result.skipped, None if model_dir is None else str(model_dir))
            result.tensions = self.store.find_tensions(result.artifact, judge=judge)
        if vector is not None and self.indexer.accepts():
            self.indexer.add(result.artifact, vector)  # the companion answered just now: index it off the write path
        else:
            self._index([result.artifact])
        return result

    def _near(
        self, artifact: Artifact, threshold: float, exclude: set[str]
    ) -> tuple[list[tuple[str, float]], str | None, list[float] | None]:
        """Current artifacts of the same scope, owner and kind at cosine ≥ threshold, nearest first (or why not
        checked), and the text's vector when the companion answered (None before anything is indexed, or on failure)."""
        from ..semantic.companion import CompanionUnavailable

        indexed = self.store.any_indexed()
        if not indexed and not self.indexer.held:
            return [], None, None
        try:
            companion = self.companion()
            vector = companion.embed_query(artifact.text)
            nearest = companion.query(self.collection, artifact.text, n=10, vector=vector) if indexed else []
        except (CompanionUnavailable, UsageError) as exc:
            return [], getattr(exc, "reason", str(exc)), None
        nearest = _merged(nearest, self.indexer.nearest(vector))
        close = [(aid, sim) for aid, sim in nearest if sim >= threshold and aid != artifact.id and aid not in exclude]
        if not close:
            return [], None, vector if indexed else None
        same = self.store.visible(
            [aid for aid, _ in close],
            agent=artifact.agent,
            scope=artifact.scope,
            author=artifact.agent if artifact.scope == "private" else None,
        )
        return (
            [
                (aid, sim)
                for aid, sim in close
                if aid in same
                and same[aid].kind == artifact.kind
                and contradiction(artifact.text, same[aid].text) is None
            ],
            None,
            vector if indexed else None,
        )

    def write_many(self, artifacts: list[Artifact], *, index: bool = True) -> list[Artifact]:
        """Bulk load prepared artifacts (`store.prepare`) in one transaction; `index=False` leaves them to `reindex`."""
        stored = self.store.add(artifacts)
        if index:
            for start in range(0, len(stored), 1024):
                self._index(stored[start : start + 1024], catch_up=0)
        return stored

    def _index(self, artifacts: list[Artifact], catch_up: int = CATCH_UP) -> None:
        from ..semantic.companion import CompanionUnavailable

        with self._lock:
            try:
                companion = self.companion()
                if self.store.any_indexed():
                    # Raises when unreachable, or when the collection is gone although artifacts were indexed (deleted,
                    # replaced): a new collection holding only the newest items would make meaning search silently
                    # incomplete. Before the first indexed write there is nothing to lose:
                    # upsert creates the collection.
                    companion.count(self.collection)
                todo = {a.id: a for a in artifacts}
                if catch_up:
                    todo.update({a.id: a for a in self.store.pending_artifacts(catch_up)})
                items = list(todo.values())
                if not items:
                    return
                companion.upsert(
                    self.collection,
                    [a.id for a in items],
                    [a.text for a in items],
                    [companion_metadata(a) for a in items],
                )
            except (CompanionUnavailable, UsageError) as exc:
                self.companion_problem = getattr(exc, "reason", str(exc))
                log.warning("memory_index_pending", reason=self.companion_problem, artifacts=len(artifacts))
                return
            self.companion_problem = None
            with self.indexer.lock:
                self.store.mark_indexed([a.id for a in items])
                self.indexer.forget([a.id for a in items])

    def catch_up(self, batch: int = 256) -> int:
        """On PostgreSQL: index what other homes wrote since this home's companion last caught up, in the database's
        write order (everything, when the companion's folder was deleted); how many went in. Nothing on SQLite,
        where this home's writes are all there is."""
        if self.store.position is None:
            return 0
        done = 0
        while (behind := self.store.pending()) > 0:
            self._index([], catch_up=batch)
            if self.companion_problem is not None or self.store.pending() >= behind:
                break  # the companion refused (searches say so), or nothing moved
            done += behind - self.store.pending()
        return done

    def delete(self, artifact_id: str, *, operator: str, reason: str | None = None) -> bool:
        """Remove an artifact from the truth and the companion: an operator's act, logged (agents supersede instead)."""
        if not self.store.delete(artifact_id, operator=operator, reason=reason):
            return False
        self.indexer.forget([artifact_id])
        try:
            self.companion().delete(self.collection, [artifact_id])
        except SherpaError as exc:  # the truth wins: a stale companion hit is dropped at search time
            log.warning("memory_companion_delete_failed", artifact=artifact_id, reason=str(exc))
        return True

    # ------------------------------------------------------------------ reading

    def get(self, artifact_id: str, *, agent: str | None) -> Artifact:
        return self.store.get(artifact_id, agent=agent)

    def search(
        self,
        query: str,
        *,
        agent: str | None,
        scope: str = "all",
        author: str | None = None,
        kind: str | None = None,
        metadata: dict[str, Any] | None = None,
        limit: int = 10,
        mode: str = "hybrid",
        history: bool = False,
        touch: bool = True,
    ) -> SearchResult:
        """What `agent` may see (shared artifacts and its own private notes), best first;
        see the module for the score."""
        if not isinstance(query, str) or not query.strip():
            raise UsageError("shared memory: the search query is empty; say what to look for")
        if len(query) > MAX_QUERY_CHARS:
            raise UsageError(f"shared memory: the search query is {len(query):,} characters, over {MAX_QUERY_CHARS:,}")
        if mode not in ("hybrid", "lexical"):
            raise UsageError(f"shared memory: search mode {mode!r} is not one of: hybrid, lexical")
        agent = check_name(agent, "the reading agent's name", required=False)
        author = check_name(author, "author", required=False)
        scope = check_scope(scope, reading=True)
        filters = check_filters(metadata)
        limit = check_limit(limit)
        n = candidates(limit)
        if mode == "hybrid":
            self.catch_up()
        lookup = self._start_lookup(query, 4 * n) if mode == "hybrid" else None
        lexical = self.store.lexical(
            query, agent=agent, scope=scope, author=author, kind=kind, metadata=filters, limit=n, history=history
        )
        order = {aid: seq for aid, seq, _ in lexical}
        semantic: dict[str, float] | None = None
        degraded: str | None = None
        notes: list[str] = []
        if mode == "hybrid":
            semantic, degraded = self._semantic(
                query, agent, scope, author, kind, filters, limit, n, order, history, lookup
            )
        scored = hybrid({aid: raw for aid, _, raw in lexical}, semantic)
        now = time.time()
        for aid, (last, conf, reads, abstraction) in self.store.decay_inputs(list(scored)).items():
            score, lex, sem = scored[aid]
            scored[aid] = (
                score * TIER_WEIGHT[tier(last, confidence=conf, reads=reads, abstraction=abstraction, now=now)],
                lex,
                sem,
            )
        best = sorted(scored, key=lambda aid: (-scored[aid][0], -order[aid]))[:limit]
        # Texts are read for the hits only, and through the same visibility filter once more.
        artifacts = self.store.visible(
            best, agent=agent, scope=scope, author=author, kind=kind, metadata=filters, history=history
        )
        hits = [Hit(artifacts[aid], *scored[aid]) for aid in best if aid in artifacts]
        if touch and hits:
            self.store.touch([h.artifact.id for h in hits])
        pending = 0
        if semantic is not None:
            with self.indexer.lock:  # held artifacts are found by meaning already: not what the note is about
                pending = max(0, self.store.pending() - len(self.indexer.held))
            if pending:
                notes.append(
                    f"{pending} artifact(s) are not in the semantic index yet (written while it was unavailable); "
                    f"they are found by their words only until `sherpa-skills memory reindex`"
                )
            embedder = self.companion().embedder
            if not getattr(embedder, "semantic", True):
                notes.append(
                    f"the embedder {embedder.name!r} matches shared words, not meaning (MiniLM is not installed)"
                )
        return SearchResult(query, hits, "lexical" if semantic is None else "hybrid", degraded, pending, notes)

    def _semantic(
        self,
        query: str,
        agent: str | None,
        scope: str,
        author: str | None,
        kind: str | None,
        filters: dict[str, Any],
        limit: int,
        n: int,
        order: dict[str, int],
        history: bool = False,
        lookup: Future[Nearest] | None = None,
    ) -> tuple[dict[str, float] | None, str | None]:
        """(similarity by visible id, None) from the companion, or (None, why not); `order` gains the seq of new ids.

        chromadb's metadata filters cost a scan (about 0.2 s at 100k items), its plain nearest-neighbour query
        about 1 ms; so ask for the 4 × n nearest unfiltered and keep the visible ones (the truth decides). Those are
        the nearest visible items down to that distance (as far as the approximate index finds them); only when
        fewer than `limit` survive (a very selective filter) ask again with the filter in chromadb.
        """
        wide = 4 * n
        try:
            vector, held, nearest = lookup.result() if lookup is not None else self._nearest(query, wide)
            companion = self.companion()
            visible = self.store.visible_ids(
                [aid for aid, _ in _merged(nearest, held)],
                agent=agent,
                scope=scope,
                author=author,
                kind=kind,
                metadata=filters,
                history=history,
            )
            if len(visible) < limit and len(nearest) < self.store.count():  # (HNSW may return fewer than asked)
                nearest = companion.query(
                    self.collection,
                    query,
                    n=n,
                    where=companion_where(agent, scope, author, kind, filters),
                    vector=vector,
                )
                visible = self.store.visible_ids(
                    [aid for aid, _ in _merged(nearest, held)],
                    agent=agent,
                    scope=scope,
                    author=author,
                    kind=kind,
                    metadata=filters,
                    history=history,
                )
        except SherpaError as exc:  # CompanionUnavailable, or a companion that cannot even be configured
            if self.store.count() == 0:
                return {}, None  # nothing stored, nothing indexed: an absent collection is no degradation
            reason = getattr(exc, "reason", str(exc))
            log.warning("memory_search_degraded", reason=reason)
            return None, (
                f"semantic search unavailable ({reason}); these results are lexical only (the store's full-text "
                f"search); "
                f"`sherpa-skills memory reindex` rebuilds the index from the store"
            )
        order.update(visible)
        return {aid: sim for aid, sim in _merged(nearest, held) if aid in visible}, None

    # ------------------------------------------------------------------ maintenance

    def reindex(self) -> dict[str, Any]:
        """Rebuild the companion collection from the truth. An embedded folder that cannot be rebuilt in place
        (corrupt) is rebuilt beside it and swapped in; the broken one is kept as `companion.broken-<time>`."""
        from ..semantic.companion import Companion, CompanionUnavailable

        started = time.monotonic()
        self.indexer.flush()  # what is held goes in first (or stays pending if the companion is broken: rebuilt below)
        upto = self.store.last_seq()
        companion = self.companion()
        moved: Path | None = None
        with self._lock:
            try:
                size = companion.rebuild(self.collection, self._items(upto))
            except CompanionUnavailable as first:
                if companion.path is None:
                    raise
                stamp = time.strftime("%Y%m%d-%H%M%S")
                fresh = companion.path.with_name(f"{companion.path.name}.new-{stamp}")
                attempt = Companion(fresh, embedder=companion.embedder)
                try:
                    size = attempt.rebuild(self.collection, self._items(upto))
                except CompanionUnavailable:
                    attempt.close()
                    shutil.rmtree(fresh, ignore_errors=True)
                    raise first from None
                attempt.close()
                companion.close()
                moved = companion.path.with_name(f"{companion.path.name}.broken-{stamp}")
                if companion.path.exists():
                    companion.path.rename(moved)
                fresh.rename(companion.path)
                log.warning("memory_companion_replaced", broken=str(moved), reason=first.reason)
            self.store.set_indexed_upto(upto)
            while self.store.pending():  # written during the rebuild: index them now
                before = self.store.pending()
                self._index([], catch_up=1024)
                if self.store.pending() >= before:
                    break
        self.companion_problem = None
        with self.indexer.lock:  # held artifacts the rebuild read from the truth are in the companion now
            self.indexer.forget(self.store.indexed_among(list(self.indexer.held)))
        result = {
            "artifacts": size,
            "collection": self.collection,
            "companion": companion.where,
            "embedder": companion.embedder.name,
            "seconds": round(time.monotonic() - started, 2),
            "pending": self.store.pending(),
            "moved_aside": str(moved) if moved else None,
        }
        log.info("memory_reindexed", **result)
        return result

    def _items(self, upto: int) -> Iterator[tuple[str, str, dict[str, Any]]]:
        return ((a.id, a.text, companion_metadata(a)) for a in self.store.iter_artifacts(upto))

    def stats(self) -> dict[str, Any]:
        """Counts per scope and agent, and whether the companion answers (never raises for the companion)."""
        if self.indexer.held:
            self.indexer.flush()  # counts compare the companion with the truth: what is held goes in first
        data = self.store.stats()
        status: dict[str, Any] = {"collection": self.collection, "ok": False, "items": None, "reason": None}
        try:
            companion = self.companion()
            status.update(
                where=companion.where,
                embedder=companion.embedder.name,
                semantic=bool(getattr(companion.embedder, "semantic", True)),
            )
            status["items"] = companion.count(self.collection)
            stale = companion.stale(self.collection)
            status["ok"] = stale is None
            status["reason"] = stale
        except SherpaError as exc:
            status["reason"] = getattr(exc, "reason", str(exc))
        if status["ok"] and status["items"] != data["artifacts"]:
            status["reason"] = (
                f"the companion holds {status['items']} items for {data['artifacts']} artifacts; "
                f"`sherpa-skills memory reindex` brings it in line"
            )
        data["companion"] = status
        return data


def shared_memory(home: str | Path | None = None) -> SharedMemory:
    """One SharedMemory per home and thread, reused across actions."""
    return per_home(SharedMemory, home)
