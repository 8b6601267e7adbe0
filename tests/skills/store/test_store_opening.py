"""The skill store over a `Database`: opened on one it is given (and left open for its owner) or on one of its own,
its writes joining a transaction already open on that database, and the old positional path refused saying what to
write instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from sherpa_skills.db.database import Database
from sherpa_skills.errors import UsageError
from sherpa_skills.skills.store.database import ProcedureDatabase
from sherpa_skills.skills.store.models import CapturedProcedure, ProcedureStep


def procedure(task_type: str = "build-lib") -> CapturedProcedure:
    steps = [ProcedureStep(command="make"), ProcedureStep(command="make test")]
    return CapturedProcedure(id="", task_type=task_type, description="build the lib", steps=steps, success_count=1)


def test_a_store_given_a_database_leaves_it_open_for_its_owner(tmp_path: Path) -> None:
    db = Database.open(path=tmp_path / "store.db")
    try:
        store = ProcedureDatabase(db)
        stored = store.add_procedure(procedure())
        store.close()
        again = ProcedureDatabase(db)  # the same connection, still open, already migrated
        assert again.conn is db.conn and again.get(stored.id).id == stored.id
        assert again.path == tmp_path / "store.db" and again.where == str(tmp_path / "store.db")
    finally:
        db.close()


def test_a_store_that_opened_its_database_closes_it(tmp_path: Path) -> None:
    store = ProcedureDatabase(path=tmp_path / "store.db")
    store.close()
    with pytest.raises(Exception, match="closed"):
        store.conn.execute("SELECT 1")


def test_a_write_inside_a_transaction_of_the_same_database_is_part_of_it(tmp_path: Path) -> None:
    db = Database.open(path=tmp_path / "store.db")
    store = ProcedureDatabase(db)

    def fails_after_storing(conn: object) -> None:
        store.add_procedure(procedure())
        raise RuntimeError("the outer write fails")

    try:
        with pytest.raises(RuntimeError):
            db.transaction(fails_after_storing)
        assert store.procedures() == [] and store.generation() == 0  # rolled back with the outer transaction
    finally:
        db.close()


def test_a_positional_path_is_refused_naming_the_keywords(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"path=.*home=") as refused:
        ProcedureDatabase(tmp_path / "store.db")  # type: ignore[arg-type]
    assert "store.db" in str(refused.value)
    assert not (tmp_path / "store.db").exists()


def test_a_database_and_where_to_open_one_are_refused_together(tmp_path: Path) -> None:
    db = Database.open(path=tmp_path / "store.db")
    try:
        with pytest.raises(UsageError, match="not both"):
            ProcedureDatabase(db, home=tmp_path)
    finally:
        db.close()
