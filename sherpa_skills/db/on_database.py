"""What a store over a `Database` shows its callers: its connection, where its truth is, and which engine holds it."""

from __future__ import annotations

from pathlib import Path

from .connection import Connection, Dialect
from .database import Database


class OnDatabase:
    """A store's `.conn`, `.path`, `.where` and `.dialect`, read from the `Database` it was given (`self.db`): callers
    and tests read them; the store itself writes through `self.db.transaction`."""

    db: Database

    @property
    def conn(self) -> Connection:
        return self.db.conn

    @property
    def path(self) -> Path:
        return self.db.path

    @property
    def where(self) -> str:
        return self.db.where

    @property
    def dialect(self) -> Dialect:
        """The engine's name, for what reports it (`db` commands, tests); no code outside db/ branches on it."""
        return self.db._dialect
