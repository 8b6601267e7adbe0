"""Replay runs a procedure in one shell: `cd` and `export` hold for the steps after them,
as where they were recorded."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from sherpa_skills.cli import main
from sherpa_skills.skills.replay.shell_session import ShellSession


def _gone(pid: int, within: float = 10.0) -> bool:
    """The process has exited (a zombie waiting for init to reap it counts as gone)."""
    import psutil

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def session(tmp_path: Path) -> ShellSession:
    shell = ShellSession(str(tmp_path))
    yield shell
    shell.close()


class TestSession:
    def test_cd_and_export_hold_for_later_steps(self, session: ShellSession, tmp_path: Path) -> None:
        assert session.run("mkdir -p build && cd build", 10).exit_code == 0
        assert session.run("export GREETING=hello", 10).exit_code == 0
        result = session.run('echo "$GREETING from $(basename "$PWD")"', 10)
        assert (result.exit_code, result.stdout, result.cwd) == (0, "hello from build\n", str(tmp_path / "build"))

    def test_exit_codes_output_and_stderr_per_step(self, session: ShellSession) -> None:
        result = session.run("echo out; echo err >&2; exit_code_is() { return 3; }; exit_code_is", 10)
        assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")
        assert session.run("true", 10).exit_code == 0 and session.alive

    def test_a_command_that_does_not_parse_fails_without_hanging(self, session: ShellSession) -> None:
        result = session.run("echo 'unterminated", 10)
        assert result.exit_code not in (0, None) and not result.timed_out
        assert session.run("echo still here", 10).stdout == "still here\n"

    def test_steps_cannot_read_the_sessions_input(self, session: ShellSession) -> None:
        """stdin is /dev/null: a step cannot swallow the commands that follow it."""
        result = session.run("cat; echo done", 10)
        assert result.stdout == "done\n"
        assert session.run("echo next", 10).stdout == "next\n"

    def test_a_timeout_kills_the_whole_step_and_the_session(self, session: ShellSession, tmp_path: Path) -> None:
        started = time.monotonic()
        result = session.run(f"sleep 30 & echo $! > {tmp_path}/child; wait", 0.5)
        assert result.timed_out and time.monotonic() - started < 10 and not session.alive
        child = int((tmp_path / "child").read_text())
        assert _gone(child), "the step's background child outlived the timeout"

    def test_exit_ends_the_session_with_its_code(self, session: ShellSession) -> None:
        result = session.run("exit 4", 10)
        assert (result.exit_code, result.ended) == (4, True) and not session.alive

    def test_a_step_with_its_own_cwd_runs_there_without_moving_the_session(
        self, session: ShellSession, tmp_path: Path
    ) -> None:
        (tmp_path / "sub").mkdir()
        assert session.run("pwd", 10, cwd=str(tmp_path / "sub")).stdout.strip() == str(tmp_path / "sub")
        assert session.run("pwd", 10).stdout.strip() == str(tmp_path)

    def test_only_allowed_environment_variables_reach_the_shell(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("SHERPA_TEST_SECRET", "hunter2")
        monkeypatch.setenv("SHERPA_TEST_NAMED", "visible")
        shell = ShellSession(str(tmp_path), ["SHERPA_TEST_NAMED"])
        try:
            assert shell.run('echo "[$SHERPA_TEST_SECRET][$SHERPA_TEST_NAMED]"', 10).stdout == "[][visible]\n"
        finally:
            shell.close()


def test_a_replayed_procedure_keeps_cd_and_export_between_steps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through `learn replay --execute --yes`:
    the step after `cd site` runs in site/, with the variable exported before."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    home = str(tmp_path / "home")
    from sherpa_skills.skills.store.database import ProcedureDatabase
    from sherpa_skills.skills.store.models import CapturedProcedure, ProcedureStep

    steps = ["mkdir -p site", "cd site", "export TITLE={{ title }}", 'echo "<h1>$TITLE</h1>" > index.html']
    proc = ProcedureDatabase(home=home).add_procedure(
        CapturedProcedure(
            id="",
            task_type="build-site",
            success_count=3,
            steps=[
                *[ProcedureStep(command=c) for c in steps],
                ProcedureStep(command="cat index.html", expected_output_pattern="<h1>Hello"),
            ],
        )
    )
    pid = proc.id
    code = main(
        [
            "learn",
            "replay",
            "build the site",
            "--procedure",
            pid,
            "--param",
            "title=Hello",
            "--execute",
            "--yes",
            "--min-confidence",
            "0",
            "--home",
            home,
            "--json",
        ]
    )
    result = json.loads(capsys.readouterr().out)
    assert code == 0, result
    assert (work / "site" / "index.html").read_text() == "<h1>Hello</h1>\n"
    assert not (work / "index.html").exists()
