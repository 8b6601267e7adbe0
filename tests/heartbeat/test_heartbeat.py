"""The heartbeat: lock, watermark, isolated phases and the report, with real processes and a real store."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from sherpa_skills.cli import main
from sherpa_skills.errors import UsageError
from sherpa_skills.heartbeat.runner import parse_every, run_every, run_once
from sherpa_skills.heartbeat.state import HeartbeatState
from sherpa_skills.skills.store.database import ProcedureDatabase
from sherpa_skills.skills.store.models import CapturedProcedure, Execution, ProcedureStep


def claude_session(path: Path, commands: list[tuple[str, str, bool]], session: str = "s1", cwd: str = "/w") -> Path:
    """A Claude Code transcript: each Bash tool_use and its tool_result."""
    lines = []
    for i, (command, result, is_error) in enumerate(commands, 1):
        ts = f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z"
        lines.append(
            {
                "type": "assistant",
                "sessionId": session,
                "cwd": cwd,
                "timestamp": ts,
                "uuid": f"{session}-a{i}",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": f"{session}-t{i}", "name": "Bash", "input": {"command": command}}
                    ],
                },
            }
        )
        lines.append(
            {
                "type": "user",
                "sessionId": session,
                "cwd": cwd,
                "timestamp": ts,
                "uuid": f"{session}-u{i}",
                "message": {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": f"{session}-t{i}",
                            "content": result,
                            "is_error": is_error,
                        }
                    ],
                },
            }
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.fixture
def home(home: Path, tmp_path: Path) -> Path:
    """The shared home (conftest.py), its config watching a sessions folder holding one session."""
    sessions = tmp_path / "sessions"
    claude_session(
        sessions / "one.jsonl",
        [
            ("npm ci", "added 12 packages", False),
            ("npm run build", "built", False),
            ("npm test", "Exit code 1\n2 failed", True),
        ],
    )
    # The same routine in an earlier session: it recurs, so mining proposes it.
    claude_session(
        sessions / "zero.jsonl",
        [("npm ci", "added 12 packages", False), ("npm run build", "built", False)],
        session="s0",
    )
    (home / "config.yaml").write_text(f"sessions:\n  watch:\n    - path: {sessions}\n      format: claude-code\n")
    return home


def heartbeat(home: Path, capsys: pytest.CaptureFixture[str], code: int = 0) -> dict[str, Any]:
    assert main(["heartbeat", "--once", "--json", "--home", str(home)]) == code
    return json.loads(capsys.readouterr().out)


class TestOnce:
    def test_runs_every_phase_and_reports_structured_results(
        self, home: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """status ran, four phases each with status/summary/stats/alerts,
        and the watermark moved past the new commands."""
        report = heartbeat(home, capsys)
        assert report["status"] == "ran"
        assert list(report["phases"]) == ["extract", "crystallise", "health", "maintenance", "memory"]
        for phase in report["phases"].values():
            assert {"status", "summary", "stats", "alerts"} <= set(phase) and phase["status"] == "ok"
        assert report["phases"]["extract"]["stats"]["commands"] == 5
        assert report["phases"]["crystallise"]["stats"]["new_candidates"] == 1
        assert report["phases"]["crystallise"]["stats"]["learnings"] == 1
        assert (report["watermark_before"], report["watermark"]) == (0, 5)

    def test_nothing_new_moves_nothing(self, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A second heartbeat reads no new line and mines nothing."""
        heartbeat(home, capsys)
        again = heartbeat(home, capsys)
        assert again["phases"]["extract"]["stats"]["commands"] == 0
        assert again["phases"]["crystallise"]["summary"] == "nothing new to mine"
        assert again["watermark"] == 5

    def test_only_new_lines_of_a_growing_session_are_mined(
        self, home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Appending to a session file: the next heartbeat imports and mines only what was added."""
        heartbeat(home, capsys)
        claude_session(
            tmp_path / "sessions" / "one.jsonl", [("make", "ok", False), ("make install", "ok", False)], session="s2"
        )
        report = heartbeat(home, capsys)
        assert report["phases"]["extract"]["stats"]["commands"] == 2
        assert (report["watermark_before"], report["watermark"]) == (5, 7)

    def test_a_third_logged_success_promotes_nothing(
        self, home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The routine succeeds in a third session: it stays a candidate for a person, its logged successes claims."""
        heartbeat(home, capsys)
        claude_session(
            tmp_path / "sessions" / "two.jsonl",
            [("npm ci", "added 12 packages", False), ("npm run build", "built", False)],
            session="s2",
        )
        report = heartbeat(home, capsys)
        crystallise = report["phases"]["crystallise"]
        assert crystallise["status"] == "ok" and "promoted" not in crystallise["stats"]
        assert not any("promoted" in alert for alert in crystallise["alerts"])
        from sherpa_skills.skills.store.database import ProcedureDatabase

        mined = ProcedureDatabase(home=home).procedures(status=None)
        assert mined and {(p.status, p.success_count) for p in mined} == {("candidate", 0)}
        assert max(p.claimed_successes for p in mined) >= 3

    def test_report_is_stored_as_markdown_and_json(self, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """`heartbeat report --last 2` shows stored reports, newest first in JSON."""
        heartbeat(home, capsys)
        heartbeat(home, capsys)
        assert main(["heartbeat", "report", "--last", "2", "--json", "--home", str(home)]) == 0
        reports = json.loads(capsys.readouterr().out)
        assert len(reports) == 2 and reports[0]["id"] > reports[1]["id"]
        assert main(["heartbeat", "report", "--home", str(home)]) == 0
        assert "| extract | ok |" in capsys.readouterr().out


class TestIsolation:
    def test_a_failing_extract_skips_mining_keeps_the_watermark_and_runs_the_rest(
        self, home: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """An unknown session format fails extract; crystallise is skipped, health and maintenance still run."""
        (home / "config.yaml").write_text(f"sessions:\n  watch:\n    - path: {home}\n      format: no-such-format\n")
        report = heartbeat(home, capsys, code=1)
        assert report["status"] == "partial"
        assert report["phases"]["extract"]["status"] == "failed"
        assert report["phases"]["crystallise"]["status"] == "skipped"
        assert report["phases"]["health"]["status"] == "ok" and report["phases"]["maintenance"]["status"] == "ok"
        assert report["watermark"] == report["watermark_before"] == 0
        assert any("extract failed" in a for a in report["alerts"])

    def test_a_failing_maintenance_does_not_lose_the_mined_work(
        self, home: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """An index path that is a file breaks maintenance only: extract's watermark still advances."""
        (home / "index").write_text("not a folder")
        report = heartbeat(home, capsys, code=1)
        assert report["status"] == "partial"
        assert report["phases"]["maintenance"]["status"] == "failed"
        assert report["phases"]["crystallise"]["status"] == "ok"
        assert report["watermark"] == 5


class TestHealth:
    def test_a_broken_procedure_is_pulled_and_marked_for_relearning_with_an_alert(
        self, home: Path, capsys: pytest.CaptureFixture[str], procedure_db: ProcedureDatabase
    ) -> None:
        """Failures push the rolling rate below 0.5: the heartbeat marks it needs-relearning and says so."""
        store = procedure_db
        p = store.add_procedure(
            CapturedProcedure(
                id="",
                task_type="deploy",
                success_count=1,
                steps=[ProcedureStep(command="make"), ProcedureStep(command="make deploy")],
            )
        )
        for _ in range(3):
            store.record_execution(
                Execution(
                    procedure_id=p.id,
                    version=1,
                    started=time.time(),
                    ended=time.time(),
                    outcome="diverged",
                    reason="exit code 2, expected 0",
                )
            )
        report = heartbeat(home, capsys)
        assert any(p.id in a and "re-learning" in a for a in report["alerts"])
        assert store.health(p.id).status == "needs-relearning"
        assert main(["learn", "health", "--json", "--home", str(home)]) == 0
        statuses = {h["procedure_id"]: h["status"] for h in json.loads(capsys.readouterr().out)}
        assert statuses[p.id] == "needs-relearning"


HEARTBEAT = [sys.executable, "-m", "sherpa_skills.cli", "heartbeat", "--once", "--json"]


def held_heartbeat(phase: str, seconds: float) -> list[str]:
    """A heartbeat process whose `phase` is held open by a phase hook (the documented fault hook, set in-process)."""
    code = (
        "import sys, time\nfrom sherpa_skills.heartbeat import phases\n"
        f"phases.on_phase_start(lambda p: time.sleep({seconds}) if p == {phase!r} else None)\n"
        "from sherpa_skills.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    )
    return [sys.executable, "-c", code, "heartbeat", "--once", "--json"]


def lock_row(home: Path) -> tuple[Any, ...] | None:
    try:
        with sqlite3.connect(home / "store.db") as conn:
            return conn.execute("SELECT run_id, pid FROM heartbeat_lock").fetchone()
    except sqlite3.Error:
        return None


@pytest.mark.slow
def test_two_heartbeats_at_once_exactly_one_runs(home: Path) -> None:
    """Started together (the first held in extract), one runs and the other skips."""
    procs = [
        subprocess.Popen(
            [*held_heartbeat("extract", 2), "--home", str(home)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = [p.communicate(timeout=120) for p in procs]
    for proc, (_out, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, f"a heartbeat failed (exit {proc.returncode}):\n{err[-3000:]}"
    outs = [json.loads(out) for out, _ in results]
    assert sorted(o["status"] for o in outs) == ["ran", "skipped"], [err[-3000:] for _, err in results]


@pytest.mark.slow
def test_killed_mid_phase_leaves_a_stale_lock_that_the_next_one_resets(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """kill -9 during crystallise: the lock stays, the watermark does not move;
    the next heartbeat resets the lock and mines it all."""
    proc = subprocess.Popen(
        [*held_heartbeat("crystallise", 60), "--home", str(home)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.time() + 60
    while lock_row(home) is None and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # inside the paused phase by now
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert lock_row(home) is not None
    state = HeartbeatState(home=home)
    assert state.get("sessions_watermark", 0) == 0
    state.close()

    report = heartbeat(home, capsys)
    assert report["status"] == "ran"
    assert report["lock"]["how"] == "reset" and report["lock"]["holder"]["pid"] == proc.pid
    assert (report["watermark_before"], report["watermark"]) == (0, 5)
    assert report["phases"]["crystallise"]["stats"]["commands"] == 5
    assert lock_row(home) is None


def test_a_live_lock_younger_than_ten_minutes_is_respected(home: Path) -> None:
    """Held by this (live) process: skipped; the same lock from a gone process: reset."""
    state = HeartbeatState(home=home)
    assert state.acquire("holder", 600).acquired
    assert run_once(home)["status"] == "skipped"
    state.conn.execute("UPDATE heartbeat_lock SET pid = 999999999")
    assert run_once(home)["lock"]["how"] == "reset"
    state.close()


def test_every_runs_on_a_schedule(home: Path) -> None:
    """The scheduler runs a heartbeat, waits the rest of the period, and runs again."""
    reports: list[dict[str, Any]] = []
    waits: list[float] = []
    assert run_every(home, 60, reports.append, sleep=waits.append, max_runs=2) == 2
    assert [r["status"] for r in reports] == ["ran", "ran"] and len(waits) == 1 and 0 < waits[0] <= 60
    assert parse_every("1h30m").seconds == 5400 and parse_every("45s").seconds == 45
    with pytest.raises(UsageError, match="not a duration"):
        parse_every("soon")


class TestCronSchedule:
    """`--every` also takes cron expressions (croniter), in local time: heartbeats start at the times they name."""

    def test_heartbeats_start_at_the_cron_times(self, home: Path) -> None:
        """At 12:03 local, '*/5 * * * *' waits until 12:05 for the first run, then until 12:10 for the next."""
        now = [datetime(2026, 3, 2, 12, 3, 0).astimezone().timestamp()]
        waits: list[float] = []

        def fake_sleep(seconds: float) -> None:
            waits.append(seconds)
            now[0] += seconds

        reports: list[dict[str, Any]] = []
        assert (
            run_every(
                home, parse_every("*/5 * * * *"), reports.append, sleep=fake_sleep, max_runs=2, clock=lambda: now[0]
            )
            == 2
        )
        assert waits == [120.0, 300.0] and [r["status"] for r in reports] == ["ran", "ran"]

    def test_named_schedules_and_fields_are_accepted(self) -> None:
        for text in ("@hourly", "@daily", "0 9 * * 1-5", "*/15 * * * *"):
            schedule = parse_every(text)
            assert schedule.cron == text and schedule.seconds is None

    @pytest.mark.parametrize("text", ["61 * * * *", "* * * * * * * *", "@sometimes", "*/0 * * * *", "0 9 * * mon-xyz"])
    def test_a_bad_cron_expression_is_refused_naming_it(self, text: str) -> None:
        with pytest.raises(UsageError, match=r"--every .* is not a valid cron expression"):
            parse_every(text)

    def test_the_cli_refuses_a_bad_schedule_with_exit_2(self, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["heartbeat", "--every", "61 * * * *", "--home", str(home)]) == 2
        err = capsys.readouterr().err
        assert (
            err.startswith("sherpa-skills: --every '61 * * * *' is not a valid cron expression")
            and "Traceback" not in err
        )


def test_sessions_import_mines_what_it_imported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`sessions import --json` reports new_procedures; the next heartbeat has nothing left to mine."""
    claude_session(tmp_path / "s.jsonl", [("cargo build", "ok", False), ("cargo test", "ok", False)], session="s1")
    session = claude_session(
        tmp_path / "s.jsonl", [("cargo build", "ok", False), ("cargo test", "ok", False)], session="s2"
    )
    home = tmp_path / "home"  # not this file's `home`: that one already watches a session
    assert main(["sessions", "import", str(session), "--json", "--home", str(home)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["commands"], summary["succeeded"], summary["new_procedures"]) == (4, 4, 1)
    report = heartbeat(home, capsys)
    assert report["phases"]["crystallise"]["summary"] == "nothing new to mine"
    assert main(["learn", "procedures", "--all", "--json", "--home", str(home)]) == 0
    (proc,) = json.loads(capsys.readouterr().out)
    assert proc["task_type"] == "cargo-build-test" and proc["status"] == "candidate"


class TestPhaseFailures:
    """A failed phase never moves the watermark past data it did not process, and the report says `partial`."""

    @pytest.fixture
    def fail_in(self) -> Any:
        from sherpa_skills.heartbeat import phases

        removers = []

        def fail(phase: str) -> None:
            def hook(current: str) -> None:
                if current == phase:
                    raise RuntimeError(f"injected failure in {phase}")

            removers.append(phases.on_phase_start(hook))

        yield fail
        for remove in removers:
            remove()

    @pytest.mark.parametrize("phase", ["extract", "crystallise"])
    def test_a_failed_session_phase_keeps_the_watermark_and_the_next_heartbeat_mines_it_all(
        self, home: Path, fail_in: Any, phase: str
    ) -> None:
        fail_in(phase)
        report = run_once(home)
        assert report["status"] == "partial" and report["phases"][phase]["status"] == "failed"
        assert (report["watermark_before"], report["watermark"]) == (0, 0)
        assert any(phase in a and "watermark stays" in a for a in report["alerts"])
        from sherpa_skills.heartbeat import phases

        phases._hooks.clear()
        again = run_once(home)
        assert again["status"] == "ran" and (again["watermark_before"], again["watermark"]) == (0, 5)
        assert again["phases"]["crystallise"]["stats"]["commands"] == 5

    @pytest.mark.parametrize("phase", ["health", "maintenance"])
    def test_a_failed_store_phase_is_partial_but_the_sessions_were_mined(
        self, home: Path, fail_in: Any, phase: str
    ) -> None:
        fail_in(phase)
        report = run_once(home)
        assert report["status"] == "partial" and report["phases"][phase]["status"] == "failed"
        assert report["watermark"] == 5  # extract and crystallise processed the commands
        assert all(p["status"] == "ok" for name, p in report["phases"].items() if name != phase)

    def test_the_command_exits_non_zero_on_a_partial_heartbeat(self, home: Path) -> None:
        code = (
            "import sys\nfrom sherpa_skills.heartbeat import phases\n"
            "def fail(p):\n    if p == 'health': raise RuntimeError('disk full')\n"
            "phases.on_phase_start(fail)\nfrom sherpa_skills.cli import main\nsys.exit(main(sys.argv[1:]))\n"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code, "heartbeat", "--once", "--json", "--home", str(home)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 1, proc.stderr
        report = json.loads(proc.stdout)
        assert report["status"] == "partial" and "disk full" in report["phases"]["health"]["summary"]
        assert "Traceback" not in proc.stderr

    def test_no_environment_variable_changes_what_a_heartbeat_does(self) -> None:
        """The fault hook is in-process only: the library reads no variable to pause or fail a phase."""
        source = (Path(__file__).resolve().parents[2] / "sherpa_skills" / "heartbeat").rglob("*.py")
        assert not any("os.environ" in path.read_text() for path in source)
