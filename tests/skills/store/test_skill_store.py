"""The skill store's truth: counts, confidence, versions, health, learnings and their safety properties."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from sherpa_skills.skills.store.database import ProcedureDatabase
from sherpa_skills.skills.store.models import CapturedProcedure, Execution, ProcedureStep
from sherpa_skills.skills.store.scoring import REPLAY_THRESHOLD, confidence, failure_pattern, health_status
from sherpa_skills.skills.store.signatures import step_signature


def procedure(task_type: str = "build-lib", *commands: str) -> CapturedProcedure:
    steps = [ProcedureStep(command=c) for c in (commands or ("make", "make test"))]
    return CapturedProcedure(
        id="", task_type=task_type, description=f"{task_type} procedure", steps=steps, success_count=1
    )


def execution(p: CapturedProcedure, outcome: str, reason: str | None = None) -> Execution:
    now = time.time()
    return Execution(procedure_id=p.id, version=p.version, started=now, ended=now, outcome=outcome, reason=reason)  # type: ignore[arg-type]


class TestConfidence:
    def test_one_success_is_not_proof(self) -> None:
        """Seen once, a procedure stays below the replay threshold; a second success passes it;
        only evidence brings it near 1."""
        assert confidence(1, 0) < REPLAY_THRESHOLD < confidence(2, 0)
        assert confidence(2, 0) > confidence(1, 0)
        assert confidence(100, 0) < 1.0
        assert confidence(0, 0) == 0.0

    def test_failures_cost_more_than_successes_earn_while_evidence_is_thin(self) -> None:
        """One failure after one success falls well below the threshold."""
        assert confidence(1, 1) < 0.5
        assert confidence(9, 1) < confidence(9, 0)


class TestHealth:
    @pytest.mark.parametrize(
        "rate, status",
        [
            (None, "new"),
            (1.0, "healthy"),
            (0.81, "healthy"),
            (0.8, "degraded"),
            (0.5, "degraded"),
            (0.49, "broken"),
            (0.0, "broken"),
        ],
    )
    def test_status_thresholds(self, rate: float | None, status: str) -> None:
        """New before any execution; healthy above 0.8, degraded from 0.5 to 0.8, broken below 0.5."""
        assert health_status(rate) == status

    def test_broken_and_marked_is_needs_relearning(self) -> None:
        """A broken procedure marked for re-capture reports needs-relearning."""
        assert health_status(0.2, needs_relearning=True) == "needs-relearning"

    def test_rolling_rate_uses_the_last_ten_real_executions(self, tmp_path: Path) -> None:
        """Old failures fall out of the window; dry runs never count."""
        store = ProcedureDatabase(path=tmp_path / "s.db")
        p = store.add_procedure(procedure())
        for _ in range(5):
            store.record_execution(execution(p, "diverged", "exit code 2, expected 0"))
        for _ in range(10):
            store.record_execution(execution(p, "success"))
        store.record_execution(execution(p, "dry-run"))
        report = store.health(p.id)
        assert report.rolling_success_rate == 1.0 and report.status == "healthy"
        assert report.total_executions == 15
        assert report.last_failure is not None

    def test_failure_pattern_is_what_recent_failures_share(self, tmp_path: Path) -> None:
        """Numbers and temporary paths are folded so the same error compares equal."""
        assert (
            failure_pattern(["exit code 2 at /tmp/abc1", "exit code 3 at /tmp/xyz9", "timed out"]) == "exit code # at #"
        )
        store = ProcedureDatabase(path=tmp_path / "s.db")
        p = store.add_procedure(procedure())
        for code in (2, 3, 4):
            store.record_execution(execution(p, "diverged", f"exit code {code}, expected 0"))
        report = store.health(p.id)
        assert report.status == "broken"
        assert report.failure_pattern == "exit code #, expected #"


class TestVersions:
    def test_a_new_version_starts_fresh_and_the_old_one_keeps_its_history(self, tmp_path: Path) -> None:
        """Re-learning stores version 2 with one success; version 1 keeps its counts and executions."""
        store = ProcedureDatabase(path=tmp_path / "s.db")
        p = store.add_procedure(procedure())
        store.record_execution(execution(p, "diverged", "boom"))
        v2 = store.add_version(p.id, [ProcedureStep(command="make all"), ProcedureStep(command="make check")])
        assert (v2.version, v2.success_count, v2.failure_count) == (2, 1, 0)
        v1 = store.get(p.id, 1)
        assert (v1.failure_count, v1.steps[0].command) == (1, "make")
        assert [e.version for e in store.executions(p.id)] == [1]
        assert store.health(p.id).total_executions == 0

    def test_signature_ignores_spacing_and_parameter_names(self) -> None:
        """Two step lists that differ only in whitespace or template names are the same procedure."""
        a = [ProcedureStep(command="tar  -czf {{ out }} notes"), ProcedureStep(command="ls")]
        b = [ProcedureStep(command="tar -czf {{name}} notes "), ProcedureStep(command="ls")]
        assert step_signature(a) == step_signature(b)


def test_unknown_procedure_error_names_it(tmp_path: Path) -> None:
    """Asking for a procedure that does not exist says so and how to list them."""
    from sherpa_skills.errors import StoreError

    with pytest.raises(StoreError, match="no procedure 'nope'.*learn procedures"):
        ProcedureDatabase(path=tmp_path / "s.db").get("nope")


WRITER = """
import sys, time
from sherpa_skills.skills.store.database import ProcedureDatabase
from sherpa_skills.skills.store.models import Execution
store = ProcedureDatabase(path=sys.argv[1])
for i in range(int(sys.argv[3])):
    now = time.time()
    store.record_execution(Execution(procedure_id=sys.argv[2], version=1, started=now, ended=now,
                                     outcome="success" if i % 3 else "diverged", reason="x"))
"""


@pytest.mark.slow
def test_eight_processes_recording_at_once_lose_no_update(tmp_path: Path) -> None:
    """8 processes × 40 outcomes on one procedure: the counts are exact."""
    db = tmp_path / "store.db"
    store = ProcedureDatabase(path=db)
    p = store.add_procedure(procedure())
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(db), p.id, "40"]) for _ in range(8)]
    assert all(proc.wait(timeout=120) == 0 for proc in procs)
    after = store.get(p.id)
    failures_each = len([i for i in range(40) if i % 3 == 0])
    assert after.failure_count == 8 * failures_each
    assert after.success_count == 1 + 8 * (40 - failures_each)
    assert len(store.executions(p.id)) == 8 * 40


class TestOneProcedurePerSignature:
    def test_a_second_insert_of_the_same_steps_counts_a_success(self, procedure_db: ProcedureDatabase) -> None:
        """Two captures that both passed the duplicate check insert once: the second one counts a success."""
        store = procedure_db
        first = store.add_procedure(procedure("deploy-app", "make", "make deploy"))
        second = store.add_procedure(procedure("deploy-app", "make", "make  deploy"))
        assert second.id == first.id and second.success_count == 2
        assert store.count() == 1

    def test_the_same_steps_under_another_task_type_are_another_procedure(
        self, procedure_db: ProcedureDatabase
    ) -> None:
        """Uniqueness is per task type: the same commands may serve two kinds of task."""
        store = procedure_db
        a = store.add_procedure(procedure("build-lib", "make"))
        b = store.add_procedure(procedure("build-docs", "make"))
        assert a.id != b.id and store.count() == 2

    def test_six_concurrent_first_captures_make_one_procedure(self, tmp_path: Path) -> None:
        """Six processes capturing the same new steps at once: one procedure, six successes."""
        code = (
            "import sys; from sherpa_skills.skills.store.database import ProcedureDatabase; "
            "from sherpa_skills.skills.store.models import *; "
            "s = ProcedureDatabase(path=sys.argv[1]); s.add_procedure(CapturedProcedure(id='', "
            "task_type='ship', success_count=1, "
            "steps=[ProcedureStep(command='make'), ProcedureStep(command='make ship')]))"
        )
        db = tmp_path / "store.db"
        ProcedureDatabase(path=db).close()
        procs = [subprocess.Popen([sys.executable, "-c", code, str(db)]) for _ in range(6)]
        assert all(p.wait(timeout=120) == 0 for p in procs)
        store = ProcedureDatabase(path=db)
        assert [(p.task_type, p.success_count) for p in store.procedures()] == [("ship", 6)]
