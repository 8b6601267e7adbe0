"""One backing store (SQLite in the home, or a PostgreSQL database) opened as the contract suites need it: each call a
new store over a `Database` of its own, as another process's would be (so "read back from another connection" means
one), and another home is another machine sharing the database."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sherpa_skills.db.database import Database
from sherpa_skills.engine.runstore import RunStore
from sherpa_skills.memory import MemoryStore, SharedMemory
from sherpa_skills.memory.domains import Domains
from sherpa_skills.sessions._store import SessionStore
from sherpa_skills.skills.store.database import ProcedureDatabase


class Engine:
    def __init__(self, name: str, root: Path, url: str | None):
        self.name, self.root, self.url = name, root, url
        self.opened: list[Any] = []
        self.databases: list[Database] = []

    def home(self, name: str = "a") -> Path:
        return self.root / name

    def database(self, home: str = "a") -> Database:
        """A new Database on the home's truth (a connection of its own), closed after the stores given it."""
        self.databases.append(Database.open(home=self.home(home), database=self.url))
        return self.databases[-1]

    def _kept(self, store: Any) -> Any:
        self.opened.append(store)
        return store

    def runs(self, home: str = "a") -> RunStore:
        return self._kept(RunStore(self.database(home)))

    def procedures(self, home: str = "a") -> ProcedureDatabase:
        return self._kept(ProcedureDatabase(self.database(home)))

    def memory_store(self, home: str = "a") -> MemoryStore:
        return self._kept(MemoryStore(self.database(home)))

    def memory(self, home: str = "a") -> SharedMemory:
        return self._kept(SharedMemory(store=MemoryStore(self.database(home))))

    def domains(self, home: str = "a") -> Domains:
        return self._kept(Domains(self.database(home)))

    def sessions(self, home: str = "a") -> SessionStore:
        return self._kept(SessionStore(self.database(home)))

    def env(self) -> dict[str, str]:
        """The environment a CLI process needs to use the same store."""
        env = {k: v for k, v in os.environ.items() if k != "SHERPA_SKILLS_DATABASE"}
        if self.url:
            env["SHERPA_SKILLS_DATABASE"] = self.url
        return env

    def close(self) -> None:
        for opened in reversed(self.opened):
            opened.close()
        for database in reversed(self.databases):  # after the stores over them
            database.close()
