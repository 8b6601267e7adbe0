"""The shared-memory and domains pages: search, a fact's history, open tensions; each domain's status and proposals.

Read-only, as the CLI's `memory search/history/tensions` and `domains list/show` see them (shared artifacts only: the
view is no agent, so private notes stay private). Search is lexical here: the view never loads an embedding model.
"""

from __future__ import annotations

from typing import Any

from ..errors import StoreError, UsageError
from .views import Stores

SEARCH_LIMIT = 50
RECENT = 30  # the newest shared notes the page lists before any search


def recent_notes(store: Any, limit: int = RECENT) -> list[dict[str, Any]]:
    """The newest shared notes (current versions only), newest first: what the page shows before anyone searches."""
    from ..memory._sql import _COLUMNS, _artifact, reader_filter

    where, args = reader_filter(None, "shared", dialect=store.dialect)
    rows = store.conn.execute(
        f"SELECT {_COLUMNS} FROM memory_artifacts a WHERE {where} ORDER BY a.seq DESC LIMIT ?", [*args, limit]
    ).fetchall()
    return [_artifact(row).model_dump(mode="json") for row in rows]


def memory_page(stores: Stores, q: str | None = None) -> dict[str, Any]:
    from ..memory import SharedMemory

    with SharedMemory(stores.memory_home) as memory:
        hits = []
        if q and q.strip():
            result = memory.search(q, agent=None, limit=SEARCH_LIMIT, mode="lexical", touch=False)
            hits = [{**h.artifact.model_dump(mode="json"), "score": h.score} for h in result.hits]
        tensions = memory.store.tensions(agent=None, status="open")
        recent = [] if q and q.strip() else recent_notes(memory.store)
    return {"q": q or "", "hits": hits, "tensions": tensions, "recent": recent}


def memory_item_page(stores: Stores, artifact_id: str) -> dict[str, Any]:
    """One fact and every version it went through, oldest first (what replaced what)."""
    from ..memory import SharedMemory

    with SharedMemory(stores.memory_home) as memory:
        chain = memory.store.chain(artifact_id, agent=None)
    return {"id": artifact_id, "chain": [{**a.model_dump(mode="json"), "tier": a.tier()} for a in chain]}


def domains_page(stores: Stores) -> dict[str, Any]:
    from ..memory.domains import Domains

    with Domains(home=stores.domains_home) as store:
        return {"domains": store.list(), "proposals": store.proposals()}


def domain_page(stores: Stores, name: str) -> dict[str, Any]:
    """One domain; a malformed name is a usage error (400), a well-formed one nobody made is not found (404)."""
    from ..memory.domains import Domains, check_domain

    check_domain(name)
    with Domains(home=stores.domains_home) as store:
        try:
            found = store.get(name)
        except UsageError as exc:
            raise StoreError(str(exc)) from None
        return {
            **found,
            "decisions": store.decisions(name),
            "changelog": store.changelog(name, 100),
            "proposals": store.proposals(name, "all"),
        }
