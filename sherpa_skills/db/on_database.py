"""What a store kept over a `Database` shows of it: which engine holds its rows, for the callers that ask."""

from __future__ import annotations

from .database import Database


class OnDatabase:
    """Mixed into a store with a `db`: `dialect` says 'sqlite' or 'postgresql' (tests and diagnostics read it; SQL
    differences are the Database's methods, never branches on this)."""

    db: Database

    @property
    def dialect(self) -> str:
        """'sqlite' or 'postgresql': which engine holds the store's rows."""
        return self.db._dialect
