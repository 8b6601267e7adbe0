"""`Home`: one home's stores over one `Database`, each opened on first use (the CLI, view, bridge, heartbeat use it).

Every store takes a `Database`; `X(home=...)` opens one for that store alone; a `Home` opens one per home, lazily, and
gives it to each store it is asked for — so a command that never touches runs opens no run store (and no checkpointer).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

if TYPE_CHECKING:
    from .db.database import Database
    from .engine.runstore import RunStore
    from .memory import MemoryStore
    from .memory.domains import Domains
    from .sessions import SessionStore
    from .skills.api import SkillStore

S = TypeVar("S", bound="_Closeable")


class _Closeable(Protocol):
    def close(self) -> None: ...


class Home:
    """The home's stores (`home`, else SHERPA_SKILLS_HOME, else ~/.sherpa-skills; `database` a PostgreSQL URL, else the
    one in force): its `Database` is opened by the first store asked for, and `close()` closes what was opened. The
    stores are the Home's: close the Home, not them (each is opened once and handed to every caller)."""

    def __init__(self, home: str | Path | None = None, *, database: str | None = None) -> None:
        from .home import resolve_home

        self.home: Path = resolve_home(str(home) if home is not None else None)
        self._url = database
        self._database: Database | None = None
        # Opened stores in opening order; closed in reverse, the Database last.
        self._opened: dict[str, _Closeable] = {}
        self._closed = False
        # Re-entrant: the skill store's opening asks for `runs` lazily through this Home. Two threads asking for one
        # store at once get the same one (neither opens a second nobody closes).
        self._lock = threading.RLock()

    @property
    def database(self) -> Database:
        """The one `Database` every store of this home is given, opened on first use."""
        with self._lock:
            if self._closed:
                from .errors import StoreError

                # A store asked for after close would open a second Database nobody closes.
                raise StoreError(f"the stores of home '{self.home}' were closed; open a new Home to use them again")
            if self._database is None:
                from .db.database import Database

                self._database = Database.open(self.home, database=self._url)
            return self._database

    @property
    def opened(self) -> tuple[str, ...]:
        """The stores opened so far, by name (a test and a log line can say what a command touched)."""
        return tuple(self._opened)

    def _store(self, name: str, open_: Callable[[Database], S]) -> S:
        with self._lock:
            found = self._opened.get(name)
            if found is None:
                found = self._opened[name] = open_(self.database)
            return cast(S, found)  # each name is opened by one property, so its store is that property's type

    @property
    def runs(self) -> RunStore:
        from .engine.runstore import RunStore

        return self._store("runs", RunStore)

    @property
    def skills(self) -> SkillStore:
        """The skill store's face over this home's Database; its capture and replay runs go to `runs`."""
        from .skills.api import SkillStore

        return self._store("skills", lambda db: SkillStore.over(db, self.home, runs=lambda: self.runs))

    @property
    def memory(self) -> MemoryStore:
        from .memory import MemoryStore

        return self._store("memory", MemoryStore)

    @property
    def domains(self) -> Domains:
        from .memory.domains import Domains

        return self._store("domains", Domains)

    @property
    def sessions(self) -> SessionStore:
        from .sessions import SessionStore

        return self._store("sessions", SessionStore)

    def close(self) -> None:
        """Close the stores opened, newest first, then the Database; a Home closed twice closes nothing twice."""
        with self._lock:
            self._closed = True
            opened, self._opened = self._opened, {}
        try:
            for store in reversed(list(opened.values())):
                store.close()
        finally:
            database, self._database = self._database, None
            if database is not None:
                database.close()

    def __enter__(self) -> Home:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
