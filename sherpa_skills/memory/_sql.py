"""The SQL every memory read shares: the artifact columns and their decoding, the full-text query, who may read what."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from ..db.text_search import TextIndex
from ..errors import UsageError
from ._models import Artifact, check_scope

if TYPE_CHECKING:
    from ..db.database import Database

MAX_QUERY_CHARS = 64 << 10
_MAX_TERMS = 64
_TERM = re.compile(r"\w+", re.UNICODE)
# Words that match nearly every artifact: dropped from the full-text query (unless they are all the query has),
# because OR-ing them makes the engine score most of the table for no change in ranking.
_STOPWORDS = frozenset(
    """a an and are as at be but by for from has have how i in into is it its of on or our so that the their then there
    these this to was we were what when where which who why will with you your do does did not no""".split()
)
#: The text and tags, searchable by their words (the text weighs as much as twice the tags).
MEMORY_TEXT = TextIndex(
    table="memory_artifacts", key="seq", columns=("text", "tags"), weights=(1.0, 0.5), name="memory_fts"
)
_COLUMNS = (
    "a.id, a.text, a.agent, a.run_id, a.scope, a.kind, a.tags, a.metadata, a.created, a.confidence, a.abstraction,"
    " a.category, a.seen, a.last_seen, a.last_access, a.reads, a.supersedes, a.superseded_by"
)
#: Rows that are the newest of their chain: what reads return unless the history is asked for.
CURRENT = "a.superseded_by IS NULL"


def _artifact(row: tuple[Any, ...]) -> Artifact:
    (
        aid,
        text,
        agent,
        run_id,
        scope,
        kind,
        tags,
        metadata,
        created,
        confidence,
        abstraction,
        category,
        seen,
        last_seen,
        last_access,
        reads,
        supersedes,
        superseded_by,
    ) = row
    return Artifact.model_construct(
        id=aid,
        text=text,
        agent=agent,
        run_id=run_id,
        scope=scope,
        kind=kind,
        tags=json.loads(tags),
        metadata=json.loads(metadata),
        created=created,
        confidence=confidence,
        abstraction=abstraction,
        category=category,
        seen=seen,
        last_seen=last_seen,
        last_access=last_access,
        reads=reads,
        supersedes=supersedes,
        superseded_by=superseded_by,
    )


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def query_terms(query: str) -> list[str]:
    """The words a free-text query is searched by: stop words dropped unless they are all it has."""
    words = list(dict.fromkeys(t.lower() for t in _TERM.findall(query) if len(t) > 1 or t.isdigit()))
    return ([w for w in words if w not in _STOPWORDS] or words)[:_MAX_TERMS]


def reader_filter(
    agent: str | None,
    scope: str = "all",
    *,
    author: str | None = None,
    kind: str | None = None,
    metadata: dict[str, Any] | None = None,
    history: bool = False,
    db: Database,
) -> tuple[str, list[Any]]:
    """SQL over `memory_artifacts a` for what `agent` may see: shared artifacts and its own private notes
    (the newest of each supersede chain only, unless `history`)."""
    scope = check_scope(scope, reading=True)
    clauses: list[str] = [] if history else [CURRENT]
    args: list[Any] = []
    if scope == "private":
        if agent is None:
            raise UsageError(
                "shared memory: private notes are read by their author only; give the reading agent's name"
            )
        clauses.append("a.scope = 'private' AND a.agent = ?")
        args.append(agent)
    elif scope == "shared" or agent is None:
        clauses.append("a.scope = 'shared'")
    else:
        clauses.append("(a.scope = 'shared' OR a.agent = ?)")
        args.append(agent)
    if author is not None:
        clauses.append("a.agent = ?")
        args.append(author)
    if kind is not None:
        clauses.append("a.kind = ?")
        args.append(kind)
    for key, value in (metadata or {}).items():
        clause, more = db.json_matches("a.metadata", key, value)
        clauses.append(clause)
        args.extend(more)
    return " AND ".join(clauses), args
