"""Team tasks, the agents layer's own stored component: a fresh store gets the table, a store the runs migrated keeps
its own, and `db copy` moves it either way."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sherpa_skills.agents.task_store import TaskStore
from sherpa_skills.cli.db import store_components
from sherpa_skills.db.copy import copy_store
from sherpa_skills.db.database import Database
from sherpa_skills.engine.runstore import RunStore


def _components(db: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {r[0] for r in conn.execute("SELECT DISTINCT component FROM _migrations")}


def test_a_fresh_store_gets_the_table_as_the_teams_component_and_the_run_store_no_longer_makes_it(
    tmp_path: Path,
) -> None:
    RunStore(home=tmp_path).close()
    with sqlite3.connect(tmp_path / "store.db") as conn:
        assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'team_tasks'").fetchone() is None
    tasks = TaskStore(home=tmp_path)
    tasks.record_team_task("c1", "crew", {"task": "t", "api_key": "sk-live-0123456789abcdefghijklmnopqrstuv"})
    tasks.record_team_task("c1", "other", {"task": "u"})  # the first record of a task stays
    assert tasks.team_tasks(["c1", "c2"]) == {"c1": {"task": "t", "api_key": "[REDACTED]"}}
    tasks.close()
    assert _components(tmp_path / "store.db") >= {"runs", "teams"}


def _as_migrated_before(home: Path) -> None:
    """The store as the runs' migration left it before teams had a component: the table, no 'teams' record."""
    with sqlite3.connect(home / "store.db") as conn:
        conn.execute("DELETE FROM _migrations WHERE component = 'teams'")


def test_a_store_the_runs_migrated_keeps_its_team_tasks(tmp_path: Path) -> None:
    db = Database.open(tmp_path)
    RunStore(db).close()
    TaskStore(db).record_team_task("c1", "crew", {"task": "t"})
    db.close()
    _as_migrated_before(tmp_path)
    tasks = TaskStore(home=tmp_path)  # its migration meets the table already there
    assert tasks.team_tasks(["c1"]) == {"c1": {"task": "t"}}
    tasks.close()
    assert "teams" in _components(tmp_path / "store.db")


def test_db_copy_moves_team_tasks_after_the_runs_even_from_a_store_migrated_before(tmp_path: Path) -> None:
    home, copy = tmp_path / "home", tmp_path / "copy"
    db = Database.open(home)
    RunStore(db).close()
    TaskStore(db).record_team_task("c1", "crew", {"task": "t"})
    db.close()
    _as_migrated_before(home)
    names = [c.name for c in store_components()]
    assert names.index("teams") == names.index("runs") + 1
    report = copy_store(str(home), str(copy), store_components())
    assert report.ok and {t.name: (t.source, t.target) for t in report.tables}["team_tasks"] == (1, 1)
    tasks = TaskStore(home=copy)
    assert tasks.team_tasks(["c1"]) == {"c1": {"task": "t"}}
    tasks.close()


def test_db_copy_skips_the_teams_of_a_source_that_never_ran_anything(tmp_path: Path) -> None:
    home = tmp_path / "home"
    Database.open(home).close()
    report = copy_store(str(home), str(tmp_path / "copy"), store_components())
    assert any(s.name == "teams" for s in report.skipped) and not report.tables


def _migration_statements(db: Database) -> list[str]:
    """Every statement sent on the Database's connection from now on that reads or writes `_migrations` (a real
    sqlite3 trace callback, no counter of our own)."""
    seen: list[str] = []
    db.conn.set_trace_callback(lambda sql: seen.append(sql) if "_migrations" in sql else None)  # type: ignore[attr-defined]
    return seen


def test_a_task_store_given_a_database_migrates_once_not_once_per_team_record(tmp_path: Path) -> None:
    # A team run keeps its tasks through TaskStore(the run store's db) each time (agents/team.py _keep_tasks): the
    # component's migrations must not be looked at again, each time taking SQLite's write lock.
    db = Database.open(tmp_path)
    try:
        TaskStore(db).record_team_task("c0", "crew", {"task": "t"})
        seen = _migration_statements(db)
        for i in range(1, 21):
            TaskStore(db).record_team_task(f"c{i}", "crew", {"task": "t"})
        assert seen == [], f"{len(seen)} migration statements for 20 team records"
        assert len(TaskStore(db).team_tasks([f"c{i}" for i in range(21)])) == 21
    finally:
        db.close()


def test_task_stores_opened_at_once_on_threads_migrate_the_component_once(tmp_path: Path) -> None:
    import threading

    db = Database.open(tmp_path)
    try:
        seen = _migration_statements(db)
        go = threading.Barrier(8)
        failed: list[BaseException] = []

        def open_and_record(i: int) -> None:
            go.wait(5)
            try:
                TaskStore(db).record_team_task(f"c{i}", "crew", {"task": "t"})
            except BaseException as exc:
                failed.append(exc)

        threads = [threading.Thread(target=open_and_record, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert failed == []
        reads = [s for s in seen if s.startswith("SELECT name FROM _migrations")]
        assert len(reads) == 1, f"the component's migrations were read {len(reads)} times by 8 openers"
        assert db.conn.execute("SELECT COUNT(*) FROM _migrations WHERE component = 'teams'").fetchone()[0] == 1
        assert db.conn.execute("SELECT COUNT(*) FROM team_tasks").fetchone()[0] == 8
    finally:
        db.close()
