"""What every part of the run store shares: its database, connection, lock, and where it is."""

from __future__ import annotations

import threading

from ..db.database import Database
from ..db.on_database import OnDatabase


class _RunStoreBase(OnDatabase):
    """The state `RunStore.__init__` sets up, as the parts of the store kept in other modules see it."""

    db: Database
    _lock: threading.RLock
    _kept_specs: set[str]
