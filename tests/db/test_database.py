"""The one transaction helper: a value back, nested writes joined, an error rolled back, and on PostgreSQL a write
whose connection dropped is committed exactly once — written again when it did not land, not when it did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sherpa_skills.db.database import Database, given_or_opened
from sherpa_skills.errors import UsageError


def _table(db: Database) -> None:
    db.transaction(lambda conn: conn.execute("CREATE TABLE IF NOT EXISTS notes (text TEXT)"))


def _count(db: Database) -> int:
    return int(db.conn.execute("SELECT count(*) FROM notes").fetchone()[0])


def test_a_transaction_returns_its_value_joins_nested_writes_and_rolls_back_on_error(tmp_path: Path) -> None:
    db = Database.open(tmp_path)
    try:
        _table(db)

        def outer(conn: Any) -> int:
            conn.execute("INSERT INTO notes (text) VALUES ('a')")
            return db.transaction(lambda inner: inner.execute("INSERT INTO notes (text) VALUES ('b')").rowcount) + 1

        assert db.transaction(outer) == 2 and _count(db) == 2

        def failing(conn: Any) -> None:
            conn.execute("INSERT INTO notes (text) VALUES ('c')")
            db.transaction(lambda inner: inner.execute("INSERT INTO notes (text) VALUES ('d')"))
            raise RuntimeError("no")

        with pytest.raises(RuntimeError):
            db.transaction(failing)
        assert _count(db) == 2, "the outer error undid the nested write too"
        assert not db.conn.in_transaction
    finally:
        db.close()


def test_a_store_is_given_a_database_or_where_to_open_one_never_both(tmp_path: Path) -> None:
    db = Database.open(tmp_path)
    try:
        assert given_or_opened(db, home=None, path=None, database=None) == (db, False)
        with pytest.raises(UsageError, match="not both"):
            given_or_opened(db, home=tmp_path, path=None, database=None)
        opened, owned = given_or_opened(None, home=tmp_path, path=None, database=None)
        assert owned and opened is not db and opened.path == db.path
        opened.close()
    finally:
        db.close()


def test_checkpoints_in_background_are_counted_and_handed_back(tmp_path: Path) -> None:
    db = Database.open(tmp_path)
    try:
        db.checkpoint_in_background()
        db.checkpoint_in_background()
        assert db.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        db.stop_checkpoints()
        assert db.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0, "one user is left"
        db.stop_checkpoints()
        assert db.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
    finally:
        db.close()


@pytest.mark.postgres
def test_a_commit_whose_answer_was_lost_is_not_written_twice(postgres_url: str, tmp_path: Path) -> None:
    from _lossy import relayed

    with relayed(postgres_url) as (url, relay):
        db = Database.open(tmp_path, database=url)
        try:
            db.transaction(lambda conn: conn.execute("DROP TABLE IF EXISTS notes"))
            _table(db)
            relay.armed.set()
            db.transaction(lambda conn: conn.execute("INSERT INTO notes (text) VALUES ('once')"), what="a note")
            assert relay.cut.is_set(), "the fault did fire"
            assert _count(db) == 1
        finally:
            db.close()


@pytest.mark.postgres
def test_a_connection_dropped_before_commit_is_written_again_once(postgres_url: str, tmp_path: Path) -> None:
    import psycopg

    db = Database.open(tmp_path, database=postgres_url)
    admin = psycopg.connect(postgres_url, autocommit=True)
    try:
        db.transaction(lambda conn: conn.execute("DROP TABLE IF EXISTS notes"))
        _table(db)
        admin.execute("DROP SEQUENCE IF EXISTS notes_fault")
        admin.execute("CREATE SEQUENCE notes_fault")
        # The server ends the connection in the middle of the write, once (a sequence is not rolled back).
        admin.execute(
            "CREATE OR REPLACE FUNCTION notes_fault() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "IF nextval('notes_fault') = 1 THEN PERFORM pg_terminate_backend(pg_backend_pid()); "
            "PERFORM pg_sleep(5); END IF; RETURN NEW; END $$"
        )
        admin.execute("CREATE TRIGGER notes_fault BEFORE INSERT ON notes FOR EACH ROW EXECUTE FUNCTION notes_fault()")
        db.transaction(lambda conn: conn.execute("INSERT INTO notes (text) VALUES ('once')"), what="a note")
        assert admin.execute("SELECT last_value FROM notes_fault").fetchone()[0] >= 1, "the fault did fire"
        assert _count(db) == 1
    finally:
        admin.close()
        db.close()


def test_a_store_opened_on_another_thread_waits_for_a_write_under_way(tmp_path: Path) -> None:
    # One Database, one connection: a component migrated from a second thread mid-write must neither begin inside
    # that write's transaction nor roll it back (a Home's stores are opened on first use, from any thread).
    import threading

    from sherpa_skills.agents.task_store import TaskStore

    db = Database.open(path=tmp_path / "store.db")
    db.transaction(lambda conn: conn.execute("CREATE TABLE t (x INTEGER)"))
    inside, go_on = threading.Event(), threading.Event()

    def write(conn: Any) -> None:
        conn.execute("INSERT INTO t VALUES (1)")
        inside.set()
        go_on.wait(5)
        conn.execute("INSERT INTO t VALUES (2)")

    failed: list[BaseException] = []

    def writer() -> None:
        try:
            db.transaction(write)
        except BaseException as exc:
            failed.append(exc)

    def opener() -> None:
        try:
            TaskStore(db)
        except BaseException as exc:
            failed.append(exc)

    first = threading.Thread(target=writer)
    first.start()
    assert inside.wait(5)
    second = threading.Thread(target=opener)
    second.start()
    second.join(0.5)  # it waits for the write (with the fix) or meddles with it now (without)
    go_on.set()
    first.join(10)
    second.join(10)
    try:
        assert failed == []
        assert [r[0] for r in db.conn.execute("SELECT x FROM t ORDER BY x")] == [1, 2]
        assert db.conn.execute("SELECT 1 FROM _migrations WHERE component = 'teams'").fetchone() is not None
    finally:
        db.close()


@pytest.mark.postgres
def test_once_more_sent_twice_counts_the_second_sending_and_its_callers_do_not_branch_on_that(
    postgres_url: str, tmp_path: Path
) -> None:
    # What once_more's docstring promises after a landed first sending whose answer was lost: a DELETE counts 0
    # (callers that branch on the count use a transaction instead), an UPDATE whose WHERE still matches counts again.
    from _lossy import relayed

    from sherpa_skills.engine.runstore import RunStore, TickRecord

    with relayed(postgres_url) as (url, relay):
        db = Database.open(tmp_path, database=url)
        try:
            _table(db)
            db.transaction(lambda conn: conn.execute("INSERT INTO notes (text) VALUES ('gone')"))
            relay.statement = b"DELETE FROM notes"
            relay.armed.set()
            assert db.once_more(lambda conn: conn.execute("DELETE FROM notes").rowcount) == 0
            assert relay.cut.is_set() and _count(db) == 0, "the first sending landed"

            runs = RunStore(db)
            runs.create_run("r1", "w", None, None, {}, "s0", {}, TickRecord())
            relay.cut.clear()
            relay.statement = b"UPDATE runs SET status = 'interrupted'"
            relay.armed.set()
            assert runs.mark_interrupted("r1") is True
            assert relay.cut.is_set() and runs.get_run("r1").status == "interrupted"
        finally:
            db.close()
