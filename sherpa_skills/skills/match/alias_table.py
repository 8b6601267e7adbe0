"""The aliases a match reads, as it keeps them between matches: a scope's rows with their key words and vectors
(`AliasViews`, read again only where the store says they changed), and those with a vector as arrays (`AliasTable`),
so a task is scored against every alias in one product and each procedure's closest alias found in one pass."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
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
    _by_words: dict[frozenset[str], list[AliasView]] | None = None
    _by_procedure: dict[str, list[AliasView]] | None = None

    def grown(self, version: int, removals: int, by_id: dict[str, AliasView], written: list[str]) -> AliasViews:
        """The views after the aliases `written` (ids) were read at `version`: a table and lookups already made grow
        by their rows when they are all new (a run adds one), else are made again when asked."""
        found = AliasViews(version, removals, by_id, list(by_id.values()))
        if not any(i in self.by_id for i in written):
            added = [by_id[i] for i in written]
            if self._table is not None:
                found._table = self._table.extended(added)
            if self._by_words is not None:
                found._by_words = _appended(self._by_words, added, lambda view: view[1])
            if self._by_procedure is not None:
                found._by_procedure = _appended(self._by_procedure, added, lambda view: view[0].procedure_id)
        return found

    def saying(self, words: frozenset[str]) -> list[AliasView]:
        """The aliases whose key words are `words`, in id order: an exact wording looked up, not searched for among
        every alias at each match."""
        if self._by_words is None:
            self._by_words = _appended({}, self.views, lambda view: view[1])
        return self._by_words.get(words, [])

    def of(self, procedure_id: str) -> list[AliasView]:
        """One procedure's aliases, in id order."""
        if self._by_procedure is None:
            self._by_procedure = _appended({}, self.views, lambda view: view[0].procedure_id)
        return self._by_procedure.get(procedure_id, [])

    def table(self) -> AliasTable:
        """The aliases that have a vector, as arrays: made once per read, not at every match (stacking and walking a
        long stream's aliases again at each match was most of scoring them)."""
        if self._table is None:
            self._table = AliasTable.empty().extended(self.views)
        return self._table


def _appended(lookup: dict[Any, list[AliasView]], views: list[AliasView], key: Any) -> dict[Any, list[AliasView]]:
    """`lookup` with `views` added under their keys, in order; the lists it had are left as they were (an older
    AliasViews still holds them)."""
    out = dict(lookup)
    for view in views:
        k = key(view)
        out[k] = [*out.get(k, ()), view]
    return out


@dataclass
class _Room:
    """The vectors' rows with room to grow: the first `used` belong to the newest table made on them, which alone may
    write after them (an older table keeps its own rows, a view that later writes do not reach)."""

    buffer: Any
    used: int
    lock: threading.Lock = field(default_factory=threading.Lock)

    def after(self, count: int, vectors: Any) -> _Room:
        """Rows for a table of `count` rows and `vectors` after them: written in place when that table is the newest
        and there is room, else into a buffer twice the size (so a run's alias costs its own row, amortised, not a
        copy of every vector: 46 ms a run at 50,000 aliases)."""
        import numpy as np

        end = count + len(vectors)
        with self.lock:
            if self.used == count and self.buffer.shape[0] >= end:
                self.buffer[count:end] = vectors
                self.used = end
                return self
        buffer = np.empty((max(64, 2 * end), vectors.shape[1]), dtype=np.float32)
        buffer[:count] = self.buffer[:count]
        buffer[count:end] = vectors
        return _Room(buffer, end)


@dataclass
class AliasTable:
    """A scope's aliases with a vector, in id order, as arrays: each one's procedure and owner by number."""

    rows: list[AliasRow]
    matrix: Any
    lengths: Any
    procedure: Any
    #: Each procedure's number, in the order its first alias came.
    procedures: dict[str, int]
    owner: Any
    owners: dict[str, int]
    exact_only: Any
    _room: _Room | None = None

    @classmethod
    def empty(cls) -> AliasTable:
        import numpy as np

        nothing = np.zeros(0, dtype=int)
        return cls([], None, np.zeros(0, dtype=np.float32), nothing, {}, nothing, {"": 0}, np.zeros(0, dtype=bool))

    def extended(self, views: list[AliasView]) -> AliasTable:
        """This table and `views` after it (aliases written later: higher ids); those without a vector are left out.
        A run adds an alias: the table grows by its row, not made again from every alias."""
        import numpy as np

        added = [(a, v) for a, _, v in views if v is not None]
        if not added:
            return self
        vectors = np.asarray([v for _, v in added], dtype=np.float32)
        procedures, owners = dict(self.procedures), dict(self.owners)
        count = len(self.rows)
        room = self._room
        if room is None:  # a table made whole (or empty): its own rows are the buffer, full
            made = self.matrix if self.matrix is not None else np.empty((0, vectors.shape[1]), dtype=np.float32)
            room = _Room(made, count)
        room = room.after(count, vectors)
        return AliasTable(
            rows=self.rows + [a for a, _ in added],
            matrix=room.buffer[: count + len(added)],
            lengths=np.concatenate([self.lengths, np.linalg.norm(vectors, axis=1)]),
            procedure=np.concatenate(
                [self.procedure, [procedures.setdefault(a.procedure_id, len(procedures)) for a, _ in added]]
            ).astype(int),
            procedures=procedures,
            owner=np.concatenate([self.owner, [owners.setdefault(a.owner, len(owners)) for a, _ in added]]).astype(int),
            owners=owners,
            exact_only=np.concatenate([self.exact_only, [a.exact_only for a, _ in added]]).astype(bool),
            _room=room,
        )

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
        names = list(self.procedures)
        return {
            names[groups[w]]: (float(scores[w]), self.rows[kept[w]].id)
            for w in winners[np.argsort(seen_at, kind="stable")]
        }
