"""`sherpa-skills learn`: capture, replay (dry run, confirmation, execution, divergence),
health and stats through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sherpa_skills.cli import main
from sherpa_skills.skills.replay.divergence import Divergence


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


# The task word for word as the procedure describes it: the strongest evidence a task is about a procedure.
TASK = "package the notes folder into a tarball"


def capture(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    home: Path,
    content: str = ARCHIVE,
    task: str = "package-notes",
    proven: bool = True,
) -> dict:
    """Capture a steps file; `proven` also promotes it (one success alone is not enough to replay)."""
    code, proc = cli(
        capsys, "learn", "capture-success", task, "--steps-file", steps_file(tmp_path, content), "--home", str(home)
    )
    assert code == 0, proc
    if proven:
        code, proc = cli(capsys, "learn", "promote", proc["id"], "--home", str(home))
        assert code == 0, proc
    return proc


class TestCapture:
    def test_steps_file_becomes_a_procedure_seen_once(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path
    ) -> None:
        """The JSON carries id and version; one capture means one success, below the replay threshold."""
        proc = capture(capsys, tmp_path, home, proven=False)
        assert proc["outcome"] == "captured"
        assert (proc["version"], proc["success_count"], proc["confidence"]) == (1, 1, 0.7143)
        assert [s["command"] for s in proc["steps"]][1] == "tar -czf build/{{ name }}.tar.gz notes"

    def test_a_bare_list_of_steps_is_accepted_too(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path
    ) -> None:
        """A steps file may be just the list."""
        proc = capture(
            capsys, tmp_path, home, "- {command: make}\n- {command: make install, timeout_secs: 5}\n", "build"
        )
        assert [s["timeout_secs"] for s in proc["steps"]] == [60.0, 5.0]

    def test_same_steps_again_credit_the_existing_procedure(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path
    ) -> None:
        """Dedupe: no duplicate, one more success."""
        first = capture(capsys, tmp_path, home, proven=False)
        again = capture(capsys, tmp_path, home, proven=False)
        assert again["outcome"] == "duplicate" and again["id"] == first["id"] and again["success_count"] == 2
        _, listed = cli(capsys, "learn", "procedures", "--home", str(home))
        assert len(listed) == 1

    def test_explicit_steps_are_kept_as_given(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path
    ) -> None:
        """Look-around commands with their own patterns stay, nothing is dropped, and one real step is a procedure."""
        content = (
            "- {command: mkdir -p out}\n- {command: cat out/a.txt, expected_output_pattern: hello}\n"
            "- {command: 'echo \"hi {{ name }}\"', expected_output_pattern: hi}\n"
        )
        proc = capture(capsys, tmp_path, home, content, "three", proven=False)
        assert [s["command"] for s in proc["steps"]] == ["mkdir -p out", "cat out/a.txt", 'echo "hi {{ name }}"']
        assert [s["expected_output_pattern"] for s in proc["steps"]] == [None, "hello", "hi"] and proc["filtered"] == []
        one = capture(capsys, tmp_path, home, "- {command: echo restarted}\n", "restart", proven=False)
        assert one["outcome"] == "captured" and len(one["steps"]) == 1

    def test_a_run_still_needs_two_steps_and_lists_what_it_filtered(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        """From a run, look-around commands are left out and listed with why; one step left is refused."""
        workflow = tmp_path / "wf.yaml"
        workflow.write_text("""
name: look
initial: a
states:
  a: {on_enter: {shell: {command: "mkdir -p out"}}}
  b: {on_enter: {shell: {command: "ls"}}}
  done: {final: true}
transitions:
  - {trigger: next, source: a, dest: b}
  - {trigger: next, source: b, dest: done}
""")
        _, run = cli(capsys, "run", str(workflow), "--home", str(home))
        code, out = cli(capsys, "learn", "capture-success", "x", "--from-run", run["run_id"], "--home", str(home))
        assert code != 0 and out["outcome"] == "rejected" and "at least 2" in out["reason"]
        assert out["filtered"] == [{"command": "ls", "reason": "look-around command (ls): nothing to replay"}]

    def test_a_bad_steps_file_names_the_line(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path
    ) -> None:
        """A step without a command is a FILE:LINE error, exit 2."""
        path = steps_file(tmp_path, "steps:\n  - command: make\n  - timeout_secs: 3\n")
        code = main(["learn", "capture-success", "x", "--steps-file", path, "--home", str(home)])
        assert code == 2
        assert f"{path}:3:" in capsys.readouterr().err

    def test_from_a_finished_run(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        """The shell steps of a run become the procedure, exit codes as observed,
        a success line as the output pattern."""
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
        code, proc = cli(
            capsys, "learn", "capture-success", "make-out", "--from-run", run["run_id"], "--home", str(home)
        )
        assert code == 0
        assert [s["command"] for s in proc["steps"]] == [
            "mkdir -p out && echo created out",
            "cd out && echo 'built 3 files in 0.5s'",
        ]
        pattern = proc["steps"][1]["expected_output_pattern"]
        assert pattern and __import__("re").search(pattern, "built 12 files in 1.25s")
        assert proc["source"] == "run"

    def test_secrets_never_reach_the_store_file(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path
    ) -> None:
        """A literal secret in a given step becomes an env var reference, required at replay;
        the database never holds it."""
        secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
        content = f"- command: export GITHUB_TOKEN={secret} && gh release list\n- command: curl -u admin:hunter2pass https://example.invalid/x\n"
        proc = capture(capsys, tmp_path, home, content, "release", proven=False)
        assert proc["steps"][0]["command"] == "export GITHUB_TOKEN=${GITHUB_TOKEN} && gh release list"
        assert proc["steps"][0]["env_vars"] == ["GITHUB_TOKEN"] and "GITHUB_TOKEN" in proc["secrets_to_env"]
        assert "hunter2pass" not in proc["steps"][1]["command"] and proc["steps"][1]["env_vars"]
        for f in home.glob("store.db*"):
            data = f.read_bytes()
            assert secret.encode() not in data and b"hunter2pass" not in data


class TestReplay:
    def test_dry_run_by_default_executes_nothing(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        """Without --execute the steps are only shown, rendered, with confidence."""
        proc = capture(capsys, tmp_path, home)
        code, out = cli(capsys, "learn", "replay", TASK, "-p", "name=n", "--home", str(home))
        assert code == 0
        assert out["status"] == "dry-run" and out["procedure_id"] == proc["id"] and out["confidence"] == 0.8333
        assert out["steps"][1]["command"] == "tar -czf build/n.tar.gz notes"
        assert "exit_code" not in out["steps"][0]
        assert out["llm_calls"] == 0 and out["diverged_step"] is None
        assert not (work / "build").exists()

    def test_execute_without_yes_and_without_a_terminal_is_refused(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        """Executing asks for confirmation; with no one to ask, nothing runs."""
        capture(capsys, tmp_path, home)
        code, out = cli(capsys, "learn", "replay", TASK, "-p", "name=n", "--execute", "--home", str(home))
        assert code != 0 and out["status"] == "refused" and "--yes" in out["reason"]
        assert not (work / "build").exists()

    def test_execute_yes_runs_and_validates_every_step(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        """All steps pass; the execution counts as a success; zero LLM calls."""
        proc = capture(capsys, tmp_path, home)
        code, out = cli(capsys, "learn", "replay", TASK, "-p", "name=n", "--execute", "--yes", "--home", str(home))
        assert code == 0, out
        assert out["status"] == "succeeded"
        assert [(s["exit_code"], s["passed"]) for s in out["steps"]] == [(0, True)] * 3
        assert (work / "build" / "n.tar.gz").exists()
        _, shown = cli(capsys, "learn", "show", proc["id"], "--home", str(home))
        assert (
            shown["success_count"] == 3 and shown["recent_executions"][0]["outcome"] == "success"
        )  # captured, promoted, replayed

    @pytest.mark.parametrize(
        "hostile",
        ["x; touch pwned", "$(touch pwned)", "`touch pwned`", "x' && touch pwned && echo '", "a\ntouch pwned"],
    )
    def test_parameters_never_inject_commands(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path, hostile: str
    ) -> None:
        """Hostile parameter values are shell-quoted: they name a file, they never run."""
        capture(capsys, tmp_path, home)
        cli(capsys, "learn", "replay", TASK, "-p", f"name={hostile}", "--execute", "--yes", "--home", str(home))
        assert not (work / "pwned").exists()
        assert not (work / "build" / "pwned").exists()

    def test_a_failing_step_is_a_divergence_with_what_was_expected(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        """notes/ is gone: step 2 exits non-zero, the replay stops there and the failure becomes a learning."""
        capture(capsys, tmp_path, home)
        (work / "notes" / "a.txt").unlink()
        (work / "notes").rmdir()
        code, out = cli(capsys, "learn", "replay", TASK, "-p", "name=n", "--execute", "--yes", "--home", str(home))
        assert code != 0
        assert out["status"] == "diverged" and out["diverged_step"] == 2
        assert out["divergence"]["expected_exit_code"] == 0 and out["divergence"]["observed_exit_code"] != 0
        divergence = Divergence.model_validate(out["divergence"])  # the record trajectory replay keeps too
        assert (divergence.step, divergence.replayed, divergence.expected) == (2, 1, "exit code 0")
        assert divergence.procedure and divergence.command == "tar -czf build/n.tar.gz notes"
        assert "passed" not in out["steps"][2]  # step 3 never ran
        _, failures = cli(capsys, "learn", "failures", "--home", str(home))
        assert failures[0]["command"] == "tar -czf build/n.tar.gz notes"

    def test_an_output_mismatch_is_a_divergence(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        """The recorded pattern must match: a different file list diverges at step 3."""
        capture(capsys, tmp_path, home)
        (work / "notes" / "a.txt").rename(work / "notes" / "b.txt")
        _, out = cli(capsys, "learn", "replay", TASK, "-p", "name=n", "--execute", "--yes", "--home", str(home))
        assert out["status"] == "diverged" and out["diverged_step"] == 3 and "does not match" in out["reason"]

    def test_a_hung_step_times_out_and_diverges(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        """A step past its timeout is killed with its process group; that is a divergence."""
        capture(
            capsys, tmp_path, home, "- {command: mkdir -p start}\n- {command: sleep 30, timeout_secs: 0.5}\n", "sleepy"
        )
        _, out = cli(capsys, "learn", "replay", "sleepy", "--execute", "--yes", "--home", str(home))
        assert out["status"] == "diverged" and out["diverged_step"] == 2 and "timed out" in out["reason"]
        assert out["steps"][1]["duration_ms"] < 10_000

    def test_missing_parameter_is_refused_with_its_name(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        """Preflight names the parameter the steps need."""
        capture(capsys, tmp_path, home)
        code, out = cli(capsys, "learn", "replay", TASK, "--execute", "--yes", "--home", str(home))
        assert code != 0 and out["status"] == "refused" and "name" in out["reason"]

    def test_required_environment_variables_are_checked_by_name(
        self,
        capsys: pytest.CaptureFixture[str],
        tmp_path: Path,
        home: Path,
        work: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """A step needing DEPLOY_KEY is refused while it is unset;
        its value is passed through when set, never stored."""
        capture(
            capsys,
            tmp_path,
            home,
            '- {command: test -n "$DEPLOY_KEY", env_vars: [DEPLOY_KEY]}\n- {command: touch deployed}\n',
            "deploy",
        )
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

    def test_a_broken_procedure_is_not_offered(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        """Divergences with no success in the window make it broken once there are enough of
        them (scoring.MIN_EVIDENCE),
        and replay says why it will not use it."""
        capture(capsys, tmp_path, home, "- {command: mkdir -p x}\n- {command: test -f missing-file}\n", "flaky")
        for _ in range(3):
            cli(capsys, "learn", "replay", "flaky", "--execute", "--yes", "--min-confidence", "0", "--home", str(home))
        code, health = cli(capsys, "learn", "health", "--home", str(home))
        assert (
            health[0]["status"] == "broken"
            and health[0]["rolling_success_rate"] == 0.0
            and health[0]["total_executions"] == 3
        )
        _, out = cli(capsys, "learn", "replay", "flaky", "--min-confidence", "0", "--home", str(home))
        assert out["status"] == "no-match" and "broken" in out["reason"]
        _, degraded = cli(capsys, "learn", "health", "--degraded-only", "--home", str(home))
        assert [h["procedure_id"] for h in degraded] == [health[0]["procedure_id"]]


GUARDED = """
description: Publish the report file
preconditions:
  - touch precondition-ran
  - test -f ready
postconditions:
  - touch postcondition-ran
  - test -f published
steps:
  - command: touch step-ran
"""


class TestPreAndPostconditions:
    """Preconditions run only when executing and refuse it when they fail; a failing postcondition is a divergence."""

    def test_a_dry_run_runs_no_condition(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        capture(capsys, tmp_path, home, GUARDED, "publish")
        code, out = cli(capsys, "learn", "replay", "publish the report file", "--home", str(home))
        assert code == 0 and out["status"] == "dry-run", out
        assert not (work / "precondition-ran").exists() and not (work / "postcondition-ran").exists()
        assert not (work / "step-ran").exists()

    def test_a_failing_precondition_refuses_before_any_step(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        proc = capture(capsys, tmp_path, home, GUARDED, "publish")
        code, out = cli(capsys, "learn", "replay", "publish the report file", "--execute", "--yes", "--home", str(home))
        assert code != 0 and out["status"] == "refused", out
        assert "precondition failed: test -f ready" in out["reason"]
        assert (work / "precondition-ran").exists()  # the checks did run, in the replay's directory
        assert not (work / "step-ran").exists() and not (work / "postcondition-ran").exists()
        _, shown = cli(capsys, "learn", "show", proc["id"], "--home", str(home))
        assert shown["failure_count"] == 0 and all(e["outcome"] != "success" for e in shown["recent_executions"])

    def test_a_failing_postcondition_is_a_recorded_divergence(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        proc = capture(capsys, tmp_path, home, GUARDED, "publish")
        (work / "ready").touch()
        code, out = cli(capsys, "learn", "replay", "publish the report file", "--execute", "--yes", "--home", str(home))
        assert code != 0 and out["status"] == "diverged", out
        assert (work / "step-ran").exists() and (work / "postcondition-ran").exists()
        assert "postcondition failed" in out["reason"] and out["divergence"]["command"] == "test -f published"
        _, shown = cli(capsys, "learn", "show", proc["id"], "--home", str(home))
        latest = shown["recent_executions"][0]
        assert latest["outcome"] == "diverged" and "postcondition failed" in latest["reason"]
        assert shown["failure_count"] == 1

    def test_conditions_that_hold_let_the_replay_succeed(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        capture(capsys, tmp_path, home, GUARDED.replace("test -f published", "test -f step-ran"), "publish")
        (work / "ready").touch()
        code, out = cli(capsys, "learn", "replay", "publish the report file", "--execute", "--yes", "--home", str(home))
        assert code == 0 and out["status"] == "succeeded", out


class TestListingAndExchange:
    def test_procedures_json_has_the_documented_fields(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path
    ) -> None:
        """id, task_type, version, confidence, success_count, failure_count, health."""
        capture(capsys, tmp_path, home)
        _, rows = cli(capsys, "learn", "procedures", "--home", str(home))
        assert {"id", "task_type", "version", "confidence", "success_count", "failure_count", "health"} <= set(rows[0])

    def test_export_then_import_into_another_home(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path
    ) -> None:
        """Procedures travel as JSON; importing twice adds nothing new."""
        capture(capsys, tmp_path, home)
        exported = tmp_path / "procs.json"
        assert main(["learn", "export", str(exported), "--home", str(home)]) == 0
        other = tmp_path / "other"
        _, first = cli(capsys, "learn", "import", str(exported), "--home", str(other))
        _, second = cli(capsys, "learn", "import", str(exported), "--home", str(other))
        assert (first["added"], second["added"], second["skipped"]) == (1, 0, 1)

    def test_stats_count_tokens_saved_by_replays(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        """Each successful replay saves what the planned run cost."""
        path = steps_file(tmp_path, "- {command: mkdir -p a}\n- {command: mkdir -p b}\n")
        workflow_free = ["learn", "capture-success", "noop", "--steps-file", path, "--home", str(home)]
        assert main(workflow_free) == 0
        capsys.readouterr()
        from sherpa_skills.skills.store.database import ProcedureDatabase

        store = ProcedureDatabase(home=home)
        pid = store.procedures()[0].id
        store.conn.execute("UPDATE procedures SET planned_tokens = 500, planned_llm_calls = 3 WHERE id = ?", (pid,))
        assert main(["learn", "promote", pid, "--home", str(home)]) == 0
        capsys.readouterr()
        for _ in range(2):
            cli(capsys, "learn", "replay", "noop", "--execute", "--yes", "--home", str(home))
        _, stats = cli(capsys, "learn", "stats", "--home", str(home))
        assert (stats["replays"], stats["tokens_saved"], stats["llm_calls_saved"]) == (2, 1000, 6)


class TestReplayFixes:
    def test_min_confidence_zero_is_zero(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        """`--min-confidence 0` offers a procedure below the default threshold (it was read as 0.8)."""
        proc = capture(capsys, tmp_path, home)
        from sherpa_skills.skills.store.database import ProcedureDatabase

        ProcedureDatabase(home=home).conn.execute("UPDATE procedures SET failure_count = 3 WHERE id = ?", (proc["id"],))
        _, out = cli(
            capsys,
            "learn",
            "replay",
            "Package the notes folder into a tarball",
            "--task-type",
            "package-notes",
            "-p",
            "name=n",
            "--min-confidence",
            "0",
            "--home",
            str(home),
        )
        assert out["status"] == "dry-run" and out["procedure_id"] == proc["id"]

    def test_edit_at_the_confirmation_renders_the_new_parameters(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        """The `edit` answer carries parameters into the steps shown again (it used to re-render nothing)."""
        from sherpa_skills.data import data_file
        from sherpa_skills.engine.runstore import RunStore
        from sherpa_skills.engine.workflow import load_workflow

        proc = capture(capsys, tmp_path, home)
        agent = load_workflow(data_file("statemachines", "replay.yaml")).agent(store=RunStore(home=home), home=home)
        result = agent.run(
            {"procedure_id": proc["id"], "params": {"name": "first"}, "execute": True, "min_confidence": 0}
        )
        assert result.state == "confirm" and "build/first.tar.gz" in result.context["rendered"][1]
        result = agent.run(trigger="edit", args={"params": {"name": "second"}})
        assert result.state == "confirm" and "build/second.tar.gz" in result.context["rendered"][1]

    def test_an_empty_store_says_so(self, capsys: pytest.CaptureFixture[str], home: Path) -> None:
        """No procedure at all: the reason says the store is empty, never 'None'."""
        code = main(["learn", "replay", "anything at all", "--home", str(home)])
        out = capsys.readouterr().out
        assert code != 0 and "None" not in out and "no procedures" in out


OFF_TOPIC = [
    "what is the weather in Paris",
    "book a flight to Lisbon next Tuesday",
    "summarise this article about whales",
    "write a greeting",
]


class TestMatchingThroughTheCli:
    @pytest.mark.parametrize("query", ["", "   ", "\t\n"])
    def test_an_empty_query_is_a_usage_error_and_records_no_run(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path, query: str
    ) -> None:
        """`learn replay ""`: nothing to match, so exit 2 with one clear line; no replay run is recorded for it."""
        from sherpa_skills.engine.runstore import RunStore

        capture(capsys, tmp_path, home)
        before = [r.run_id for r in RunStore(home=home).list_runs(1000)]
        code = main(["learn", "replay", query, "--json", "--home", str(home)])
        out, err = capsys.readouterr()
        assert (code, out) == (2, "")
        assert (
            err.strip()
            == "sherpa-skills: replay needs a task to match: a non-empty query (what to do), or a procedure id"
        )
        assert [r.run_id for r in RunStore(home=home).list_runs(1000)] == before

    def test_unrelated_tasks_replay_nothing(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        """Several proven procedures, off-topic tasks:
        no-match every time, nothing executed, and the reason says why."""
        capture(capsys, tmp_path, home)
        capture(
            capsys,
            tmp_path,
            home,
            "- {command: mkdir -p out}\n- {command: 'echo \"hello {{ name }}\" > out/greeting.txt'}\n",
            "greet",
        )
        capture(capsys, tmp_path, home, "- {command: touch restarted}\n", "restart-service")
        for task in OFF_TOPIC[:-1] + ["write a greeting card for my grandmother"]:
            code, out = cli(
                capsys, "learn", "replay", task, "--param", "name=foo", "--execute", "--yes", "--home", str(home)
            )
            assert code != 0 and out["status"] == "no-match" and out["steps"] == [], task
            assert out["reason"] and all(m["reason"] for m in out["matches"])
        assert not (work / "out").exists() and not (work / "restarted").exists()

    def test_the_named_task_replays_and_shows_parameters_from_the_task(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        """A task that states a parameter's value fills it, and the dry run shows where it came from."""
        capture(
            capsys,
            tmp_path,
            home,
            "description: find the old log files\nsteps:\n  - {command: 'find . -name \"*.log\" -mtime +{{ days }}'}\n",
            "old-logs",
        )
        code, out = cli(
            capsys,
            "learn",
            "replay",
            "find the old log files older than 7 days",
            "--task-type",
            "old-logs",
            "--home",
            str(home),
        )
        assert code == 0 and out["status"] == "dry-run", out
        assert (
            out["params_from_task"] == {"days": "7"} and out["steps"][0]["command"] == 'find . -name "*.log" -mtime +7'
        )

    def test_one_capture_is_not_replayed_until_promoted(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        proc = capture(capsys, tmp_path, home, proven=False)
        _, out = cli(capsys, "learn", "replay", TASK, "-p", "name=n", "--home", str(home))
        assert out["status"] == "no-match" and "learn promote" in out["reason"]
        _, promoted = cli(capsys, "learn", "promote", proc["id"], "--home", str(home))
        assert promoted["success_count"] == 2 and promoted["confidence"] >= 0.8
        _, out = cli(capsys, "learn", "replay", TASK, "-p", "name=n", "--home", str(home))
        assert out["status"] == "dry-run"


class TestMaintenanceCommands:
    def test_tables_never_cut_ids_at_80_columns(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """`procedures`, `health` and `stats` show every id whole in an 80-column terminal."""
        proc = capture(capsys, tmp_path, home, task="a-rather-long-task-type-name")
        monkeypatch.setenv("COLUMNS", "80")
        for command in ("procedures", "health", "stats"):
            assert main(["learn", command, "--home", str(home)]) == 0
            out = capsys.readouterr().out
            assert proc["id"] in out, (command, out)

    def test_reindex_promote_and_export_answer_in_json(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path
    ) -> None:
        proc = capture(capsys, tmp_path, home, proven=False)
        _, reindexed = cli(capsys, "learn", "reindex", "--home", str(home))
        assert reindexed["reindexed"] == 1 and reindexed["seconds"] >= 0
        _, promoted = cli(capsys, "learn", "promote", proc["id"], "--home", str(home))
        assert promoted["id"] == proc["id"] and promoted["status"] == "active"
        _, exported = cli(capsys, "learn", "export", str(tmp_path / "out.json"), "--home", str(home))
        assert exported == {"exported": 1, "learnings": 0, "file": str(tmp_path / "out.json")}

    def test_reindex_json_is_only_json_in_a_fresh_process(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path
    ) -> None:
        """`learn reindex --json` run as a user runs it: stdout parses as JSON, the logs go to the home's log file."""
        import subprocess
        import sys

        capture(capsys, tmp_path, home)
        done = subprocess.run(
            [sys.executable, "-m", "sherpa_skills", "learn", "reindex", "--json", "--home", str(home)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["reindexed"] == 1

    def test_import_keeps_the_index_current(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path
    ) -> None:
        """Imported procedures are indexed at once: matching by meaning works without `learn reindex`."""
        capture(capsys, tmp_path, home)
        assert main(["learn", "export", str(tmp_path / "procs.json"), "--home", str(home)]) == 0
        other = tmp_path / "other"
        _, summary = cli(capsys, "learn", "import", str(tmp_path / "procs.json"), "--home", str(other))
        assert summary["indexed"] == 1 and summary["index_warning"] is None
        from sherpa_skills.skills.match.procedure_index import FILE, Snapshot

        saved = Snapshot.load(other / "index" / FILE)
        assert saved is not None and saved.coverage == (1, 1)
        assert (
            cli(capsys, "learn", "promote", summary["candidates"][0], "--home", str(other))[0] == 0
        )  # imported: review
        _, out = cli(capsys, "learn", "replay", TASK, "-p", "name=n", "--home", str(other))
        assert out["status"] == "dry-run" and out["match_mode"] == "semantic" and out["degraded"] is None
