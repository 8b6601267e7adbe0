"""A connection the server ended while it sat idle is found out however libpq tells it: marked broken, or only an
error from the server (57P01) or a send refused with the connection left mid-command. Each way, the write goes again
on a fresh connection, and a ROLLBACK that cannot be sent never hides what went wrong."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sherpa_skills.db.database import Database

ROUNDS = 40  # how libpq learns of the drop varies from one round to the next (a race with the server's FATAL)


def _notes(admin) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(r[0] for r in admin.execute("SELECT text FROM notes").fetchall())


@pytest.fixture
def opened(postgres_url: str, tmp_path: Path) -> Iterator[tuple[Database, Any]]:
    """A Database on the test's PostgreSQL with an empty `notes` table, and an admin connection beside it."""
    import psycopg

    db = Database.open(tmp_path, database=postgres_url)
    admin = psycopg.connect(postgres_url, autocommit=True)
    try:
        db.transaction(lambda conn: conn.execute("CREATE TABLE notes (text TEXT PRIMARY KEY)"))
        yield db, admin
    finally:
        admin.close()
        db.close()


@pytest.mark.postgres
def test_each_write_after_the_backend_was_terminated_is_written_once_on_a_fresh_connection(
    opened: tuple[Database, Any],
) -> None:
    db, admin = opened
    for n in range(ROUNDS):
        pid = db.conn.raw.info.backend_pid  # type: ignore[attr-defined]
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        deadline = time.monotonic() + 10
        while admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone():
            assert time.monotonic() < deadline, "the terminated backend never ended"
            time.sleep(0.01)
        db.transaction(lambda conn, n=n: conn.execute("INSERT INTO notes (text) VALUES (?)", (f"n{n}",)))
    assert _notes(admin) == sorted(f"n{n}" for n in range(ROUNDS)), "each write landed once"


@pytest.mark.postgres
def test_a_connection_left_mid_command_is_swapped_and_the_write_goes_through(opened: tuple[Database, Any]) -> None:
    # What CI once met: libpq refused to send (a command still in progress) on a connection not marked broken; the
    # transaction's ROLLBACK then failed the same way and hid the first error.
    db, admin = opened
    stuck = db.conn.raw  # type: ignore[attr-defined]
    stuck.pgconn.send_query(b"SELECT pg_sleep(30)")  # sent, its answer never read: libpq is mid-command
    assert not stuck.broken
    db.transaction(lambda conn: conn.execute("INSERT INTO notes (text) VALUES ('once')"), what="a note")
    assert _notes(admin) == ["once"]
    assert db.conn.raw is not stuck and stuck.closed, "the stuck connection is closed, not handed back to the pool"

    def fails(conn) -> None:  # type: ignore[no-untyped-def]
        conn.execute("INSERT INTO notes (text) VALUES ('undone')")
        db.conn.raw.pgconn.send_query(b"SELECT pg_sleep(30)")  # type: ignore[attr-defined]
        raise RuntimeError("the caller's own error")

    with pytest.raises(RuntimeError, match="the caller's own error"):
        db.transaction(fails)  # its ROLLBACK cannot be sent: the error the caller raised is still the one seen
    db.transaction(lambda conn: conn.execute("INSERT INTO notes (text) VALUES ('after')"))
    assert _notes(admin) == ["after", "once"]


@pytest.mark.postgres
def test_an_error_inside_a_batch_is_the_callers_and_keeps_the_connection(opened: tuple[Database, Any]) -> None:
    # A batch's statements are queued (libpq busy by design): an error there is the statement's, not a lost connection.
    import psycopg

    db, admin = opened
    raw = db.conn.raw  # type: ignore[attr-defined]

    def twice(conn) -> None:  # type: ignore[no-untyped-def]
        conn.execute("INSERT INTO notes (text) VALUES (?)", ("same",))
        conn.execute("INSERT INTO notes (text) VALUES (?)", ("same",))
        for n in range(2000):  # enough that answers come back, the error among them, while more are queued
            conn.execute("INSERT INTO notes (text) VALUES (?)", (f"n{n}",))

    with pytest.raises(psycopg.IntegrityError):
        db.transaction(twice, batch=True)
    assert db.conn.raw is raw, "the connection was kept: nothing was lost"  # type: ignore[attr-defined]
    assert _notes(admin) == [], "the batch was rolled back whole"
    db.transaction(lambda conn: conn.execute("INSERT INTO notes (text) VALUES ('after')"), batch=True)
    assert _notes(admin) == ["after"]


@pytest.mark.postgres
def test_a_statement_timeout_in_a_batch_or_not_is_not_a_lost_connection(opened: tuple[Database, Any]) -> None:
    # psycopg's OperationalError covers a cancelled statement too (57014); in a batch libpq is busy by design, so
    # neither that nor the PipelineAborted of the statements queued after it may pass for a dropped connection.
    import psycopg

    db, admin = opened
    raw = db.conn.raw  # type: ignore[attr-defined]

    def slow(conn) -> None:  # type: ignore[no-untyped-def]
        conn.execute("SET LOCAL statement_timeout = 50")
        conn.execute("SELECT pg_sleep(5)")
        for n in range(2000):
            conn.execute("INSERT INTO notes (text) VALUES (?)", (f"n{n}",))

    for batch in (True, False):
        with pytest.raises(psycopg.errors.QueryCanceled):
            db.transaction(slow, batch=batch)
        assert db.conn.raw is raw, "the connection was kept: nothing was lost"  # type: ignore[attr-defined]
    assert _notes(admin) == []
    db.transaction(lambda conn: conn.execute("INSERT INTO notes (text) VALUES ('after')"))
    assert _notes(admin) == ["after"]
