"""One backing store (SQLite in the home, or a PostgreSQL database) opened as the contract suites need it: each call
opens a new store, as another process's would be, and another home is another machine sharing the database."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sherpa_skills.engine.runstore import RunStore
from sherpa_skills.memory import MemoryStore, SharedMemory
from sherpa_skills.memory.domains import Domains
from sherpa_skills.sessions._store import SessionStore
from sherpa_skills.skills.store.database import ProcedureDatabase


class Engine:
    def __init__(self, name: str, root: Path, url: str | None):
        self.name, self.root, self.url = name, root, url
        self.opened: list[Any] = []

    def home(self, name: str = "a") -> Path:
        return self.root / name

    def _kept(self, store: Any) -> Any:
        self.opened.append(store)
        return store

    def runs(self, home: str = "a") -> RunStore:
        return self._kept(RunStore(home=self.home(home), database=self.url))

    def procedures(self, home: str = "a") -> ProcedureDatabase:
        return self._kept(ProcedureDatabase(home=self.home(home), database=self.url))

    def memory_store(self, home: str = "a") -> MemoryStore:
        return self._kept(MemoryStore(home=self.home(home), database=self.url))

    def memory(self, home: str = "a") -> SharedMemory:
        return self._kept(SharedMemory(store=MemoryStore(home=self.home(home), database=self.url)))

    def domains(self, home: str = "a") -> Domains:
        return self._kept(Domains(home=self.home(home), database=self.url))

    def sessions(self, home: str = "a") -> SessionStore:
        return self._kept(SessionStore(home=self.home(home), database=self.url))

    def env(self) -> dict[str, str]:
        """The environment a CLI process needs to use the same store."""
        env = {k: v for k, v in os.environ.items() if k != "SHERPA_SKILLS_DATABASE"}
        if self.url:
            env["SHERPA_SKILLS_DATABASE"] = self.url
        return env

    def close(self) -> None:
        for opened in reversed(self.opened):
            opened.close()
