"""What every part of the memory store shares: its connection, its lock, and a transaction over them."""

from __future__ import annotations

import threading
from pathlib import Path

from ..db.connection import Connection
from ..db.sqlite import Transaction
from ._position import CompanionPosition


class _MemoryStoreBase:
    """The state `MemoryStore.__init__` sets up, as the parts of the store kept in other modules see it."""

    conn: Connection
    path: Path
    dialect: str
    position: CompanionPosition | None
    _lock: threading.RLock

    def _tx(self) -> Transaction:
        return Transaction(self.conn, self._lock)
