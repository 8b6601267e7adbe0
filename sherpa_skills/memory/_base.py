"""What every part of the memory store shares: its database, and the companion position it follows."""

from __future__ import annotations

from ..db.database import Database
from ..db.on_database import OnDatabase
from ._position import CompanionPosition


class _MemoryStoreBase(OnDatabase):
    """The state `MemoryStore.__init__` sets up, as the parts of the store kept in other modules see it."""

    db: Database
    position: CompanionPosition | None
