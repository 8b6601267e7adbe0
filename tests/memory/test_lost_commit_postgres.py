"""A connection to PostgreSQL lost at a memory note's or a domain record's COMMIT: the write is stored exactly once,
whether the server committed before the answer was lost (not written again) or the connection dropped before COMMIT
(written again on the fresh connection)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _lossy import CommitAnswerLost, relayed

from sherpa_skills.memory import MemoryStore
from sherpa_skills.memory.domains import Domains

pytestmark = pytest.mark.postgres


@pytest.fixture
def lossy_url(postgres_url: str) -> Iterator[tuple[str, CommitAnswerLost]]:
    with relayed(postgres_url) as found:
        yield found


def _admin(url: str) -> Any:
    import psycopg

    return psycopg.connect(url, autocommit=True)


def _drop_once_on_insert(url: str, table: str) -> Any:
    """The server ends the writing connection in the middle of the first INSERT into `table` (before COMMIT), once:
    a sequence is not rolled back with the transaction, so the write sent again goes through."""
    admin = _admin(url)
    admin.execute("CREATE SEQUENCE fault_once")
    admin.execute(
        "CREATE FUNCTION fault() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "IF nextval('fault_once') = 1 THEN PERFORM pg_terminate_backend(pg_backend_pid()); "
        "PERFORM pg_sleep(5); END IF; RETURN NEW; END $$"
    )
    admin.execute(f"CREATE TRIGGER fault BEFORE INSERT ON {table} FOR EACH ROW EXECUTE FUNCTION fault()")
    return admin


def _fired(admin: Any) -> bool:
    return bool(admin.execute("SELECT last_value >= 1 AND is_called FROM fault_once").fetchone()[0])


def _notes(store: MemoryStore, text: str) -> int:
    return int(store.conn.execute("SELECT COUNT(*) FROM memory_artifacts WHERE text = ?", (text,)).fetchone()[0])


def _entries(domains: Domains, name: str) -> list[Any]:
    return [c["entry"] for c in domains.changelog(name) if c["kind"] == "note"]


def test_a_memory_note_whose_commit_answer_was_lost_is_stored_once(
    lossy_url: tuple[str, CommitAnswerLost], tmp_path: Path
) -> None:
    url, proxy = lossy_url
    store = MemoryStore(home=tmp_path / "home", database=url)
    try:
        proxy.armed.set()
        note = store.write("the deploy key rotates on mondays", agent="ops", scope="shared")
        assert proxy.cut.is_set(), "the fault did fire"
        assert _notes(store, "the deploy key rotates on mondays") == 1
        assert store.get(note.id, agent="ops").text == "the deploy key rotates on mondays"
    finally:
        store.close()


def test_a_memory_note_whose_connection_dropped_before_commit_is_written_once_by_the_retry(
    postgres_url: str, tmp_path: Path
) -> None:
    store = MemoryStore(home=tmp_path / "home", database=postgres_url)
    admin = _drop_once_on_insert(postgres_url, "memory_artifacts")
    try:
        note = store.write("the staging cluster drains at noon", agent="ops", scope="shared")
        assert _fired(admin), "the fault did fire"
        assert _notes(store, "the staging cluster drains at noon") == 1
        assert store.get(note.id, agent="ops").id == note.id
    finally:
        admin.close()
        store.close()


def test_a_domain_record_whose_commit_answer_was_lost_is_stored_once(
    lossy_url: tuple[str, CommitAnswerLost], tmp_path: Path
) -> None:
    url, proxy = lossy_url
    domains = Domains(home=tmp_path / "home", database=url)
    try:
        domains.claim("billing", "ops")
        proxy.armed.set()
        assert domains.append("billing", {"saw": "invoice run late"}, agent="ops") is True
        assert proxy.cut.is_set(), "the fault did fire"
        assert _entries(domains, "billing") == [{"saw": "invoice run late"}]
    finally:
        domains.close()


def test_a_domain_record_whose_connection_dropped_before_commit_is_written_once_by_the_retry(
    postgres_url: str, tmp_path: Path
) -> None:
    domains = Domains(home=tmp_path / "home", database=postgres_url)
    try:
        domains.claim("billing", "ops")
        admin = _drop_once_on_insert(postgres_url, "domain_changelog")
        try:
            assert domains.append("billing", {"saw": "invoice run late"}, agent="ops") is True
            assert _fired(admin), "the fault did fire"
        finally:
            admin.close()
        assert _entries(domains, "billing") == [{"saw": "invoice run late"}]
    finally:
        domains.close()


def test_imported_commands_whose_connection_dropped_before_commit_are_written_once_by_the_retry(
    postgres_url: str, tmp_path: Path
) -> None:
    from sherpa_skills.sessions._records import CommandRecord
    from sherpa_skills.sessions._store import FileRow, SessionStore

    store = SessionStore(home=tmp_path / "home", database=postgres_url)
    admin = _drop_once_on_insert(postgres_url, "session_commands")
    records = [
        CommandRecord(key=f"s1:{i}", session_id="s1", command=f"echo {i}", outcome="success", line=i) for i in range(3)
    ]
    try:
        row = FileRow(id=None, path="/logs/one.jsonl", format="codex")  # a new file: its row is made in the write
        assert store.commit(row, records, source="codex").commands == 3, "counted once, by the write that landed"
        assert _fired(admin), "the fault did fire"
        assert store.count_commands() == 3 and [c.seq for c in store.session_commands("s1")] == [1, 2, 3]
        stored = store.file_row("/logs/one.jsonl")
        assert stored is not None and (row.id, row.version) == (stored.id, stored.version) == (stored.id, 1)
    finally:
        admin.close()
        store.close()
