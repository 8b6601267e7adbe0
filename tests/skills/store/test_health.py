"""Health needs evidence: `new` until a procedure runs, no `broken` on one failure, and promote,
replay, the heartbeat and
the browser view agree on what can be replayed — through the CLI and the Python API on a real store."""

from __future__ import annotations

import getpass
import json
import time
from pathlib import Path
from typing import Any

import pytest

import sherpa_skills as sk
from sherpa_skills.cli import main
from sherpa_skills.skills.store.database import ProcedureDatabase
from sherpa_skills.skills.store.models import CapturedProcedure, Execution, ProcedureStep
from sherpa_skills.skills.store.scoring import MIN_EVIDENCE, replay_refusal

# Fails until a file named `ready` exists in the folder it runs in: a procedure that breaks, then is fixed.
NEEDS_READY = "description: Check the deployment is ready\nsteps:\n  - command: test -f ready\n"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def cli(capsys: pytest.CaptureFixture[str], home: Path, *args: str, json_out: bool = True) -> tuple[int, Any]:
    code = main([*args, *(["--json"] if json_out else []), "--home", str(home)])
    out = capsys.readouterr().out
    if not json_out:
        return code, out
    return code, json.loads(out) if out.strip() else None


def captured(capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path) -> str:
    steps = tmp_path / "steps.yaml"
    steps.write_text(NEEDS_READY)
    code, proc = cli(capsys, home, "learn", "capture-success", "check-ready", "--steps-file", str(steps))
    assert code == 0, proc
    return proc["id"]


def execute(capsys: pytest.CaptureFixture[str], home: Path, pid: str) -> dict[str, Any]:
    """Replay by id and run the steps; --min-confidence 0 so only health can refuse it."""
    _, out = cli(
        capsys,
        home,
        "learn",
        "replay",
        "check the deployment is ready",
        "--procedure",
        pid,
        "--execute",
        "--yes",
        "--min-confidence",
        "0",
    )
    return out


def health_of(capsys: pytest.CaptureFixture[str], home: Path, pid: str) -> dict[str, Any]:
    _, reports = cli(capsys, home, "learn", "health")
    return next(r for r in reports if r["procedure_id"] == pid)


class TestEvidenceThroughTheCli:
    def test_a_procedure_that_never_ran_is_new_everywhere(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path
    ) -> None:
        """Captured, never replayed: `new` in `learn procedures`, `learn show` and `learn health`, not `healthy`."""
        pid = captured(capsys, tmp_path, home)
        assert health_of(capsys, home, pid)["status"] == "new"
        _, rows = cli(capsys, home, "learn", "procedures")
        assert [r["health"] for r in rows if r["id"] == pid] == ["new"]
        _, shown = cli(capsys, home, "learn", "show", pid)
        assert shown["health"]["status"] == "new" and shown["health"]["counted_executions"] == 0
        _, text = cli(capsys, home, "learn", "show", pid, json_out=False)
        assert "— new" in text
        _, degraded = cli(capsys, home, "learn", "health", "--degraded-only")
        assert degraded == []  # new is not a problem to list

    def test_a_promoted_procedure_that_fails_once_replays_again_once_fixed(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        """Captured once, promoted, fails once (a missing file): `new`, not healthy (too little evidence), still
        matched by its own description and replayed; once the cause is fixed it succeeds. A floor of the caller's own
        (`--min-confidence 0.8`) refuses it for its confidence, and says so."""
        pid = captured(capsys, tmp_path, home)
        assert cli(capsys, home, "learn", "promote", pid)[0] == 0
        _, failed = cli(
            capsys, home, "learn", "replay", "check the deployment is ready", "--procedure", pid, "--execute", "--yes"
        )
        assert failed["status"] == "diverged"
        report = health_of(capsys, home, pid)
        assert (report["status"], report["counted_executions"], report["rolling_success_rate"]) == ("new", 1, 0.0)
        assert report["min_evidence"] == MIN_EVIDENCE > 1
        _, text = cli(capsys, home, "learn", "health", json_out=False)
        assert "healthy" not in text and "new" in text
        _, out = cli(capsys, home, "learn", "replay", "check the deployment is ready")  # matched, not named
        assert out["status"] == "dry-run" and out["procedure_id"] == pid
        _, floor = cli(
            capsys,
            home,
            "learn",
            "replay",
            "check the deployment is ready",
            "--procedure",
            pid,
            "--min-confidence",
            "0.8",
        )
        assert floor["status"] == "no-match" and "confidence 0.59 < 0.80" in floor["reason"]
        (work / "ready").write_text("")  # the cause fixed
        _, fixed = cli(capsys, home, "learn", "replay", "check the deployment is ready", "--execute", "--yes")
        assert fixed["status"] == "succeeded" and fixed["procedure_id"] == pid

    def test_enough_failures_break_it_and_a_promotion_starts_a_fresh_window(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        """MIN_EVIDENCE failures: broken and refused. Promoted: `new`, replayable, and the message says both; earlier
        executions are kept but no longer count; who promoted it and when is stored and shown."""
        pid = captured(capsys, tmp_path, home)
        cli(capsys, home, "learn", "promote", pid)
        for _ in range(MIN_EVIDENCE):
            assert execute(capsys, home, pid)["status"] == "diverged"
        assert health_of(capsys, home, pid)["status"] == "broken"
        refused = execute(capsys, home, pid)
        assert refused["status"] == "no-match" and "broken" in refused["reason"]

        before = time.time()
        code, text = cli(capsys, home, "learn", "promote", pid, "--agent", "alice", json_out=False)
        assert code == 0
        assert "can be replayed" in text and "alice" in text and f"{MIN_EVIDENCE} earlier execution" in text
        report = health_of(capsys, home, pid)
        assert report["status"] == "new" and report["counted_executions"] == 0
        assert report["total_executions"] == MIN_EVIDENCE  # kept, not counted
        _, out = cli(capsys, home, "learn", "replay", "check the deployment is ready", "--procedure", pid)
        assert out["status"] == "dry-run"  # what promote said

        _, shown = cli(capsys, home, "learn", "show", pid)
        promotion = shown["promotions"][-1]
        assert promotion["promoted_by"] == "alice" and promotion["promoted_at"] >= before
        assert (promotion["failure_before"], promotion["executions_before"]) == (MIN_EVIDENCE, MIN_EVIDENCE)
        assert [e["outcome"] for e in shown["recent_executions"]] == [
            "dry-run",
            *["diverged"] * MIN_EVIDENCE,
        ]  # all kept
        _, text = cli(capsys, home, "learn", "show", pid, json_out=False)
        assert "promoted by alice" in text

        (work / "ready").write_text("")  # fixed: the fresh window fills with successes
        for _ in range(MIN_EVIDENCE):
            assert execute(capsys, home, pid)["status"] == "succeeded"
        assert health_of(capsys, home, pid)["status"] == "healthy"

    def test_promotion_is_by_the_os_user_without_agent(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path
    ) -> None:
        pid = captured(capsys, tmp_path, home)
        _, promoted = cli(capsys, home, "learn", "promote", pid)
        assert promoted["promotion"]["promoted_by"] == getpass.getuser()
        assert promoted["replayable"] is True and promoted["refusal"] is None and promoted["health"] == "new"

    def test_promote_never_claims_what_replay_refuses(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path
    ) -> None:
        """Promote's message comes from the same gate replay uses:
        it names the refusal instead of promising a replay."""
        pid = captured(capsys, tmp_path, home)
        store = ProcedureDatabase(home=home)
        proc = store.promote(pid)
        assert replay_refusal(proc, store.health(pid)) is None
        pulled = store.health(pid).model_copy(update={"status": "broken", "rolling_success_rate": 0.0})
        assert "broken" in (replay_refusal(proc, pulled) or "")
        weak = proc.model_copy(update={"confidence": 0.59, "proven": False})
        assert "confidence" in (replay_refusal(weak, store.health(pid)) or "")
        assert replay_refusal(proc.model_copy(update={"confidence": 0.59}), store.health(pid)) is None  # promoted
        assert "candidate" in (replay_refusal(proc.model_copy(update={"status": "candidate"}), store.health(pid)) or "")
        assert "rejected" in (replay_refusal(proc.model_copy(update={"status": "rejected"}), store.health(pid)) or "")


class TestEvidenceThroughThePythonApi:
    def test_new_then_healthy_then_broken_then_new(self, skill_store: sk.SkillStore, work: Path) -> None:
        skills = skill_store
        proc = skills.capture("check-ready", ["test -f ready"], description="check the deployment is ready").procedure
        assert proc is not None
        assert skills.health(proc.id)[0].status == "new"
        skills.promote(proc.id, by="ci-bot")
        assert skills.replay(procedure_id=proc.id, execute=True, min_confidence=0)["status"] == "diverged"
        assert skills.health(proc.id)[0].status == "new"  # one failure: too little evidence either way
        for _ in range(MIN_EVIDENCE - 1):
            skills.replay(procedure_id=proc.id, execute=True, min_confidence=0)
        assert skills.health(proc.id)[0].status == "broken"
        assert skills.replay(procedure_id=proc.id, min_confidence=0)["status"] == "no-match"
        promoted = skills.promote(proc.id, by="ci-bot")
        assert skills.health(proc.id)[0].status == "new" and promoted.confidence >= 0.8
        assert skills.replay(procedure_id=proc.id)["status"] == "dry-run"
        assert skills.store.promotions(proc.id)[-1]["promoted_by"] == "ci-bot"

    def test_a_candidate_that_never_ran_is_new(self, procedure_db: ProcedureDatabase) -> None:
        store = procedure_db
        p = store.add_procedure(
            CapturedProcedure(
                id="",
                task_type="npm-build",
                status="candidate",
                success_count=2,
                steps=[ProcedureStep(command="npm ci"), ProcedureStep(command="npm run build")],
            )
        )
        assert store.health(p.id).status == "new"

    def test_the_marked_needs_relearning_is_cleared_by_a_promotion(self, procedure_db: ProcedureDatabase) -> None:
        """The heartbeat marks a broken procedure for re-learning; a person's promotion is the command that resets
        it."""
        store = procedure_db
        p = store.add_procedure(
            CapturedProcedure(id="", task_type="deploy", success_count=1, steps=[ProcedureStep(command="make")])
        )
        for _ in range(MIN_EVIDENCE):
            store.record_execution(
                Execution(procedure_id=p.id, version=1, started=time.time(), ended=time.time(), outcome="error")
            )
        store.mark_needs_relearning(p.id)
        assert store.health(p.id).status == "needs-relearning"
        store.promote(p.id)
        assert store.health(p.id).status == "new" and not store.get(p.id).needs_relearning


class TestHeartbeatAndBrowser:
    def test_heartbeat_counts_new_apart_from_healthy(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, procedure_db: ProcedureDatabase
    ) -> None:
        store = procedure_db
        ran = store.add_procedure(
            CapturedProcedure(id="", task_type="build", success_count=2, steps=[ProcedureStep(command="make")])
        )
        for _ in range(MIN_EVIDENCE):
            store.record_execution(
                Execution(procedure_id=ran.id, version=1, started=time.time(), ended=time.time(), outcome="success")
            )
        for name in ("lint", "test"):
            store.add_procedure(
                CapturedProcedure(id="", task_type=name, status="candidate", steps=[ProcedureStep(command=name)])
            )
        _, report = cli(capsys, home, "heartbeat", "--once")
        stats = report["phases"]["health"]["stats"]
        assert (stats.get("new"), stats.get("healthy")) == (2, 1)

    def test_heartbeat_rechecks_a_promoted_procedure(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, procedure_db: ProcedureDatabase
    ) -> None:
        """Broken and pulled by one heartbeat, promoted, then the next heartbeat sees it `new` again."""
        store = procedure_db
        p = store.add_procedure(
            CapturedProcedure(id="", task_type="deploy", success_count=1, steps=[ProcedureStep(command="make")])
        )
        for _ in range(MIN_EVIDENCE):
            store.record_execution(
                Execution(procedure_id=p.id, version=1, started=time.time(), ended=time.time(), outcome="error")
            )
        _, report = cli(capsys, home, "heartbeat", "--once")
        assert report["phases"]["health"]["stats"].get("needs-relearning") == 1
        cli(capsys, home, "learn", "promote", p.id)
        _, report = cli(capsys, home, "heartbeat", "--once")
        assert report["phases"]["health"]["stats"].get("new") == 1

    def test_browser_view_shows_new(self, tmp_path: Path, home: Path) -> None:
        pytest.importorskip("starlette", reason="the ui extra (starlette) is not installed")
        pytest.importorskip("httpx", reason="starlette's TestClient needs httpx")
        from starlette.testclient import TestClient

        from sherpa_skills.ui import create_app

        store = ProcedureDatabase(home=home)
        p = store.add_procedure(
            CapturedProcedure(id="", task_type="build", success_count=2, steps=[ProcedureStep(command="make")])
        )
        store.close()
        with TestClient(create_app(home), base_url="http://127.0.0.1") as client:
            assert [h["status"] for h in client.get("/api/health").json()] == ["new"]
            assert "status-new" in client.get("/procedures").text
            assert client.get(f"/api/procedures/{p.id}").json()["health"]["status"] == "new"
