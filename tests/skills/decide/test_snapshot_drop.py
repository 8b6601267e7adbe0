"""Dropping a workflow's decision snapshot is a write like every other, on both engines: through the Database's
transaction, so it waits for another thread's write on the shared connection instead of slipping into it (and being
rolled back with it after it said done), joins a transaction its caller holds, and is written again after a dropped
connection."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _engines import Engine

from sherpa_skills.db.database import Database
from sherpa_skills.skills.decide import snapshot
from sherpa_skills.skills.store.database import ProcedureDatabase


@pytest.fixture
def engine(engine_url: str | None, tmp_path: Path) -> Iterator[Engine]:
    found = Engine("postgresql" if engine_url else "sqlite", tmp_path, engine_url)
    yield found
    found.close()


def _keep(store: ProcedureDatabase, workflow: str) -> None:
    store.db.transaction(lambda conn: _insert(conn, workflow))


def _insert(conn: Any, workflow: str) -> None:
    conn.execute(
        "INSERT INTO decision_snapshots (workflow, stamp, upto, errors_upto, examples, body, created)"
        " VALUES (?, 'stamp', 0, 0, 0, ?, 0)",
        (workflow, b"body"),
    )


def kept(store: ProcedureDatabase, workflow: str) -> int:
    row = store.conn.execute("SELECT COUNT(*) FROM decision_snapshots WHERE workflow = ?", (workflow,)).fetchone()
    return int(row[0])


def test_a_drop_waits_for_another_threads_write_and_lands_though_that_write_fails(engine: Engine) -> None:
    store, reader = engine.procedures(), engine.procedures()  # the reader: another connection, as another process's
    _keep(store, "w")
    inside, go_on, dropped = threading.Event(), threading.Event(), threading.Event()
    failed: list[BaseException] = []

    def failing(conn: Any) -> None:
        _insert(conn, "other")
        inside.set()
        go_on.wait(5)
        raise RuntimeError("the other write fails")

    def writer() -> None:
        with pytest.raises(RuntimeError):
            store.db.transaction(failing)

    def dropper() -> None:
        try:
            snapshot.drop(store, "w")
            dropped.set()
        except BaseException as exc:
            failed.append(exc)

    first = threading.Thread(target=writer)
    first.start()
    assert inside.wait(5)
    second = threading.Thread(target=dropper)
    second.start()
    second.join(0.5)  # it waits for the write under way (with the fix) or slips into it now (without)
    returned_meanwhile, seen_meanwhile = dropped.is_set(), kept(reader, "w")
    go_on.set()
    first.join(10)
    second.join(10)
    assert failed == [] and dropped.is_set()
    assert not (returned_meanwhile and seen_meanwhile), "drop said done while its DELETE sat in another thread's write"
    assert kept(reader, "w") == 0, "the drop landed, though the write it met was rolled back"
    assert kept(reader, "other") == 0 and kept(store, "w") == 0


def test_a_drop_joins_its_callers_transaction_and_goes_back_with_it(engine: Engine) -> None:
    store, reader = engine.procedures(), engine.procedures()
    _keep(store, "w")

    def failing(conn: Any) -> None:
        snapshot.drop(store, "w")
        assert kept(store, "w") == 0, "the drop is part of this transaction"
        assert kept(reader, "w") == 1, "not committed on its own"
        raise RuntimeError("the surrounding write fails")

    with pytest.raises(RuntimeError):
        store.db.transaction(failing)
    assert kept(reader, "w") == 1 and kept(store, "w") == 1
    store.db.transaction(lambda conn: snapshot.drop(store, "w"))
    assert kept(reader, "w") == 0


@pytest.mark.postgres
def test_a_drop_whose_connection_dropped_mid_statement_is_written_again(postgres_url: str, tmp_path: Path) -> None:
    from _lossy import relayed

    with relayed(postgres_url) as (url, relay):
        store = ProcedureDatabase(Database.open(tmp_path, database=url))
        try:
            _keep(store, "w")
            relay.statement, relay.lands = b"DELETE FROM decision_snapshots", False
            relay.armed.set()
            snapshot.drop(store, "w")  # the DELETE never reached the server: sent again on the fresh connection
            assert relay.cut.is_set(), "the fault did fire"
            assert kept(store, "w") == 0
        finally:
            store.close()
            store.db.close()
