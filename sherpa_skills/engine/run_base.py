"""What every part of the run store shares: its connection, its lock, and where it is."""

from __future__ import annotations

import threading
from pathlib import Path

from ..db.connection import Connection


class _RunStoreBase:
    """The state `RunStore.__init__` sets up, as the parts of the store kept in other modules see it."""

    path: Path
    where: str
    conn: Connection
    dialect: str
    _url: str | None
    _lock: threading.Lock
    _like: str
    _kept_specs: set[str]
