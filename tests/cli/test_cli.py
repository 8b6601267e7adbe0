"""The `sherpa-skills` command: run/resume/runs/show with --json, graph, the home folder,
per-run logs, and clean errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sherpa_skills.cli import main

pytestmark = pytest.mark.usefixtures("fresh_scripts")

FLOW = """
name: cli_flow
initial: intake
llm:
  model: scripted/script.yaml
policy:
  type: chain
  rules:
    - {state: intake, trigger: classify, args: {label: bug}}
states:
  intake:
    transitions:
      - trigger: classify
        dest: routing
        arguments: {label: {enum: [bug, feature]}}
        after: {set: {label: {from_arg: label}}}
      - {trigger: drop, dest: closed}
  routing:
    transitions:
      - {trigger: escalate, dest: review}
      - {trigger: answer, dest: closed}
  review:
    waiting: true
    transitions:
      - {trigger: approve, dest: closed, conditions: {context_true: {key: approved}}}
      - {trigger: reopen, dest: intake, unless: {context_true: {key: approved}}, arguments: {why: {type: string}}}
  closed:
    final: true
"""

SCRIPT = """answers:
  - match: "Current state: routing"
    respond: '{"trigger": "escalate", "args": {}, "reason": "needs a human"}'
"""

LOOP = """
name: loop
initial: ping
states:
  ping:
    transitions: [{trigger: hit, dest: pong}]
  pong:
    transitions: [{trigger: hit, dest: ping}]
"""

NESTED = """
name: nested
description: a build with a nested work state
initial: work
states:
  work:
    initial: compile
    states:
      compile:
        transitions: [{trigger: compiled, dest: test}]
      test:
        transitions: [{trigger: passed, dest: done}]
    transitions:
      - {trigger: abort, dest: failed, conditions: {context_true: {key: broken}}}
  done:
    final: true
  failed:
    final: true
"""

RESULT_KEYS = {"run_id", "status", "state", "llm_calls", "fast_forwards", "rule_decisions", "tokens"}


@pytest.fixture(autouse=True)
def _env_home(tmp_path, monkeypatch):
    """No test touches the real ~/.sherpa-skills:
    the environment points at a temporary home unless a test says otherwise."""
    monkeypatch.setenv("SHERPA_SKILLS_HOME", str(tmp_path / "env-home"))


@pytest.fixture
def flow(write_file) -> Path:
    write_file("script.yaml", SCRIPT)
    return write_file("flow.yaml", FLOW)


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code, out, err = cli(capsys, *argv)
    assert "Traceback" not in err
    return code, json.loads(out)


class TestRun:
    def test_run_json_prints_one_object_with_the_result_and_counters(self, flow, tmp_path, capsys):
        """`run --json` prints a single JSON object:
        id, status, state and the decision/token counters; waiting exits 0."""
        code, result = cli_json(capsys, "run", str(flow), "--json", "--home", str(tmp_path / "home"))
        assert code == 0
        assert RESULT_KEYS <= set(result)
        assert (result["status"], result["state"]) == ("waiting", "review")
        assert (result["rule_decisions"], result["llm_calls"], result["fast_forwards"]) == (1, 1, 0)
        assert result["tokens"] > 0
        assert result["context"]["label"] == "bug"

    def test_run_to_a_final_state_exits_0(self, write_file, tmp_path, capsys):
        """A run that reaches a final state exits 0 with status final; fast-forwards are counted."""
        path = write_file("nested.yaml", NESTED)
        code, result = cli_json(capsys, "run", str(path), "--json", "--home", str(tmp_path / "home"))
        assert code == 0
        assert (result["status"], result["state"], result["fast_forwards"]) == ("final", "done", 2)

    def test_a_failed_run_exits_non_zero_with_status_error(self, write_file, tmp_path, capsys):
        """A run stopped by the step limit prints status error and the reason, and exits 1."""
        path = write_file("loop.yaml", LOOP)
        code, result = cli_json(
            capsys, "run", str(path), "--json", "--max-steps", "3", "--home", str(tmp_path / "home")
        )
        assert code == 1
        assert result["status"] == "error"
        assert "step limit reached (3 steps)" in result["error"]

    def test_inputs_are_parsed_as_json_when_they_can_be(self, write_file, tmp_path, capsys):
        """`--input k=v` gives numbers and booleans as JSON values, anything else as text."""
        path = write_file("nested.yaml", NESTED)
        code, result = cli_json(
            capsys,
            "run",
            str(path),
            "--json",
            "--home",
            str(tmp_path / "home"),
            "--input",
            "n=3",
            "--input",
            "flag=true",
            "--input",
            "who=Ada Lovelace",
        )
        assert code == 0
        assert {k: result["context"][k] for k in ("n", "flag", "who")} == {"n": 3, "flag": True, "who": "Ada Lovelace"}

    def test_progress_without_json_goes_to_stderr(self, write_file, tmp_path, capsys):
        """Without --json the run shows progress and a summary on stderr, and stdout stays empty."""
        path = write_file("nested.yaml", NESTED)
        code, out, err = cli(capsys, "run", str(path), "--home", str(tmp_path / "home"))
        assert code == 0
        assert out == ""
        assert "final" in err and "done" in err


class TestResumeRunsShow:
    def test_resume_with_input_finishes_a_waiting_run(self, flow, tmp_path, capsys):
        """`resume RUN_ID --input approved=true --json` continues the waiting run to its final state."""
        home = str(tmp_path / "home")
        _, started = cli_json(capsys, "run", str(flow), "--json", "--home", home)
        code, resumed = cli_json(
            capsys, "resume", started["run_id"], "--input", "approved=true", "--json", "--home", home
        )
        assert code == 0
        assert (resumed["run_id"], resumed["status"], resumed["state"]) == (started["run_id"], "final", "closed")
        assert resumed["llm_calls"] == 1 and resumed["rule_decisions"] == 1

    def test_resume_with_a_trigger_and_arguments(self, flow, tmp_path, capsys):
        """`resume --trigger reopen --arg why=...` fires that transition; the run comes back to waiting."""
        home = str(tmp_path / "home")
        _, started = cli_json(capsys, "run", str(flow), "--json", "--home", home)
        code, resumed = cli_json(
            capsys, "resume", started["run_id"], "--trigger", "reopen", "--arg", "why=unclear", "--json", "--home", home
        )
        assert code == 0
        assert (resumed["status"], resumed["state"]) == ("waiting", "review")
        assert (resumed["user_decisions"], resumed["rule_decisions"], resumed["llm_calls"]) == (1, 2, 2)

    def test_runs_json_lists_the_runs_of_this_home(self, flow, write_file, tmp_path, capsys):
        """`runs --json` lists every run with its status and state."""
        home = str(tmp_path / "home")
        _, first = cli_json(capsys, "run", str(flow), "--json", "--home", home)
        _, second = cli_json(capsys, "run", str(write_file("nested.yaml", NESTED)), "--json", "--home", home)
        code, runs = cli_json(capsys, "runs", "--json", "--home", home)
        assert code == 0
        by_id = {r["run_id"]: r for r in runs}
        assert set(by_id) == {first["run_id"], second["run_id"]}
        assert (by_id[first["run_id"]]["status"], by_id[first["run_id"]]["state"]) == ("waiting", "review")
        assert (by_id[second["run_id"]]["workflow"], by_id[second["run_id"]]["status"]) == ("nested", "final")

    def test_show_json_gives_the_run_and_its_belief(self, flow, tmp_path, capsys):
        """`show RUN_ID --json` has the status, the counters and the whole belief: trajectory, log and context."""
        home = str(tmp_path / "home")
        _, started = cli_json(capsys, "run", str(flow), "--json", "--home", home)
        code, shown = cli_json(capsys, "show", started["run_id"], "--json", "--home", home)
        assert code == 0
        assert (shown["run_id"], shown["status"], shown["state"], shown["workflow"]) == (
            started["run_id"],
            "waiting",
            "review",
            "cli_flow",
        )
        assert shown["workflow_path"] == str(flow.resolve())
        trajectory = [(t["state"], t["trigger"], t["decided_by"]) for t in shown["belief"]["trajectory"]]
        assert trajectory == [("intake", None, "start"), ("routing", "classify", "rule"), ("review", "escalate", "llm")]
        assert [e["action"] for e in shown["belief"]["log"]] == ["set", "policy:llm"]
        assert shown["belief"]["context"]["label"] == "bug"
        assert shown["llm_calls"] == 1

    def test_show_without_json_prints_the_trajectory(self, flow, tmp_path, capsys):
        """The human view of `show` names the run, its states and its actions."""
        home = str(tmp_path / "home")
        _, started = cli_json(capsys, "run", str(flow), "--json", "--home", home)
        code, out, _ = cli(capsys, "show", started["run_id"], "--home", home)
        assert code == 0
        assert started["run_id"] in out and "routing" in out and "escalate" in out


class TestGraph:
    def test_graph_prints_a_mermaid_state_diagram_with_nested_blocks(self, write_file, capsys):
        """`graph` prints stateDiagram-v2, a `state X {` block per compound state, and the transitions."""
        code, out, _ = cli(capsys, "graph", str(write_file("nested.yaml", NESTED)))
        assert code == 0
        lines = out.splitlines()
        assert lines[0] == "stateDiagram-v2"
        assert "state work {" in [line.strip() for line in lines]
        assert any("compiled" in line and "-->" in line for line in lines)
        assert any(line.strip().endswith("--> [*]") for line in lines)


class TestHome:
    def test_the_home_option_chooses_where_runs_are_stored(self, write_file, tmp_path, capsys):
        """--home puts store.db there, and the environment's home stays untouched."""
        home = tmp_path / "chosen"
        _, result = cli_json(capsys, "run", str(write_file("nested.yaml", NESTED)), "--json", "--home", str(home))
        assert (home / "store.db").is_file()
        _, runs = cli_json(capsys, "runs", "--json", "--home", str(home))
        assert [r["run_id"] for r in runs] == [result["run_id"]]
        _, env_runs = cli_json(capsys, "runs", "--json")
        assert env_runs == []

    def test_sherpa_skills_home_is_used_without_the_option(self, write_file, tmp_path, monkeypatch, capsys):
        """With no --home, SHERPA_SKILLS_HOME decides where the store lives."""
        home = tmp_path / "from-env"
        monkeypatch.setenv("SHERPA_SKILLS_HOME", str(home))
        _, result = cli_json(capsys, "run", str(write_file("nested.yaml", NESTED)), "--json")
        assert (home / "store.db").is_file()
        _, runs = cli_json(capsys, "runs", "--json")
        assert [r["run_id"] for r in runs] == [result["run_id"]]

    def test_each_run_writes_a_json_log_file_under_home_logs(self, flow, home, capsys):
        """HOME/logs/RUN_ID.jsonl holds the run's structured log, one JSON object a line, bound to its run id."""
        _, result = cli_json(capsys, "run", str(flow), "--json", "--home", str(home))
        log_file = home / "logs" / f"{result['run_id']}.jsonl"
        assert log_file.is_file()
        events = [json.loads(line) for line in log_file.read_text(encoding="utf-8").splitlines()]
        assert events
        stopped = [e for e in events if e.get("event") == "run_stopped"]
        assert stopped and stopped[-1]["run_id"] == result["run_id"] and stopped[-1]["status"] == "waiting"


class TestErrors:
    def test_a_missing_workflow_file_is_one_message(self, tmp_path, capsys):
        """`run` on a file that does not exist says so, exit 2, no traceback."""
        code, out, err = cli(capsys, "run", str(tmp_path / "absent.yaml"), "--home", str(tmp_path / "home"))
        assert code == 2
        assert "absent.yaml:1: no such file" in err
        assert "Traceback" not in err + out

    def test_an_invalid_workflow_is_refused_before_running(self, write_file, tmp_path, capsys):
        """`run` on a broken workflow prints its problems as FILE:LINE: message and exits 2."""
        path = write_file(
            "broken.yaml", "name: broken\ninitial: a\nstates:\n  a:\n    on_enter: [launch]\n    final: true\n"
        )
        code, out, err = cli(capsys, "run", str(path), "--json", "--home", str(tmp_path / "home"))
        assert code == 2
        assert f"{path}:5: unknown action 'launch'" in err
        assert "Traceback" not in err and out == ""

    def test_an_unknown_run_id_is_one_message(self, tmp_path, capsys):
        """`resume`, `show` and `runs delete` of an unknown run name it and point at `runs`, exit 2 (usage)."""
        for command in (("resume",), ("show",), ("runs", "delete")):
            code, out, err = cli(capsys, *command, "nope", "--home", str(tmp_path / "home"))
            assert code == 2
            assert "no run 'nope'" in err and "sherpa-skills runs" in err
            assert "Traceback" not in err + out

    def test_a_bad_input_assignment_is_a_usage_error(self, write_file, tmp_path, capsys):
        """`--input` without `=` is refused with a message saying the expected shape."""
        code, _, err = cli(
            capsys, "run", str(write_file("nested.yaml", NESTED)), "--input", "oops", "--home", str(tmp_path / "home")
        )
        assert code == 2
        assert "--input 'oops' is not NAME=VALUE" in err

    def test_errors_from_a_real_process_have_no_traceback(self, write_file, tmp_path):
        """In a real process, a failing run and an unknown run id both end with a message and an exit code."""
        path = write_file("loop.yaml", LOOP)
        home = str(tmp_path / "home")
        run = subprocess.run(
            [sys.executable, "-m", "sherpa_skills.cli", "run", str(path), "--json", "--max-steps", "2", "--home", home],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode == 1
        assert json.loads(run.stdout)["status"] == "error"
        assert "Traceback" not in run.stderr
        show = subprocess.run(
            [sys.executable, "-m", "sherpa_skills.cli", "show", "nope", "--home", home],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert show.returncode == 2
        assert "no run 'nope'" in show.stderr and "Traceback" not in show.stderr
