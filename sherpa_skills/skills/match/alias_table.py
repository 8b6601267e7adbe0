"""The aliases a match reads, as it keeps them between matches: a scope's rows with their key words and vectors
(`AliasViews`, read again only where the store says they changed), and those with a vector as arrays (`AliasTable`),
so a task is scored against every alias in one product and each procedure's closest alias found in one pass."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..store.answers import AliasRow

#: An alias as a match uses it: its row, its key words, its vector (None: not embedded by this embedder).
AliasView = tuple[AliasRow, frozenset[str], Any]


@dataclass
class AliasViews:
    """A scope's aliases as read at one version of the answers, while no alias was removed (`Answers.alias_changes`)."""

    version: int
    removals: int
    by_id: dict[str, AliasView]
    views: list[AliasView]
    _table: AliasTable | None = None

    def table(self) -> AliasTable:
        """The aliases that have a vector, as arrays: made once per read, not at every match (stacking and walking a
        long stream's aliases again at each match was most of scoring them)."""
        if self._table is None:
            import numpy as np

            rows = [a for a, _, v in self.views if v is not None]
            matrix = np.asarray([v for _, _, v in self.views if v is not None], dtype=np.float32)
            procedures: dict[str, int] = {}
            owners: dict[str, int] = {"": 0}
            self._table = AliasTable(
                rows=rows,
                matrix=matrix,
                lengths=np.linalg.norm(matrix, axis=1) if rows else matrix,
                procedure=np.asarray([procedures.setdefault(a.procedure_id, len(procedures)) for a in rows], dtype=int),
                procedures=list(procedures),
                owner=np.asarray([owners.setdefault(a.owner, len(owners)) for a in rows], dtype=int),
                owners=owners,
                exact_only=np.asarray([a.exact_only for a in rows], dtype=bool),
            )
        return self._table


@dataclass
class AliasTable:
    """A scope's aliases with a vector, in id order, as arrays: each one's procedure and owner by number."""

    rows: list[AliasRow]
    matrix: Any
    lengths: Any
    procedure: Any
    procedures: list[str]
    owner: Any
    owners: dict[str, int]
    exact_only: Any

    def best(self, sims: Any, mask: Any) -> dict[str, tuple[float, str]]:
        """Per procedure, its best cosine among the aliases `mask` keeps and that alias's id (the first in id order
        on a tie), procedures in the order their first kept alias comes."""
        import numpy as np

        kept = np.flatnonzero(mask)
        if not kept.size:
            return {}
        groups, scores = self.procedure[kept], sims[kept]
        order = np.lexsort((kept, -scores, groups))  # by procedure, best first, then by id
        first = np.ones(order.size, dtype=bool)
        first[1:] = groups[order][1:] != groups[order][:-1]
        winners = order[first]  # one per procedure present, by procedure number
        _, seen_at = np.unique(groups, return_index=True)  # where each procedure's first kept alias stands
        return {
            self.procedures[groups[w]]: (float(scores[w]), self.rows[kept[w]].id)
            for w in winners[np.argsort(seen_at, kind="stable")]
        }
