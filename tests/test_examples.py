"""Every example in examples/ runs, offline, and does what its comments say."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from sherpa_skills.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = main([*args, "--json"])
    return code, json.loads(capsys.readouterr().out)


class TestSupportTriage:
    workflow = str(EXAMPLES / "support_triage" / "workflow.yaml")

    def test_billing_ticket_is_decided_by_a_rule_and_sent(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A billing ticket never asks the LLM policy: a rule picks the branch, everything else fast-forwards."""
        code, result = run_cli(
            capsys, "run", self.workflow, "--home", str(tmp_path), "-i", "ticket=I want a refund for my invoice"
        )
        assert code == 0
        assert (result["status"], result["state"]) == ("final", "sent")
        assert (result["rule_decisions"], result["llm_decisions"]) == (1, 0)
        assert result["llm_calls"] == 1  # the draft, written by the llm action
        assert result["context"]["team"] == "billing"

    def test_fault_report_goes_through_the_llm_and_waits_for_a_human(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The LLM classifies a crash as high priority; the run waits; a human's approval sends the reply."""
        code, result = run_cli(
            capsys, "run", self.workflow, "--home", str(tmp_path), "-i", "ticket=The app crashes on start"
        )
        assert code == 0
        assert (result["status"], result["state"]) == ("waiting", "respond/approval")
        assert result["llm_decisions"] == 1 and result["context"]["priority"] == "high"
        code, resumed = run_cli(capsys, "resume", result["run_id"], "--home", str(tmp_path), "-i", "approved=true")
        assert code == 0
        assert (resumed["status"], resumed["state"], resumed["context"]["outcome"]) == ("final", "sent", "sent")

    def test_a_human_can_reject_by_trigger(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """At the waiting state an explicit trigger with the input it guards on moves the run to rejected."""
        _, result = run_cli(capsys, "run", self.workflow, "--home", str(tmp_path), "-i", "ticket=Everything is down")
        code, resumed = run_cli(
            capsys, "resume", result["run_id"], "--home", str(tmp_path), "-i", "approved=false", "--trigger", "reject"
        )
        assert code == 0
        assert resumed["state"] == "rejected" and resumed["user_decisions"] == 1

    def test_cancel_declared_on_the_root_is_available_everywhere(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Setting cancelled=true while waiting enables the root-level cancel transition."""
        _, result = run_cli(capsys, "run", self.workflow, "--home", str(tmp_path), "-i", "ticket=It crashes")
        code, resumed = run_cli(capsys, "resume", result["run_id"], "--home", str(tmp_path), "-i", "cancelled=true")
        assert code == 0 and resumed["state"] == "rejected"


class TestShellBuild:
    workflow = str(EXAMPLES / "shell_build" / "workflow.yaml")

    def test_builds_tests_and_packages_a_real_library(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Real commands in a temporary folder produce a zip holding the package."""
        work = tmp_path / "work dir"  # a space, to show values are shell-quoted
        code, result = run_cli(capsys, "run", self.workflow, "--home", str(tmp_path / "home"), "-i", f"workdir={work}")
        assert code == 0, result
        assert result["state"] == "built"
        assert "greeter/__init__.py" in zipfile.ZipFile(work / "greeter.zip").namelist()

    def test_a_failing_step_takes_the_parent_failure_transition(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A package name that is not importable makes the test step fail, and the build ends in failed."""
        code, result = run_cli(
            capsys,
            "run",
            self.workflow,
            "--home",
            str(tmp_path / "home"),
            "-i",
            f"workdir={tmp_path / 'w'}",
            "-i",
            "package=not-a-module",
        )
        assert code == 0
        assert result["state"] == "failed"
        assert result["context"]["test"]["exit_code"] != 0


def test_embedding_example_runs(tmp_path: Path) -> None:
    """examples/embed.py shows a custom action and guard, a waiting state and a resume from the store."""
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / "embed.py")], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "big order:   waiting review/manual total 135.0" in out.stdout
    assert "signed off:  final done" in out.stdout


def test_demo_runs_offline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`sherpa-skills demo` runs the triage example end to end with the scripted model."""
    assert main(["demo", "--json", "--home", str(tmp_path)]) == 0
    results = json.loads(capsys.readouterr().out)
    assert [r["status"] for r in results] == ["final", "waiting", "final"]


@pytest.mark.slow
def test_skill_loop_plan_capture_replay_diverge_replan(tmp_path: Path) -> None:
    """The whole loop through the CLI on real SQLite and the procedure index:
    replay costs no LLM call, divergence re-plans a
    version 2."""
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / "skills_loop" / "loop.py"), "--json", "--home", str(tmp_path / "home")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["planned"]["llm_calls"] > 0 and report["planned"]["procedures"][0][1] == 1
    assert report["replayed"]["replay"] == "succeeded" and report["replayed"]["llm_calls"] == 0
    assert report["token_saving"] >= 0.95
    assert report["replanned"]["replay"] == "diverged" and report["replanned"]["diverged_step"] == 2
    assert report["replanned"]["state"] == "done"
    # One success and one divergence: too few executions to judge version 1 (scoring.MIN_EVIDENCE), so it is new.
    assert report["version_1"] == {
        "health": "new",
        "rolling_success_rate": 0.5,
        "counted_executions": 2,
        "success_count": 3,
        "failure_count": 1,
    }
    assert report["replayed_v2"] == {"state": "done", "llm_calls": 0, "replay": "succeeded"}
    (proc,) = report["procedures"]
    assert proc["version"] == 2 and proc["health"] == "new"  # one replay of version 2: too few to judge
    assert report["stats"]["llm_calls_saved"] > 0
    assert (tmp_path / "home" / "index" / "procedures.npz").is_file()


@pytest.mark.slow
def test_skill_store_walkthrough_runs_in_a_folder_of_its_own(tmp_path: Path) -> None:
    """examples/skill_store_loop/walkthrough.sh: capture, promote, replay (dry run, then executed), an answered
    confirmation, a candidate refused then rejected, health; everything in a new temporary folder, none in the
    checkout or the folder it is started from."""
    root = EXAMPLES.parent
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("SHERPA_SKILLS_")},
        "TMPDIR": str(tmp_path),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    start = tmp_path / "start"
    start.mkdir()
    out = subprocess.run(
        ["bash", str(EXAMPLES / "skill_store_loop" / "walkthrough.sh")],
        capture_output=True,
        text=True,
        cwd=start,
        env=env,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "succeeded archive-notes-" in out.stdout and "notes/monday.txt" in out.stdout
    assert "a candidate awaiting review" in out.stdout and "rejected: it is not replayed" in out.stdout
    assert list(start.iterdir()) == []  # nothing where it was started
    (work,) = [p for p in tmp_path.iterdir() if p != start]  # one folder of its own, under TMPDIR
    assert (work / "build" / "weekly.tar.gz").is_file() and (work / "home" / "store.db").is_file()
    assert not (root / "build").exists() and not (root / "notes").exists()
