"""Defensive learnings count repeats instead of piling up copies, and an existing home's copies are folded."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from sherpa_skills.skills.store.database import ProcedureDatabase
from sherpa_skills.skills.store.migrations import m001_skills, m002_fts_by_rowid
from sherpa_skills.skills.store.models import CapturedLearning


def test_the_same_lesson_is_counted_not_copied(procedure_db: ProcedureDatabase) -> None:
    store = procedure_db
    first = store.add_learning(CapturedLearning(task_type="build", command="npm test", error="2 failed", created=100.0))
    again = store.add_learning(
        CapturedLearning(task_type="build", command="npm   test ", error="2 failed\n", created=200.0)
    )
    other = store.add_learning(CapturedLearning(task_type="build", command="npm test", error="segfault", created=300.0))
    elsewhere = store.add_learning(
        CapturedLearning(task_type="deploy", command="npm test", error="2 failed", created=400.0)
    )
    assert again.id == first.id and (again.seen, again.last_seen, again.created) == (2, 200.0, 100.0)
    assert len({first.id, other.id, elsewhere.id}) == 3
    listed = {x.id: x for x in store.learnings("build")}
    assert listed[first.id].seen == 2 and listed[other.id].seen == 1 and len(listed) == 2


def test_an_older_home_is_folded_in_place(tmp_path: Path) -> None:
    """Learnings written by the previous schema, three copies of one lesson, become one row seen three times."""
    conn = sqlite3.connect(tmp_path / "store.db")
    conn.execute(
        "CREATE TABLE _migrations (component TEXT, name TEXT, applied REAL DEFAULT (strftime('%s','now')),"
        " PRIMARY KEY (component, name))"
    )
    m001_skills(conn)
    m002_fts_by_rowid(conn)
    conn.executemany(
        "INSERT INTO _migrations (component, name) VALUES ('skills', ?)", [("m001_skills",), ("m002_fts_by_rowid",)]
    )
    now = time.time()
    rows = [("make", "boom", now - 30), ("make", "boom", now - 20), ("make ", "boom", now - 10), ("make", "other", now)]
    conn.executemany(
        "INSERT INTO learnings (task_type, procedure_id, command, error, exit_code, source, created)"
        " VALUES ('t', NULL, ?, ?, 2, 'run', ?)",
        rows,
    )
    conn.commit()
    conn.close()
    store = ProcedureDatabase(home=tmp_path)
    learned = sorted(store.learnings("t"), key=lambda x: x.error)
    assert [(x.error, x.seen) for x in learned] == [("boom", 3), ("other", 1)]
    assert learned[0].last_seen == now - 10 and learned[0].created == now - 30
    assert store.add_learning(CapturedLearning(task_type="t", command="make", error="boom")).seen == 4
    store.close()
