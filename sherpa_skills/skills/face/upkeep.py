"""What the heartbeat keeps up in the skill store: which procedures' health may have moved, and the procedure index."""

from __future__ import annotations

from collections.abc import Collection
from typing import Literal

from ..match.matcher import Matcher
from ..match.procedure_index import FILE
from ..store.database import ProcedureDatabase


def changed_procedures(
    store: ProcedureDatabase,
    executions_after: int,
    generation: int | None,
    promoted_since: float,
    checked: Collection[str],
) -> tuple[set[str], int]:
    """(ids, newest execution id): the procedures executed after execution `executions_after`; when the store's
    generation is no longer `generation`, also those not in `checked` and those promoted since `promoted_since`."""
    newest_execution = int(store.conn.execute("SELECT COALESCE(MAX(id), 0) FROM executions").fetchone()[0])
    ids = {
        r[0]
        for r in store.conn.execute("SELECT DISTINCT procedure_id FROM executions WHERE id > ?", (executions_after,))
    }
    if store.generation() != generation:
        ids |= {r[0] for r in store.conn.execute("SELECT id FROM procedures") if r[0] not in checked}
        # A promotion opens a fresh evidence window: its procedure is `new` again, whatever was last seen of it.
        ids |= {
            r[0]
            for r in store.conn.execute(
                "SELECT procedure_id FROM promotions WHERE promoted_at >= ?", (float(promoted_since),)
            )
        }
    return ids, newest_execution


def sync_index(store: ProcedureDatabase) -> tuple[Literal["rebuilt", "updated"], int]:
    """Rebuild the procedure index when its file is missing and the store holds procedures, else bring it up to
    date; ("rebuilt" or "updated", how many procedures it holds)."""
    matcher = Matcher(store)
    if store.count() and not (matcher.index_path / FILE).is_file():
        return "rebuilt", matcher.reindex()
    return "updated", matcher.refresh()
