"""What every part of the memory store shares: its database, and the companion position it follows."""

from __future__ import annotations

from pathlib import Path

from ..db.connection import Connection
from ..db.database import Database
from ._position import CompanionPosition


class _MemoryStoreBase:
    """The state `MemoryStore.__init__` sets up, as the parts of the store kept in other modules see it."""

    db: Database
    position: CompanionPosition | None

    @property
    def conn(self) -> Connection:
        return self.db.conn

    @property
    def path(self) -> Path:
        return self.db.path

    @property
    def where(self) -> str:
        return self.db.where
