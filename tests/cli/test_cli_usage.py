"""What a new user meets first on the command line:
a bad home, option order, limits, missing inputs, quiet logs, tables."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sherpa_skills.cli import main

pytestmark = pytest.mark.usefixtures("fresh_scripts")

WAITING = """
name: waits-for-approval
inputs:
  ticket: {required: true, description: the customer's message}
  approved: {type: boolean, description: a human's verdict}
  amount: {type: integer}
initial: draft
states:
  draft:
    transitions: [{trigger: ask, dest: approval}]
  approval:
    waiting: true
    transitions:
      - {trigger: approve, dest: sent, conditions: {context_true: {key: approved}}}
      - {trigger: reject, dest: rejected, conditions: {context_equals: {key: approved, value: false}}}
  sent: {final: true}
  rejected: {final: true}
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


@pytest.fixture(autouse=True)
def _env_home(tmp_path, monkeypatch):
    monkeypatch.setenv("SHERPA_SKILLS_HOME", str(tmp_path / "env-home"))


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


class TestHomeThatCannotBeUsed:
    def test_home_pointing_at_a_file_is_one_line_exit_2(self, tmp_path, capsys):
        """`--home FILE` names the file and says a folder is needed, instead of a FileExistsError traceback."""
        stray = tmp_path / "notes.txt"
        stray.write_text("hello\n")
        for argv in (["runs"], ["run", "replay", "-i", "query=x"], ["learn", "procedures"], ["memory", "stats"]):
            code, out, err = cli(capsys, *argv, "--home", str(stray))
            assert code == 2, argv
            assert err.strip().splitlines() == [
                f"sherpa-skills: home '{stray}' is a file, not a folder; "
                "pass --home a folder (it is created if missing)"
            ]
        assert stray.read_text() == "hello\n"

    def test_a_store_db_that_is_not_sqlite_is_one_line_exit_2(self, home, capsys):
        """A `store.db` holding something else is refused by name, and left as it was."""
        (home / "store.db").write_text("not a database, just text " * 40)
        for argv in (["runs"], ["show", "abc"], ["learn", "stats"], ["sessions", "list"]):
            code, _, err = cli(capsys, *argv, "--home", str(home))
            assert code == 2, argv
            assert "store.db' is not a usable SQLite database" in err and len(err.strip().splitlines()) == 1
        assert (home / "store.db").read_text().startswith("not a database")


class TestOptions:
    def test_home_is_accepted_before_the_command(self, write_file, tmp_path, capsys):
        """`sherpa-skills --home H runs` is the same as `sherpa-skills runs --home H`."""
        home = tmp_path / "chosen"
        code, out, _ = cli(
            capsys, "--home", str(home), "run", str(write_file("flow.yaml", WAITING)), "--json", "-i", "ticket=x"
        )
        run_id = json.loads(out)["run_id"]
        assert (home / "store.db").is_file()
        _, before, _ = cli(capsys, "--home", str(home), "runs", "--json")
        _, after, _ = cli(capsys, "runs", "--json", "--home", str(home))
        assert [r["run_id"] for r in json.loads(before)] == [r["run_id"] for r in json.loads(after)] == [run_id]

    def test_home_after_the_command_wins_over_the_one_before(self, tmp_path, capsys):
        """The option nearest the command's own arguments decides, as with any repeated option."""
        cli(capsys, "--home", str(tmp_path / "a"), "runs", "--home", str(tmp_path / "b"))
        assert (tmp_path / "b" / "store.db").is_file() and not (tmp_path / "a").exists()

    @pytest.mark.parametrize("value", ["0", "-3", "many"])
    def test_max_steps_must_be_a_positive_whole_number(self, write_file, tmp_path, capsys, value):
        """`--max-steps 0` would stop every run before its first step: refused as bad usage, nothing stored."""
        path = write_file("loop.yaml", LOOP)
        with pytest.raises(SystemExit) as stop:
            main(["run", str(path), "--max-steps", value, "--home", str(tmp_path / "home")])
        assert stop.value.code == 2
        assert "--max-steps" in capsys.readouterr().err
        assert not (tmp_path / "home").exists()


class TestMissingInput:
    def test_a_missing_required_input_is_bad_usage_printed_once(self, write_file, tmp_path, capsys):
        """No run is recorded; one line names the input and how to pass it; exit 2."""
        path = write_file("flow.yaml", WAITING)
        code, out, err = cli(capsys, "run", str(path), "--home", str(tmp_path / "home"))
        assert code == 2 and out == ""
        lines = err.strip().splitlines()
        assert lines == [
            "sherpa-skills: workflow 'waits-for-approval' needs input 'ticket' (the customer's message); "
            "pass it with --input NAME=VALUE"
        ]
        _, runs, _ = cli(capsys, "runs", "--json", "--home", str(tmp_path / "home"))
        assert json.loads(runs) == []

    def test_with_json_too_the_error_is_on_stderr_and_stdout_is_empty(self, write_file, tmp_path, capsys):
        path = write_file("flow.yaml", WAITING)
        code, out, err = cli(capsys, "run", str(path), "--json", "--home", str(tmp_path / "home"))
        assert (code, out) == (2, "")
        assert "needs input 'ticket'" in err


class TestLogsStayInTheLogFile:
    def test_a_failed_run_prints_its_error_once(self, write_file, home, capsys):
        """The summary reports the error; the `run_failed` log line goes to the run's JSON log, not the terminal."""
        path = write_file("loop.yaml", LOOP)
        code, _, err = cli(capsys, "run", str(path), "--max-steps", "2", "--home", str(home))
        assert code == 1
        assert err.count("step limit reached") == 1
        assert "run_failed" not in err and "[error" not in err
        run_id = re.search(r"run ([0-9a-f]{12})", err).group(1)
        events = [json.loads(line)["event"] for line in (home / "logs" / f"{run_id}.jsonl").read_text().splitlines()]
        assert "run_failed" in events and "run_started" in events

    def test_a_failed_run_names_its_log_file(self, write_file, home, capsys):
        """The error line ends with the path of the run's JSON log, a file that exists, not a Python object's repr."""
        path = write_file("loop.yaml", LOOP)
        code, _, err = cli(capsys, "run", str(path), "--max-steps", "2", "--home", str(home))
        assert code == 1
        run_id = re.search(r"run ([0-9a-f]{12})", err).group(1)
        logged = re.search(r"\(log: ([^)]*)\)", err.replace("\n", ""))
        assert logged and logged.group(1) == str(home / "logs" / f"{run_id}.jsonl"), err
        assert Path(logged.group(1)).is_file() and "<function" not in err

    def test_verbose_shows_the_log_lines_on_stderr(self, write_file, tmp_path, capsys):
        """-v (before or after the command) brings info lines to the terminal as well."""
        path = write_file("loop.yaml", LOOP)
        for argv in (["-v", "run", str(path)], ["run", str(path), "-v"]):
            code, _, err = cli(capsys, *argv, "--max-steps", "2", "--home", str(tmp_path / "home"))
            assert code == 1
            assert "run_started" in err and "run_failed" in err

    def test_a_successful_run_shows_no_log_lines(self, write_file, tmp_path, capsys):
        path = write_file("flow.yaml", WAITING)
        code, _, err = cli(capsys, "run", str(path), "-i", "ticket=hi", "--home", str(tmp_path / "home"))
        assert code == 0
        assert "run_started" not in err and "[info" not in err and "waiting in approval" in err


#: A structlog console line (`2026-01-01T00:00:00Z [error    ] run_failed ...`), as -v prints them.
LOG_LINE = re.compile(r"\[(debug|info|warning|error|critical)\s*\]")

SLOW_STEP = """
name: slow
inputs:
  out: {required: true}
initial: busy
states:
  busy:
    on_enter:
      shell: {command: "test -f {{ out }} || (touch {{ out }} && sleep 30)", timeout_secs: 60}
  done: {final: true}
transitions:
  - {trigger: finished, source: busy, dest: done}
"""

MEMBER_LOOP = """
name: member
max_steps: 5
initial: ready
states:
  ready:
    waiting: true
    transitions: [{trigger: go, dest: ping}]
  ping:
    transitions: [{trigger: hit, dest: pong}]
  pong:
    transitions: [{trigger: hit, dest: ping}]
"""

TEAM = """
name: pair
agents:
  solo: {workflow: member.yaml, subscribe: [go]}
initial_event: {name: go, topic: go}
"""


def run_process(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sherpa_skills", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def interrupted_run(tmp_path: Path) -> tuple[str, Path]:
    """A run SIGKILLed while its shell action ran: resuming it reruns that action (and logs a warning about it)."""
    home, marker, flow = tmp_path / "home", tmp_path / "marker", tmp_path / "slow.yaml"
    flow.write_text(SLOW_STEP)
    proc = subprocess.Popen(
        [sys.executable, "-m", "sherpa_skills", "run", str(flow), "-i", f"out={marker}", "--home", str(home)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 60
    while not marker.exists() and time.time() < deadline:
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with sqlite3.connect(home / "store.db") as conn:
        return conn.execute("SELECT run_id FROM runs").fetchone()[0], home


class TestNoLogLinesOnTheTerminalInARealProcess:
    """Without -v, log lines go to HOME/logs only: neither stdout nor stderr shows one; -v brings them to stderr."""

    @pytest.mark.slow
    def test_a_failing_run(self, write_file, tmp_path):
        path, home = str(write_file("loop.yaml", LOOP)), str(tmp_path / "home")
        for extra in ([], ["--json"], ["-q"]):
            done = run_process("run", path, "--max-steps", "2", "--home", home, *extra)
            assert done.returncode == 1
            assert not LOG_LINE.search(done.stdout + done.stderr), (extra, done.stdout, done.stderr)
        loud = run_process("run", path, "--max-steps", "2", "--home", home, "-v")
        assert loud.returncode == 1 and "run_failed" in loud.stderr and LOG_LINE.search(loud.stderr)
        assert not LOG_LINE.search(loud.stdout)

    @pytest.mark.slow
    def test_a_team_run_whose_member_fails(self, write_file, tmp_path):
        """The member's error is shown once, by the team's own lines;
        its `run_failed` line stays in the team's log file."""
        write_file("member.yaml", MEMBER_LOOP)
        team, home = str(write_file("team.yaml", TEAM)), tmp_path / "home"
        done = run_process("run", team, "--home", str(home))
        assert done.returncode == 1 and "step limit reached" in done.stderr
        assert not LOG_LINE.search(done.stdout + done.stderr), done.stderr
        assert "run_failed" in (home / "logs" / "team-pair.jsonl").read_text()
        loud = run_process("run", team, "--home", str(home), "-v")
        assert "run_failed" in loud.stderr

    @pytest.mark.slow
    def test_resuming_after_an_interrupted_action(self, tmp_path):
        run_id, home = interrupted_run(tmp_path)
        done = run_process("resume", run_id, "--home", str(home))
        assert done.returncode == 0, done.stderr
        assert "final in done" in done.stderr
        assert not LOG_LINE.search(done.stdout + done.stderr), (done.stdout, done.stderr)
        events = [json.loads(line)["event"] for line in (home / "logs" / f"{run_id}.jsonl").read_text().splitlines()]
        assert "rerunning_interrupted_actions" in events, "the warning still reaches the run's log file"

    @pytest.mark.slow
    def test_resuming_after_an_interrupted_action_with_v_shows_the_warning(self, tmp_path):
        run_id, home = interrupted_run(tmp_path)
        done = run_process("resume", run_id, "--json", "-v", "--home", str(home))
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["status"] == "final"
        assert "rerunning_interrupted_actions" in done.stderr

    @pytest.mark.slow
    def test_a_refused_resume_of_an_interrupted_action(self, tmp_path):
        """--no-rerun-interrupted stops with one message: the reason, no log line."""
        run_id, home = interrupted_run(tmp_path)
        done = run_process("resume", run_id, "--no-rerun-interrupted", "--home", str(home))
        assert done.returncode == 1 and "never recorded" in done.stderr
        assert not LOG_LINE.search(done.stdout + done.stderr), done.stderr


class TestRunsTable:
    def test_ids_are_never_cut_in_an_80_column_terminal(self, write_file, tmp_path, capsys, monkeypatch):
        """Every run id appears whole in the `runs` table, however long the workflow and state names are."""
        monkeypatch.setenv("COLUMNS", "80")
        long_flow = WAITING.replace(
            "waits-for-approval", "a-workflow-with-a-rather-long-descriptive-name-for-approvals"
        )
        path = write_file("flow.yaml", long_flow)
        home = str(tmp_path / "home")
        ids = []
        for _ in range(3):
            _, out, _ = cli(capsys, "run", str(path), "-i", "ticket=hi", "--json", "--home", home)
            ids.append(json.loads(out)["run_id"])
        code, out, _ = cli(capsys, "runs", "--home", home)
        assert code == 0
        assert all(len(line) <= 80 for line in out.splitlines())
        for run_id in ids:
            assert run_id in out


TRIAGE = str(Path(__file__).resolve().parents[2] / "examples" / "support_triage" / "workflow.yaml")


def _waiting_triage(capsys: pytest.CaptureFixture[str], home: str) -> str:
    _, out, _ = cli(capsys, "run", TRIAGE, "-i", "ticket=The app crashes on start", "--json", "--home", home)
    started = json.loads(out)
    assert (started["status"], started["state"]) == ("waiting", "respond/approval")
    return started["run_id"]


class TestTypedInputs:
    @pytest.mark.parametrize("word", ["no", "No", "false", "False", "0", "off"])
    def test_resume_with_a_no_rejects_instead_of_sending(self, tmp_path, capsys, word):
        """`approved` is a boolean input: `no`, `false`, `0`, `off` are false, so the reply is not sent."""
        home = str(tmp_path / "home")
        run_id = _waiting_triage(capsys, home)
        code, out, _ = cli(capsys, "resume", run_id, "--input", f"approved={word}", "--json", "--home", home)
        resumed = json.loads(out)
        assert code == 0
        assert (resumed["state"], resumed["context"]["approved"], resumed["context"]["outcome"]) == (
            "rejected",
            False,
            "rejected",
        )

    @pytest.mark.parametrize("word", ["yes", "true", "1", "on"])
    def test_resume_with_a_yes_sends(self, tmp_path, capsys, word):
        home = str(tmp_path / "home")
        run_id = _waiting_triage(capsys, home)
        _, out, _ = cli(capsys, "resume", run_id, "--input", f"approved={word}", "--json", "--home", home)
        assert (json.loads(out)["state"], json.loads(out)["context"]["approved"]) == ("sent", True)

    def test_a_value_that_is_not_a_boolean_is_refused_and_the_run_still_waits(self, tmp_path, capsys):
        """`approved=maybe` names the input and what it accepts, exit 2;
        the run is untouched and can still be answered."""
        home = str(tmp_path / "home")
        run_id = _waiting_triage(capsys, home)
        code, out, err = cli(capsys, "resume", run_id, "--input", "approved=maybe", "--home", home)
        assert (code, out) == (2, "")
        assert (
            err.strip()
            == "sherpa-skills: input 'approved' must be a boolean (yes/no, true/false, 1/0 or on/off), got 'maybe'"
        )
        _, shown, _ = cli(capsys, "show", run_id, "--json", "--home", home)
        # untouched: a declared input not given is None from the start, and the refused value never landed
        assert (json.loads(shown)["status"], json.loads(shown)["belief"]["context"].get("approved")) == (
            "waiting",
            None,
        )
        _, out, _ = cli(capsys, "resume", run_id, "--input", "approved=yes", "--json", "--home", home)
        assert json.loads(out)["state"] == "sent"

    def test_an_unknown_input_is_refused_with_did_you_mean(self, tmp_path, capsys):
        home = str(tmp_path / "home")
        run_id = _waiting_triage(capsys, home)
        code, _, err = cli(capsys, "resume", run_id, "--input", "aproved=yes", "--home", home)
        assert code == 2
        assert "has no input 'aproved'; did you mean 'approved'?" in err
        code, _, err = cli(capsys, "run", TRIAGE, "-i", "ticket=hi", "-i", "tciket=hi", "--home", home)
        assert code == 2 and "did you mean 'ticket'?" in err

    @pytest.mark.parametrize(
        ("raw", "message"),
        [
            ("amount=abc", "input 'amount' must be an integer, got 'abc'"),
            ("amount=2.5", "input 'amount' must be an integer (a whole number), got '2.5'"),
            ("amount=true", "input 'amount' must be an integer, got 'true'"),
        ],
    )
    def test_an_integer_input_that_is_not_one_is_refused_before_the_run(
        self, write_file, tmp_path, capsys, raw, message
    ):
        path = write_file("flow.yaml", WAITING)
        code, _, err = cli(capsys, "run", str(path), "-i", "ticket=x", "-i", raw, "--home", str(tmp_path / "home"))
        assert code == 2
        assert err.strip() == f"sherpa-skills: {message}"
        assert (
            not (tmp_path / "home" / "store.db").exists()
            or json.loads(cli(capsys, "runs", "--json", "--home", str(tmp_path / "home"))[1]) == []
        )

    def test_typed_inputs_are_converted_and_untyped_ones_parsed_as_json(self, write_file, tmp_path, capsys):
        """`amount=12` is 12; `ticket=007` (untyped) stays JSON-or-text as before."""
        path = write_file("flow.yaml", WAITING)
        _, out, _ = cli(
            capsys,
            "run",
            str(path),
            "-i",
            "ticket=[1, 2]",
            "-i",
            "amount=12",
            "--json",
            "--home",
            str(tmp_path / "home"),
        )
        context = json.loads(out)["context"]
        assert (context["ticket"], context["amount"]) == ([1, 2], 12)


class TestTriggerWhileWaiting:
    def test_trigger_approve_alone_sends(self, tmp_path, capsys):
        """The README's `resume RUN_ID --trigger approve`: a human decision, no input needed."""
        home = str(tmp_path / "home")
        run_id = _waiting_triage(capsys, home)
        code, out, _ = cli(capsys, "resume", run_id, "--trigger", "approve", "--json", "--home", home)
        assert (code, json.loads(out)["state"], json.loads(out)["user_decisions"]) == (0, "sent", 1)

    def test_trigger_reject_alone_rejects(self, tmp_path, capsys):
        home = str(tmp_path / "home")
        run_id = _waiting_triage(capsys, home)
        _, out, _ = cli(capsys, "resume", run_id, "--trigger", "reject", "--json", "--home", home)
        assert json.loads(out)["state"] == "rejected"

    def test_resume_without_input_or_trigger_keeps_waiting(self, tmp_path, capsys):
        """Nobody decided: both ways are open, so the run does not pick one by itself."""
        home = str(tmp_path / "home")
        run_id = _waiting_triage(capsys, home)
        code, out, _ = cli(capsys, "resume", run_id, "--json", "--home", home)
        assert (code, json.loads(out)["status"], json.loads(out)["state"]) == (0, "waiting", "respond/approval")
        assert sorted(json.loads(out)["available_triggers"]) == ["approve", "reject"]


def _stored(home: str, run_id: str) -> tuple:
    """What the store holds of a run: a refused resume must leave every part of it as it was."""
    from sherpa_skills.engine.runstore import RunStore

    store = RunStore(home=home)
    row = store.get_run(run_id)
    belief = store.load_belief(run_id)
    store.close()
    return (
        row.status,
        row.state,
        row.tick,
        row.counters,
        row.error,
        row.updated,
        len(belief.trajectory),
        len(belief.log),
        belief.context,
    )


class TestRefusedResume:
    def test_a_mistyped_trigger_is_a_usage_error_that_changes_nothing(self, tmp_path, capsys):
        """`resume RUN --trigger aprove`: exit 2 naming the triggers of the current state;
        the run stays waiting, untouched."""
        home = str(tmp_path / "home")
        run_id = _waiting_triage(capsys, home)
        before = _stored(home, run_id)
        code, out, err = cli(capsys, "resume", run_id, "--trigger", "aprove", "--json", "--home", home)
        assert (code, out) == (2, "")
        assert "trigger 'aprove' is not available in state 'respond/approval'" in err
        assert "available: approve, reject" in err and "did you mean 'approve'?" in err
        assert _stored(home, run_id) == before
        code, out, _ = cli(capsys, "resume", run_id, "--trigger", "approve", "--json", "--home", home)
        assert (code, json.loads(out)["state"]) == (0, "sent")

    def test_a_trigger_its_guards_refuse_is_a_usage_error_judged_with_the_given_input(self, tmp_path, capsys):
        """`--input approved=no --trigger approve`: with that input only reject is open;
        refused, nothing stored (not even the input)."""
        home = str(tmp_path / "home")
        run_id = _waiting_triage(capsys, home)
        before = _stored(home, run_id)
        code, out, err = cli(capsys, "resume", run_id, "--input", "approved=no", "--trigger", "approve", "--home", home)
        assert (code, out) == (2, "")
        assert "trigger 'approve' is not available in state 'respond/approval'; available: reject" in err
        assert _stored(home, run_id) == before
        code, out, _ = cli(
            capsys, "resume", run_id, "--input", "approved=no", "--trigger", "reject", "--json", "--home", home
        )
        assert (code, json.loads(out)["state"]) == (0, "rejected")

    def test_an_unknown_input_at_resume_is_a_usage_error_that_changes_nothing(self, tmp_path, capsys):
        """`resume RUN --input aproved=yes` on a workflow that declares its inputs: exit 2, the run as it was."""
        home = str(tmp_path / "home")
        run_id = _waiting_triage(capsys, home)
        before = _stored(home, run_id)
        code, out, err = cli(capsys, "resume", run_id, "--input", "aproved=yes", "--json", "--home", home)
        assert (code, out) == (2, "")
        assert "has no input 'aproved'; did you mean 'approved'?" in err
        assert _stored(home, run_id) == before
        code, out, _ = cli(capsys, "resume", run_id, "--input", "approved=yes", "--json", "--home", home)
        assert (code, json.loads(out)["state"]) == (0, "sent")


class TestValidateJson:
    def test_validate_json_reports_each_file_with_its_problems(self, write_file, capsys):
        """`validate --json` prints one object:
        ok, and per file its kind and problems (file, line, message); exit 2 if any."""
        good = str(Path(__file__).resolve().parents[2] / "examples" / "critic_loop" / "team.yaml")
        bad = write_file("bad.yaml", "name: bad\ninitial: a\nstates:\n  a:\n    on_enter: [launch]\n    final: true\n")
        code, out, err = cli(capsys, "validate", "--json", good, str(bad), "planner")
        assert (code, err) == (2, "")
        report = json.loads(out)
        assert report["ok"] is False
        assert [(f["file"], f["kind"], f["ok"]) for f in report["files"]] == [
            (good, "team", True),
            (str(bad), "workflow", False),
            ("planner", "workflow", True),
        ]
        problem = report["files"][1]["problems"][0]
        assert (problem["file"], problem["line"]) == (str(bad), 5) and problem["message"].startswith(
            "unknown action 'launch'"
        )

    def test_validate_json_all_good_exits_0(self, capsys):
        code, out, _ = cli(capsys, "validate", "--json", "planner", "replay")
        assert code == 0 and json.loads(out)["ok"] is True


class TestHeartbeatProgress:
    def test_on_a_terminal_the_heartbeat_shows_its_phases_on_stderr(self, tmp_path):
        """A long heartbeat is not silent:
        on a terminal each phase is ticked off and a spinner shows it is still working."""
        import os
        import pty
        import subprocess
        import sys

        parent, child = pty.openpty()
        proc = subprocess.Popen(
            [sys.executable, "-m", "sherpa_skills.cli", "heartbeat", "--once", "--home", str(tmp_path / "home")],
            stdin=child,
            stdout=subprocess.DEVNULL,
            stderr=child,
            env={**os.environ, "COLUMNS": "100", "TERM": "xterm"},
        )
        os.close(child)
        seen = b""
        while True:
            try:
                chunk = os.read(parent, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        assert proc.wait(timeout=120) == 0
        text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", seen.decode(errors="replace"))
        assert "✓ extract" in text and "✓ maintenance" in text and "heartbeat: crystallise" in text

    def test_with_json_stderr_has_no_progress(self, capsys, tmp_path):
        code, out, err = cli(capsys, "heartbeat", "--once", "--json", "--home", str(tmp_path / "home"))
        assert code == 0 and json.loads(out)["status"] == "ran"
        assert "heartbeat:" not in err


class TestHostileFiles:
    def test_yaml_nested_too_deeply_is_a_problem_not_a_crash(self, write_file, capsys):
        path = write_file("deep.yaml", "a: " + "[" * 3000 + "]" * 3000 + "\n")
        for command in ("validate", "graph", "run"):
            code, _, err = cli(capsys, command, str(path))
            assert code == 2
            assert "unexpected error" not in err
        code, out, _ = cli(capsys, "validate", str(path))
        assert out.strip() == f"{path}:1: nested more than 100 levels deep"

    def test_a_name_too_long_for_a_path_is_reported(self, tmp_path, capsys):
        """A path over the system's limit is a file that cannot be read, for workflows and session imports alike."""
        name = "x" * 5000
        code, out, _ = cli(capsys, "validate", name)
        assert code == 2 and "cannot read" in out
        code, _, err = cli(capsys, "sessions", "import", name, "--home", str(tmp_path / "home"))
        assert code in (0, 1) and "unexpected error" not in err and "File name too long" in err

    def test_a_path_that_cannot_be_written_is_one_line(self, tmp_path, capsys):
        """`learn export FOLDER` names the path and the reason, exit 2, instead of an IsADirectoryError traceback."""
        code, _, err = cli(capsys, "learn", "export", str(tmp_path), "--home", str(tmp_path / "home"))
        assert code == 2 and err.strip() == f"sherpa-skills: '{tmp_path}': Is a directory"


class TestModelOption:
    def test_a_scripted_model_path_on_the_command_line_is_relative_to_where_the_user_stands(
        self, write_file, tmp_path, monkeypatch, capsys
    ):
        """`--model scripted/scripts/pick.yaml` from the current folder, not from the workflow's own folder."""
        write_file(
            "flows/pick.yaml",
            "name: pick\npolicy: {type: llm}\ninitial: a\nstates:\n  a:\n"
            "    transitions: [{trigger: left, dest: l}, {trigger: right, dest: r}]\n  l: {final: "
            "true}\n  r: {final: true}\n",
        )
        write_file(
            "scripts/pick.yaml",
            'answers:\n  - match: "Current state"\n    respond: \'{"trigger": "right", "args": {}, "reason": "r"}\'\n',
        )
        monkeypatch.chdir(tmp_path)
        code, out, err = cli(
            capsys,
            "run",
            "flows/pick.yaml",
            "--model",
            "scripted/scripts/pick.yaml",
            "--json",
            "--home",
            str(tmp_path / "home"),
        )
        assert (code, json.loads(out)["state"]) == (0, "r"), err
