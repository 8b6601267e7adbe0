"""The skill store on PostgreSQL when the connection drops at COMMIT: after the server committed (only the answer was
lost) the write is not made again; before it (nothing committed) it is made again. Either way, once: the procedure,
the execution and the counts it moves, the learning and how often it was seen."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _lossy import CommitAnswerLost, relayed

from sherpa_skills.skills.store.database import ProcedureDatabase
from sherpa_skills.skills.store.models import CapturedLearning, CapturedProcedure, Execution, ProcedureStep

pytestmark = pytest.mark.postgres

WHEN = {"after the server committed": True, "before the server committed": False}


@pytest.fixture(params=list(WHEN))
def relay(request: pytest.FixtureRequest, postgres_url: str) -> Iterator[tuple[str, CommitAnswerLost]]:
    with relayed(postgres_url) as (url, found):
        found.lands = WHEN[request.param]
        yield url, found


@pytest.fixture
def store(relay: tuple[str, CommitAnswerLost], tmp_path: Path) -> Iterator[ProcedureDatabase]:
    opened = ProcedureDatabase(home=tmp_path / "home", database=relay[0])
    yield opened
    opened.close()


def rows(postgres_url: str, sql: str) -> list[tuple[Any, ...]]:
    """What the server holds, asked on a connection of its own (not through the relay)."""
    import psycopg

    with psycopg.connect(postgres_url) as conn:
        return conn.execute(sql).fetchall()


def cut_at_commit(relay: CommitAnswerLost) -> None:
    relay.armed.set()  # the next COMMIT: the write's


def procedure() -> CapturedProcedure:
    steps = [ProcedureStep(command="make"), ProcedureStep(command="make test")]
    return CapturedProcedure(id="", task_type="build-lib", description="build the lib", steps=steps, success_count=1)


def test_a_procedure_is_stored_once(
    relay: tuple[str, CommitAnswerLost], store: ProcedureDatabase, postgres_url: str
) -> None:
    cut_at_commit(relay[1])
    stored = store.add_procedure(procedure())
    assert relay[1].cut.is_set(), "the fault did fire"
    assert rows(postgres_url, "SELECT id, success_count FROM procedures") == [(stored.id, 1)]
    assert rows(postgres_url, "SELECT procedure_id, version FROM procedure_versions") == [(stored.id, 1)]
    assert rows(postgres_url, "SELECT value FROM skill_meta WHERE key = 'generation'") == [(1,)]


def test_an_execution_is_recorded_and_counted_once(
    relay: tuple[str, CommitAnswerLost], store: ProcedureDatabase, postgres_url: str
) -> None:
    stored = store.add_procedure(procedure())
    now = time.time()
    cut_at_commit(relay[1])
    store.record_execution(
        Execution(procedure_id=stored.id, version=1, started=now, ended=now, outcome="success", run_id="run-1")
    )
    assert relay[1].cut.is_set(), "the fault did fire"
    assert rows(postgres_url, "SELECT run_id FROM executions") == [("run-1",)]
    assert rows(postgres_url, "SELECT success_count FROM procedures") == [(2,)]
    assert rows(postgres_url, "SELECT success_count FROM procedure_versions") == [(2,)]


def test_a_learning_is_seen_once(
    relay: tuple[str, CommitAnswerLost], store: ProcedureDatabase, postgres_url: str
) -> None:
    lesson = CapturedLearning(task_type="build-lib", command="make", error="no rule to make target", source="run")
    store.add_learning(lesson)
    cut_at_commit(relay[1])
    store.add_learning(lesson)
    assert relay[1].cut.is_set(), "the fault did fire"
    assert rows(postgres_url, "SELECT command, seen FROM learnings") == [("make", 2)]
