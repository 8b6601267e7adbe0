"""One `Database` shared by a home's stores (a `Home`): what one store's connection loss means is told to that store
only, and two threads asking a Home for one store get the same one."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest

from sherpa_skills.db.database import Database
from sherpa_skills.engine.runstore import RunStore
from sherpa_skills.errors import ClaimLost
from sherpa_skills.memory import MemoryStore
from sherpa_skills.stores import Home


@pytest.mark.postgres
def test_a_run_claim_lost_with_the_connection_fails_the_run_s_next_write_not_another_store_s(
    postgres_url: str, tmp_path: Path
) -> None:
    import psycopg

    db = Database.open(tmp_path / "a", database=postgres_url)
    runs, notes = RunStore(db), MemoryStore(db)
    other = RunStore(home=tmp_path / "b", database=postgres_url)
    admin = psycopg.connect(postgres_url, autocommit=True)
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    try:
        runs.claims.claim(run_id)
        pid = db.conn.raw.info.backend_pid  # type: ignore[attr-defined]
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        deadline = time.monotonic() + 10  # the backend ends (and its locks go) a moment after it is told to
        while admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone():
            assert time.monotonic() < deadline, "the terminated backend never ended"
            time.sleep(0.05)
        other.claims.claim(run_id)  # the dropped connection's lock is gone: another process takes the run

        note = notes.write("the other store's write goes through", agent="ops", scope="shared")
        assert notes.get(note.id, agent="ops").id == note.id
        with pytest.raises(ClaimLost, match=run_id):
            runs.claims.ensure(run_id)  # the run's own next write stops it
        assert run_id not in runs.claims.mine
    finally:
        admin.close()
        other.close()
        notes.close()
        runs.close()
        db.close()


def test_threads_asking_a_home_for_one_store_at_once_get_the_same_one(tmp_path: Path) -> None:
    house = Home(tmp_path)
    start = threading.Barrier(8)
    got: list[object] = []

    def ask() -> None:
        start.wait()
        got.append(house.memory)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert len(got) == 8 and all(store is got[0] for store in got)
        assert house.opened == ("memory",)
    finally:
        house.close()
