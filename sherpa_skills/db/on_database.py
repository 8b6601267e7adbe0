"""What a store over a `Database` shows its callers (its connection, where its truth is, which engine holds it), and
the constructor shape every store shares: given a `Database`, or told where to open one for itself alone."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from .connection import Connection, Dialect
from .database import Database, given_or_opened
from .sqlite import Migration

S = TypeVar("S", bound="OnDatabase")


class OnDatabase:
    """A store's `.conn`, `.path`, `.where` and `.dialect`, read from the `Database` it was given (`self.db`): callers
    and tests read them; the store itself writes through `self.db.transaction`.

    A store whose opening is only its component's migrations names them (`component`, `migrations`) and takes this
    constructor; one with more to set up writes its own, with the same shape."""

    db: Database
    _owns_db: bool
    component: ClassVar[str] = ""
    migrations: ClassVar[Sequence[Migration]] = ()

    def __init__(
        self,
        db: Database | None = None,
        *,
        home: str | Path | None = None,
        path: str | Path | None = None,
        database: str | None = None,
    ) -> None:
        self.db, self._owns_db = given_or_opened(db, home=home, path=path, database=database)
        try:
            self.db.migrate(self.component, self.migrations)
        except BaseException:
            if self._owns_db:  # a schema refused: the connection it opened goes back
                self.db.close()
            raise

    def close(self) -> None:
        """Closes the Database only when the store opened it for itself (a given one is its opener's)."""
        if self._owns_db:
            self.db.close()

    def __enter__(self: S) -> S:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

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
