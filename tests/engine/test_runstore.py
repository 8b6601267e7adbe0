"""The run store keeps what a run recorded, minus its secrets."""

from __future__ import annotations

from pathlib import Path

import pytest

from sherpa_skills.engine.belief import LogEntry, TrajectoryEntry
from sherpa_skills.engine.runstore import RunStore, TickRecord

SECRET = "sk-live-0123456789abcdefghijklmnopqrstuv"
TOKEN = "ghp_" + "a1B2" * 9  # redacted by its shape, whatever key it is under


def test_context_values_under_secret_names_are_redacted(run_store: RunStore) -> None:
    """A context key named like a secret (api_key) is stored redacted, as the same value is in the run's inputs."""
    store = run_store
    record = TickRecord(
        trajectory=[TrajectoryEntry(tick=0, state="a", at=0.0)], context=[("api_key", SECRET), ("name", "Ada")]
    )
    store.create_run("r1", "w", None, None, {"api_key": SECRET}, "a", {}, record)
    context = store.load_belief("r1").context
    assert context["api_key"] != SECRET and context["name"] == "Ada"
    assert store.get_run("r1").inputs["api_key"] != SECRET


def test_a_context_key_that_holds_a_secret_is_stored_redacted_not_a_crash(tmp_path: Path) -> None:
    """A key is redacted like any text (it may hold `password=...`); its value is redacted as under that key. Before,
    the value was looked up under the unredacted key in the redacted mapping: a KeyError out of the commit."""
    key = "password=" + SECRET
    store = RunStore(home=tmp_path)
    record = TickRecord(trajectory=[TrajectoryEntry(tick=0, state="a", at=0.0)], context=[(key, SECRET), ("n", 1)])
    store.create_run("r1", "w", None, None, {}, "a", {"steps": 0, "note": TOKEN}, record)
    store.commit_tick(
        "r1", TickRecord(context=[(key, 2)]), status="running", state="a", tick=1, counters={"steps": 1, "note": TOKEN}
    )
    rows = store.conn.execute("SELECT key, value FROM run_context WHERE run_id = 'r1'").fetchall()
    assert SECRET not in repr(rows) and ("n", "1") in rows and len(rows) == 3
    # Counters are numbers, so their redaction is skipped; anything else in them still takes it.
    assert TOKEN not in repr(store.conn.execute("SELECT counters FROM runs").fetchall())
    assert store.get_run("r1").counters["steps"] == 1
    store.close()


def test_tail_of_a_long_belief(run_store: RunStore) -> None:
    """load_belief(tail=N) holds the last N trajectory and log entries in order and the whole context; the path and
    sizes stay whole."""
    store = run_store
    store.create_run(
        "r", "w", None, None, {}, "s0", {}, TickRecord(trajectory=[TrajectoryEntry(tick=0, state="s0", at=0.0)])
    )
    for tick in range(1, 30):
        store.commit_tick(
            "r",
            TickRecord(
                trajectory=[TrajectoryEntry(tick=tick, state=f"s{tick}", at=tick)],
                log=[LogEntry(tick=tick, action="a", started=tick)],
                context=[(f"k{tick}", tick)],
            ),
            status="running",
            state=f"s{tick}",
            tick=tick,
            counters={},
        )
    tail = store.load_belief("r", tail=5)
    assert [t.state for t in tail.trajectory] == ["s25", "s26", "s27", "s28", "s29"]
    assert [e.tick for e in tail.log] == [25, 26, 27, 28, 29]
    assert len(tail.context) == 29 and store.load_belief("r", tail=0).trajectory == []
    assert store.load_belief("r") == store.load_belief("r", tail=1000)
    assert store.visited_states("r") == [f"s{i}" for i in range(30)] and store.log_size("r") == 29


def test_a_store_finalised_while_another_store_opens_does_not_deadlock(tmp_path: Path) -> None:
    """The collector may finalise a forgotten store inside `Checkpointer.acquire` (which holds the guard), on that very
    thread: its release must not wait for the guard; it is made by the next acquire instead."""
    import threading

    from sherpa_skills.db.sqlite import Checkpointer

    forgotten = RunStore(path=tmp_path / "forgotten.db")
    key = str((tmp_path / "forgotten.db").resolve())

    def collector_inside_acquire() -> None:
        with Checkpointer._guard:
            forgotten.__del__()

    thread = threading.Thread(target=collector_inside_acquire, daemon=True)
    thread.start()
    thread.join(timeout=10)
    assert not thread.is_alive(), "the finaliser waited for the guard its own thread holds"
    RunStore(path=tmp_path / "next.db").close()  # the next acquire makes the release the finaliser could not
    assert key not in Checkpointer._shared


def test_an_action_a_crash_cut_short_is_not_named_like_the_stop_signal(run_store: RunStore) -> None:
    """`Interrupted` is the stop signal (sherpa_skills.errors, a KeyboardInterrupt); what `interrupted()` returns is
    an action started but never committed: an InterruptedAction. One name, one meaning."""
    from sherpa_skills.engine import runstore
    from sherpa_skills.engine.runstore import InterruptedAction
    from sherpa_skills.errors import Interrupted

    assert not hasattr(runstore, "Interrupted")
    store = run_store
    store.create_run("r1", "w", None, None, {}, "a", {}, TickRecord())
    store.mark_started("r1", 1, 0, "shell")
    [cut_short] = store.interrupted("r1")
    assert isinstance(cut_short, InterruptedAction) and not isinstance(cut_short, Interrupted)
    assert (cut_short.tick, cut_short.seq, cut_short.action) == (1, 0, "shell")


def test_a_store_opens_on_its_database_or_a_path_given_once(tmp_path: Path) -> None:
    """`RunStore(db)` keeps what it was given open; `RunStore(path)` (positional, as before the Database) is that
    SQLite file; a path given twice, or a Database and a place, is refused."""
    from sherpa_skills.db.database import Database
    from sherpa_skills.errors import UsageError

    db = Database.open(path=tmp_path / "shared.db")
    RunStore(db).close()
    assert db.conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0  # still open: its opener closes it
    with pytest.raises(UsageError, match="not both"):
        RunStore(db, home=tmp_path)
    db.close()
    positional = RunStore(str(tmp_path / "old.db"))
    assert positional.path == tmp_path / "old.db" and (tmp_path / "old.db").is_file()
    positional.close()
    with pytest.raises(UsageError, match="once"):
        RunStore(tmp_path / "a.db", path=tmp_path / "b.db")
