"""A run is continued by one process at a time, whichever machine it is on.

Each claim is a session lock of the store's Database (see Database.try_session_lock): on a server, an advisory lock
the server drops when the holding connection ends, a killed process included; on one machine, a record lock the
kernel drops when the process ends. Both are re-entrant within their holder, so a process that resumes the same run
again (a team handling its next event) is not refused by itself.
"""

from __future__ import annotations

from ..db.database import Database
from ..errors import ClaimLost, StoreError

_RUN_LOCK_CLASS = 0x5348  # the lock space of run claims: the key within it is the run id


class RunClaims:
    def __init__(self, db: Database):
        self.db = db
        self.mine: set[str] = set()
        self.lost: set[str] = set()  # runs another process claimed while the connection was down
        self.db.on_reconnect(self._take_again)  # the claims died with a dropped connection: take them again

    def claim(self, run_id: str) -> None:
        """Hold `run_id` for this store until `release`; StoreError when another process holds it."""
        if run_id in self.mine:
            return
        if not self.db.try_session_lock(_RUN_LOCK_CLASS, run_id):
            raise StoreError(
                f"run {run_id} is being continued by another process (on this machine or another sharing the store); "
                "try again once it stops"
            )
        self.mine.add(run_id)

    def release(self, run_id: str) -> None:
        if run_id not in self.mine:
            return
        self.mine.discard(run_id)
        self.db.session_unlock(_RUN_LOCK_CLASS, run_id)

    def release_all(self) -> None:
        for run_id in list(self.mine):
            try:
                self.release(run_id)
            except Exception:  # a dropped connection released its locks with it
                self.mine.discard(run_id)

    def ensure(self, run_id: str) -> None:
        """Before a run's write: ClaimLost when another process claimed it while the connection was down (the run
        stops here; what was committed stays, and it resumes wherever it is claimed)."""
        if run_id in self.lost:
            self.lost.discard(run_id)
            raise ClaimLost(
                f"run {run_id} was claimed by another process while the connection to the database was down; "
                "it stops here, its committed steps kept, and resumes where it is claimed"
            )

    def _take_again(self) -> None:
        """On a fresh connection: every run this store held, unless another process claimed it in between. Nothing is
        raised here: the connection is shared by every store of its Database, and the write under way may be another
        store's; the run's own next write finds out (`ensure`)."""
        lost = {run_id for run_id in self.mine if not self.db.try_session_lock(_RUN_LOCK_CLASS, run_id)}
        self.mine.difference_update(lost)
        self.lost.update(lost)
