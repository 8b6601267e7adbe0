"""`sherpa-skills learn`: capture, replay (dry run, confirmation, execution, divergence), health and stats through the CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sherpa_skills.cli import main


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Replayed commands run in the current directory: a fresh one per test."""
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "notes").mkdir()
    (folder / "notes" / "a.txt").write_text("hello\n")
    monkeypatch.chdir(folder)
    return folder


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    code = main([*args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else None


def steps_file(tmp_path: Path, content: str, name: str = "steps.yaml") -> str:
    path = tmp_path / name
    path.write_text(content)
    return str(path)


ARCHIVE = """
description: Package the notes folder into a tarball
tags: [archive, notes]
steps:
  - command: mkdir -p build
  - command: tar -czf build/{{ name }}.tar.gz notes
  - command: tar -tzf build/{{ name }}.tar.gz
    expected_output_pattern: "notes/a.txt"
"""


def capture(capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, content: str = ARCHIVE, task: str = "package-notes") -> dict:
    code, proc = cli(capsys, "learn", "capture-success", task, "--steps-file", steps_file(tmp_path, content), "--home", str(home))
    assert code == 0, proc
    return proc


class TestCapture:
    def test_steps_file_becomes_a_procedure_seen_once(self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path) -> None:
        """The JSON carries id and version; one capture means one success and confidence 0.8."""
        proc = capture(capsys, tmp_path, home)
        assert proc["outcome"] == "captured"
        assert (proc["version"], proc["success_count"], proc["confidence"]) == (1, 1, 0.8)
        assert [s["command"] for s in proc["steps"]][1] == "tar -czf build/{{ name }}.tar.gz notes"

    def test_a_bare_list_of_steps_is_accepted_too(self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path) -> None:
        """A steps file may be just the list."""
        proc = capture(capsys, tmp_path, home, "- {command: make}\n- {command: make install, timeout_secs: 5}\n", "build")
        assert [s["timeout_secs"] for s in proc["steps"]] == [60.0, 5.0]

    def test_same_steps_again_credit_the_existing_procedure(self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path) -> None:
        """Dedupe: no duplicate, one more success."""
        first = capture(capsys, tmp_path, home)
        again = capture(capsys, tmp_path, home)
        assert again["outcome"] == "duplicate" and again["id"] == first["id"] and again["success_count"] == 2
        _, listed = cli(capsys, "learn", "procedures", "--home", str(home))
        assert len(listed) == 1

    def test_one_step_is_not_a_procedure(self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path) -> None:
        """The check refuses fewer than two steps (look-around commands do not count) and says why."""
        code, out = cli(capsys, "learn", "capture-success", "x", "--steps-file", steps_file(tmp_path, "- {command: make}\n- {command: ls -la}\n"),
                        "--home", str(home))
        assert code != 0
        assert out["outcome"] == "rejected" and "at least 2" in out["reason"]

    def test_a_bad_steps_file_names_the_line(self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path) -> None:
        """A step without a command is a FILE:LINE error, exit 2."""
        path = steps_file(tmp_path, "steps:\n  - command: make\n  - timeout_secs: 3\n")
        code = main(["learn", "capture-success", "x", "--steps-file", path, "--home", str(home)])
        assert code == 2
        assert f"{path}:3:" in capsys.readouterr().err

    def test_from_a_finished_run(self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path) -> None:
        """The shell steps of a run become the procedure, exit codes as observed, a success line as the output pattern."""
        workflow = tmp_path / "wf.yaml"
        workflow.write_text("""
name: pack
initial: a
states:
  a: {on_enter: {shell: {command: "mkdir -p out && echo created out"}}}
  b: {on_enter: {shell: {command: "cd out && echo 'built 3 files in 0.5s'"}}}
  c: {on_enter: {shell: {command: "ls"}}}
  done: {final: true}
transitions:
  - {trigger: next, source: a, dest: b}
  - {trigger: next, source: b, dest: c}
  - {trigger: next, source: c, dest: done}
""")
        code, run = cli(capsys, "run", str(workflow), "--home", str(home))
        assert code == 0
        code, proc = cli(capsys, "learn", "capture-success", "make-out", "--from-run", run["run_id"], "--home", str(home))
        assert code == 0
        assert [s["command"] for s in proc["steps"]] == ["mkdir -p out && echo created out", "cd out && echo 'built 3 files in 0.5s'"]
        pattern = proc["steps"][1]["expected_output_pattern"]
        assert pattern and __import__("re").search(pattern, "built 12 files in 1.25s")
        assert proc["source"] == "run"

    def test_secrets_never_reach_the_store_file(self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path) -> None:
        """Tokens in commands are redacted before storing; the database files do not contain them."""
        secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
        content = f"- command: export GITHUB_TOKEN={secret} && gh release list\n- command: curl -u admin:hunter2pass https://example.invalid/x\n"
        proc = capture(capsys, tmp_path, home, content, "release")
        assert "[REDACTED]" in proc["steps"][0]["command"]
        for f in home.glob("store.db*"):
            data = f.read_bytes()
            assert secret.encode() not in data and b"hunter2pass" not in data


class TestReplay:
    def test_dry_run_by_default_executes_nothing(self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path) -> None:
        """Without --execute the steps are only shown, rendered, with confidence."""
        proc = capture(capsys, tmp_path, home)
        code, out = cli(capsys, "learn", "replay", "archive my notes", "-p", "name=n", "--home", str(home))
        assert code == 0
        assert out["status"] == "dry-run" and out["procedure_id"] == proc["id"] and out["confidence"] == 0.8
        assert out["steps"][1]["command"] == "tar -czf build/n.tar.gz notes"
        assert "exit_code" not in out["steps"][0]
        assert out["llm_calls"] == 0 and out["diverged_step"] is None
        assert not (work / "build").exists()

    def test_execute_without_yes_and_without_a_terminal_is_refused(self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path) -> None:
        """Executing asks for confirmation; with no one to ask, nothing runs."""
        capture(capsys, tmp_path, home)
        code, out = cli(capsys, "learn", "replay", "archive my notes", "-p", "name=n", "--execute", "--home", str(home))
        assert code != 0 and out["status"] == "refused" and "--yes" in out["reason"]
        assert not (work / "build").exists()

    def test_execute_yes_runs_and_validates_every_step(self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path) -> None:
        """All steps pass; the execution counts as a success; zero LLM calls."""
        proc = capture(capsys, tmp_path, home)
        code, out = cli(capsys, "learn", "replay", "archive my notes", "-p", "name=n", "--execute", "--yes", "--home", str(home))
        assert code == 0, out
        assert out["status"] == "succeeded"
        assert [(s["exit_code"], s["passed"]) for s in out["steps"]] == [(0, True)] * 3
        assert (work / "build" / "n.tar.gz").exists()
        _, shown = cli(capsys, "learn", "show", proc["id"], "--home", str(home))
        assert shown["success_count"] == 2 and shown["recent_executions"][0]["outcome"] == "success"

    @pytest.mark.parametrize("hostile", ["x; touch pwned", "$(touch pwned)", "`touch pwned`", "x' && touch pwned && echo '", "a\ntouch pwned"])
    def test_parameters_never_inject_commands(self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path, hostile: str) -> None:
        """Hostile parameter values are shell-quoted: they name a file, they never run."""
        capture(capsys, tmp_path, home)
        cli(capsys, "learn", "replay", "archive my notes", "-p", f"name={hostile}", "--execute", "--yes", "--home", str(home))
        assert not (work / "pwned").exists()
        assert not (work / "build" / "pwned").exists()

    def test_a_failing_step_is_a_divergence_with_what_was_expected(self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path) -> None:
        """notes/ is gone: step 2 exits non-zero, the replay stops there and the failure becomes a learning."""
        capture(capsys, tmp_path, home)
        (work / "notes" / "a.txt").unlink()
        (work / "notes").rmdir()
        code, out = cli(capsys, "learn", "replay", "archive my notes", "-p", "name=n", "--execute", "--yes", "--home", str(home))
        assert code != 0
        assert out["status"] == "diverged" and out["diverged_step"] == 2
        assert out["divergence"]["expected_exit_code"] == 0 and out["divergence"]["observed_exit_code"] != 0
        assert "passed" not in out["steps"][2]  # step 3 never ran
        _, failures = cli(capsys, "learn", "failures", "--home", str(home))
        assert failures[0]["command"] == "tar -czf build/n.tar.gz notes"

    def test_an_output_mismatch_is_a_divergence(self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path) -> None:
        """The recorded pattern must match: a different file list diverges at step 3."""
        capture(capsys, tmp_path, home)
        (work / "notes" / "a.txt").rename(work / "notes" / "b.txt")
        _, out = cli(capsys, "learn", "replay", "archive my notes", "-p", "name=n", "--execute", "--yes", "--home", str(home))
        assert out["status"] == "diverged" and out["diverged_step"] == 3 and "does not match" in out["reason"]

    def test_a_hung_step_times_out_and_diverges(self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path) -> None:
        """A step past its timeout is killed with its process group; that is a divergence."""
        capture(capsys, tmp_path, home, "- {command: mkdir -p start}\n- {command: sleep 30, timeout_secs: 0.5}\n", "sleepy")
        _, out = cli(capsys, "learn", "replay", "sleepy", "--execute", "--yes", "--home", str(home))
        assert out["status"] == "diverged" and out["diverged_step"] == 2 and "timed out" in out["reason"]
        assert out["steps"][1]["duration_ms"] < 10_000

    def test_missing_parameter_is_refused_with_its_name(self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path) -> None:
        """Preflight names the parameter the steps need."""
        capture(capsys, tmp_path, home)
        code, out = cli(capsys, "learn", "replay", "archive my notes", "--execute", "--yes", "--home", str(home))
        assert code != 0 and out["status"] == "refused" and "name" in out["reason"]

    def test_required_environment_variables_are_checked_by_name(self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path,
                                                              work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """A step needing DEPLOY_KEY is refused while it is unset; its value is passed through when set, never stored."""
        capture(capsys, tmp_path, home, "- {command: test -n \"$DEPLOY_KEY\", env_vars: [DEPLOY_KEY]}\n- {command: touch deployed}\n", "deploy")
        monkeypatch.delenv("DEPLOY_KEY", raising=False)
        _, out = cli(capsys, "learn", "replay", "deploy", "--execute", "--yes", "--home", str(home))
        assert out["status"] == "refused" and "DEPLOY_KEY" in out["reason"]
        monkeypatch.setenv("DEPLOY_KEY", "value-that-must-not-be-stored-8841")
        _, out = cli(capsys, "learn", "replay", "deploy", "--execute", "--yes", "--home", str(home))
        assert out["status"] == "succeeded"
        for f in home.glob("store.db*"):
            assert b"value-that-must-not-be-stored-8841" not in f.read_bytes()

    def test_nothing_matches(self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path) -> None:
        """An empty store has nothing to replay: status no-match, non-zero exit."""
        code, out = cli(capsys, "learn", "replay", "anything at all", "--home", str(home))
        assert code != 0 and out["status"] == "no-match"

    def test_a_broken_procedure_is_not_offered(self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path) -> None:
        """A divergence with no success in the window makes it broken, and replay says why it will not use it."""
        capture(capsys, tmp_path, home, "- {command: mkdir -p x}\n- {command: test -f missing-file}\n", "flaky")
        cli(capsys, "learn", "replay", "flaky", "--execute", "--yes", "--min-confidence", "0", "--home", str(home))
        code, health = cli(capsys, "learn", "health", "--home", str(home))
        assert health[0]["status"] == "broken" and health[0]["rolling_success_rate"] == 0.0 and health[0]["total_executions"] == 1
        _, out = cli(capsys, "learn", "replay", "flaky", "--min-confidence", "0", "--home", str(home))
        assert out["status"] == "no-match" and "broken" in out["reason"]
        _, degraded = cli(capsys, "learn", "health", "--degraded-only", "--home", str(home))
        assert [h["procedure_id"] for h in degraded] == [health[0]["procedure_id"]]


class TestListingAndExchange:
    def test_procedures_json_has_the_documented_fields(self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path) -> None:
        """id, task_type, version, confidence, success_count, failure_count, health."""
        capture(capsys, tmp_path, home)
        _, rows = cli(capsys, "learn", "procedures", "--home", str(home))
        assert {"id", "task_type", "version", "confidence", "success_count", "failure_count", "health"} <= set(rows[0])

    def test_export_then_import_into_another_home(self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path) -> None:
        """Procedures travel as JSON; importing twice adds nothing new."""
        capture(capsys, tmp_path, home)
        exported = tmp_path / "procs.json"
        assert main(["learn", "export", str(exported), "--home", str(home)]) == 0
        other = tmp_path / "other"
        _, first = cli(capsys, "learn", "import", str(exported), "--home", str(other))
        _, second = cli(capsys, "learn", "import", str(exported), "--home", str(other))
        assert (first["added"], second["added"], second["skipped"]) == (1, 0, 1)

    def test_stats_count_tokens_saved_by_replays(self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path) -> None:
        """Each successful replay saves what the planned run cost."""
        path = steps_file(tmp_path, "- {command: mkdir -p a}\n- {command: mkdir -p b}\n")
        workflow_free = ["learn", "capture-success", "noop", "--steps-file", path, "--home", str(home)]
        assert main(workflow_free) == 0
        capsys.readouterr()
        from sherpa_skills.skills.store import SkillStore

        store = SkillStore(home=home)
        pid = store.procedures()[0].id
        store.conn.execute("UPDATE procedures SET planned_tokens = 500, planned_llm_calls = 3 WHERE id = ?", (pid,))
        for _ in range(2):
            cli(capsys, "learn", "replay", "noop", "--execute", "--yes", "--home", str(home))
        _, stats = cli(capsys, "learn", "stats", "--home", str(home))
        assert (stats["replays"], stats["tokens_saved"], stats["llm_calls_saved"]) == (2, 1000, 6)
