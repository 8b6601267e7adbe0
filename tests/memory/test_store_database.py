"""Memory, domains and sessions on one `Database`: stores given it share its connection and leave it open (whoever
opened it closes it); a store given both a Database and a place to open one is refused; a store that opened its own
closes it; `MemoryStore.reopen` is a second connection of its own. On SQLite, and with -m postgres on PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from sherpa_skills.db.database import Database
from sherpa_skills.errors import UsageError
from sherpa_skills.memory import MemoryStore
from sherpa_skills.memory.domains import Domains
from sherpa_skills.sessions._store import SessionStore

STORES = [MemoryStore, Domains, SessionStore]


def test_stores_given_one_database_share_it_and_leave_it_open(engine_url: str | None, tmp_path: Path) -> None:
    db = Database.open(tmp_path, database=engine_url)
    try:
        memory, domains, sessions = MemoryStore(db), Domains(db), SessionStore(db)
        assert memory.conn is domains.conn is sessions.conn is db.conn
        assert memory.path == domains.path == sessions.path == tmp_path / "store.db"
        memory.write("the nightly backup runs at two", agent="ops", scope="shared")
        domains.claim("backups", "ops")
        for store in (memory, domains, sessions):
            store.close()
        assert db.conn.execute("SELECT COUNT(*) FROM memory_artifacts").fetchone()[0] == 1
        assert db.conn.execute("SELECT agent FROM domains WHERE name = 'backups'").fetchone()[0] == "ops"
        assert db.conn.execute("SELECT COUNT(*) FROM session_files").fetchone()[0] == 0
    finally:
        db.close()


@pytest.mark.parametrize("store", STORES, ids=lambda s: s.__name__)
@pytest.mark.parametrize("place", ["home", "path", "database"])
def test_a_store_given_a_database_and_a_place_to_open_one_is_refused(
    store: type, place: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SHERPA_SKILLS_DATABASE", raising=False)
    db = Database.open(tmp_path)
    try:
        with pytest.raises(UsageError, match="either a Database or where to open one"):
            store(db, **{place: str(tmp_path / "other")})
    finally:
        db.close()
    assert not (tmp_path / "other").exists(), "nothing opened for the refused store"


@pytest.mark.parametrize("store", STORES, ids=lambda s: s.__name__)
def test_a_store_that_opened_its_database_closes_it(
    store: type, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    monkeypatch.delenv("SHERPA_SKILLS_DATABASE", raising=False)
    opened = store(home=tmp_path)
    opened.close()
    with pytest.raises(sqlite3.ProgrammingError):
        opened.conn.execute("SELECT 1")


def test_a_reopened_memory_store_has_its_own_connection_to_the_same_truth(
    engine_url: str | None, tmp_path: Path
) -> None:
    db = Database.open(tmp_path, database=engine_url)
    store = MemoryStore(db)
    try:
        note = store.write("rotate the api token monthly", agent="ops", scope="shared")
        other = store.reopen()
        assert other.conn is not store.conn and other.store_id == store.store_id
        assert other.get(note.id, agent="ops").text == note.text
        other.write("the token lives in the vault", agent="ops", scope="shared")
        other.close()  # its own connection: the original's stays open
        assert store.count() == 2
    finally:
        store.close()
        db.close()
