"""The one execution recorder and the one credit-or-new-version step, shared by shell and trajectory replay."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from sherpa_skills.errors import StoreError
from sherpa_skills.skills.store.database import ProcedureDatabase
from sherpa_skills.skills.store.models import CapturedProcedure, ProcedureStep, RecordedDecision
from sherpa_skills.skills.store.recording import credit_or_new_version, record_execution


@pytest.fixture
def store(tmp_path: Path) -> ProcedureDatabase:
    db = ProcedureDatabase(path=tmp_path / "store.db")
    yield db
    db.close()


def shell(*commands: str) -> CapturedProcedure:
    return CapturedProcedure(
        id="", task_type="pack", steps=[ProcedureStep(command=c) for c in commands], success_count=1, planned_tokens=90
    )


def test_a_divergence_gives_the_execution_its_step_and_reason(store: ProcedureDatabase) -> None:
    proc, _ = credit_or_new_version(store, shell("mkdir -p build", "tar -czf build/n.tar.gz notes"))
    divergence = {"step": 2, "reason": "exit code 2, expected 0", "expected": "exit code 0", "observed": "exit code 2"}
    done = record_execution(store, proc, started=time.time(), outcome="diverged", divergence=divergence, run_id="r1")
    assert (done.version, done.diverged_step, done.reason, done.run_id) == (1, 2, "exit code 2, expected 0", "r1")
    failed = record_execution(
        store, proc.model_dump(), started=time.time(), outcome="error", error="the run failed", tokens=5
    )
    assert (failed.diverged_step, failed.reason, failed.tokens) == (None, "the run failed", 5)
    assert [e.outcome for e in store.executions(proc.id)] == ["error", "diverged"]


def test_the_same_steps_again_are_a_credit_not_a_duplicate(store: ProcedureDatabase) -> None:
    first, new = credit_or_new_version(store, shell("make", "make test"))
    again, new_again = credit_or_new_version(store, shell("make", "make  test"))
    assert (new, new_again, again.id, again.success_count) == (True, False, first.id, 2)


def test_relearning_makes_the_next_version_of_either_kind(store: ProcedureDatabase) -> None:
    proc, _ = credit_or_new_version(store, shell("make", "make test"))
    v2, new = credit_or_new_version(
        store, shell("make", "make check").model_copy(update={"planned_tokens": 40}), proc.id
    )
    assert (new, v2.id, v2.version, v2.planned_tokens, [s.command for s in v2.steps]) == (
        True,
        proc.id,
        2,
        40,
        ["make", "make check"],
    )
    decisions = [RecordedDecision(state="assess", trigger="refund", decided_by="llm")]
    traj, _ = credit_or_new_version(
        store, CapturedProcedure(id="", task_type="tickets", steps=[], kind="trajectory", decisions=decisions)
    )
    other = [RecordedDecision(state="assess", trigger="escalate", decided_by="llm")]
    traj2, _ = credit_or_new_version(
        store, CapturedProcedure(id="", task_type="tickets", steps=[], kind="trajectory", decisions=other), traj.id
    )
    assert (traj2.version, [d.trigger for d in traj2.decisions]) == (2, ["escalate"])


def test_relearning_a_procedure_that_does_not_exist_is_refused(store: ProcedureDatabase) -> None:
    with pytest.raises(StoreError):
        credit_or_new_version(store, shell("make"), "no-such-procedure")
