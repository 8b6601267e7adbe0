"""The `shell` action against real subprocesses: statuses, capture, truncation, timeouts, env, cwd."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from structlog.testing import capture_logs

from sherpa_skills.actions import shell
from sherpa_skills.actions.shell import DEFAULT_ENV_ALLOWLIST, ShellArgs, arun_shell, run_shell
from sherpa_skills.engine.registry import ActionContext, ActionResult, default_registry
from sherpa_skills.errors import ActionError


def ctx() -> ActionContext:
    return ActionContext(view=None, state="s", tick=0)


def sh(command: str, **kwargs: Any) -> ActionResult:
    return run_shell(ShellArgs(command=command, **kwargs), ctx())


def _is_gone(pid: int) -> bool:
    """Dead, or a zombie whose (non-reaping) adopter has not collected it yet: either way it runs no more."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, IndexError):
        return True


def _wait_gone(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if _is_gone(pid):
            return True
        time.sleep(0.05)
    return False


def test_public_surface() -> None:
    assert set(shell.__all__) == {
        "DEFAULT_ENV_ALLOWLIST",
        "KILL_GRACE_SECS",
        "MIN_SECRET_CHARS",
        "ShellArgs",
        "arun_shell",
        "kill_process_group",
        "run_shell",
    }


def test_registered_on_default_registry_with_shell_quoted_command() -> None:
    found = default_registry.get_action("shell")
    assert found.fn is run_shell
    assert found.args_model is ShellArgs
    assert found.side_effects is True
    assert found.shell_fields == ("command",)
    assert found.is_async is False


def test_exit_zero_is_ok_and_captures_both_streams() -> None:
    result = sh("echo out; echo err >&2")
    assert result.status == "ok"
    assert result.outputs["exit_code"] == 0
    assert result.outputs["stdout"] == "out\n"
    assert result.outputs["stderr"] == "err\n"
    assert result.outputs["timed_out"] is False
    assert result.outputs["truncated"] is False
    assert isinstance(result.outputs["duration_ms"], int)


def test_nonzero_exit_is_failed() -> None:
    result = sh("exit 3")
    assert result.status == "failed"
    assert result.outputs["exit_code"] == 3


def test_expected_exit_code_decides_status() -> None:
    assert sh("exit 3", expected_exit_code=3).status == "ok"
    assert sh("true", expected_exit_code=3).status == "failed"


def test_check_raises_with_exit_code_and_stderr_tail() -> None:
    lines = "; ".join(f"echo line{i} >&2" for i in range(30))
    with pytest.raises(ActionError) as err:
        sh(f"{lines}; exit 4", check=True)
    message = str(err.value)
    assert err.value.action == "shell"
    assert "exit code 4" in message
    assert "line29" in message
    assert "line0\n" not in message  # only the last lines


def test_check_passes_silently_on_expected_code() -> None:
    assert sh("exit 2", expected_exit_code=2, check=True).status == "ok"


def test_check_raises_on_timeout() -> None:
    with pytest.raises(ActionError, match="timed out"):
        sh("sleep 5", timeout_secs=0.3, check=True)


def test_output_is_decoded_leniently() -> None:
    result = sh(r"printf 'caf\303\251 \377\n'")
    assert result.outputs["stdout"] == "café \ufffd\n"


def test_stdin_is_fed_and_defaults_to_empty() -> None:
    assert sh("tr a-z A-Z", stdin="hello").outputs["stdout"] == "HELLO"
    assert sh("cat", timeout_secs=5).outputs["stdout"] == ""  # no inherited terminal to hang on


def test_large_stdin_and_output_do_not_deadlock() -> None:
    data = "x" * 2_000_000
    result = sh("cat; cat >&2 </dev/null", stdin=data, max_output_chars=10, timeout_secs=10)
    assert result.status == "ok"
    assert result.outputs["truncated"] is True


def test_stdin_the_command_ignores_is_no_error() -> None:
    assert sh("true", stdin="y" * 1_000_000).status == "ok"


def test_truncation_keeps_head_and_tail_with_marker() -> None:
    result = sh("seq 1 100000", max_output_chars=100)
    out = result.outputs["stdout"]
    assert result.outputs["truncated"] is True
    assert out.startswith("1\n2\n3\n")
    assert out.endswith("99999\n100000\n")
    full = "".join(f"{i}\n" for i in range(1, 100_001))
    head, marker, tail = out.split("\n[", 1)[0], out.split("\n[", 1)[1].split("]\n", 1)[0], out.split("]\n", 1)[1]
    assert len(head) + len(tail) == 100
    assert marker == f"... {len(full) - 100} chars cut ..."
    assert full.startswith(head) and full.endswith(tail)


@pytest.mark.parametrize("length", [1, 9, 10, 11, 19, 20, 21, 200_000])
def test_truncation_boundaries(length: int) -> None:
    result = sh(f"head -c {length} /dev/zero | tr '\\0' x", max_output_chars=20)
    out = result.outputs["stdout"]
    if length <= 20:
        assert out == "x" * length and result.outputs["truncated"] is False
    else:
        assert (
            out == f"{'x' * 10}\n[... {length - 20} chars cut ...]\n{'x' * 10}" and result.outputs["truncated"] is True
        )


def test_multibyte_chars_are_counted_as_chars() -> None:
    result = sh("printf 'ééééé'", max_output_chars=5)
    assert result.outputs["stdout"] == "ééééé" and result.outputs["truncated"] is False


def test_stderr_is_truncated_too_and_short_output_is_untouched() -> None:
    result = sh("seq 1 1000 >&2; echo short", max_output_chars=50)
    assert result.outputs["stdout"] == "short\n"
    assert "chars cut" in result.outputs["stderr"]
    assert result.outputs["truncated"] is True


def test_large_output_does_not_deadlock() -> None:
    started = time.monotonic()
    result = sh("head -c 5000000 /dev/zero | tr '\\0' a; head -c 5000000 /dev/zero | tr '\\0' b >&2", timeout_secs=20)
    assert time.monotonic() - started < 10
    assert result.status == "ok"
    assert result.outputs["stdout"].startswith("a" * 5000)
    assert "chars cut" in result.outputs["stdout"] and "chars cut" in result.outputs["stderr"]
    assert len(result.outputs["stdout"]) < 10_100


def test_timeout_returns_quickly_and_kills_grandchildren(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    started = time.monotonic()
    result = sh(f"echo before; sleep 30 & echo $! > {pidfile}; wait", timeout_secs=0.5)
    elapsed = time.monotonic() - started
    assert result.status == "timeout"
    assert result.outputs["timed_out"] is True
    assert result.outputs["exit_code"] is None
    assert result.outputs["stdout"] == "before\n"  # what came before the kill is kept
    assert elapsed < 3
    assert _wait_gone(int(pidfile.read_text()))


def test_timeout_kills_nested_shells(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    result = sh(f"bash -c 'sleep 30 & echo $! > {pidfile}; sleep 30'", timeout_secs=0.5)
    assert result.status == "timeout"
    assert _wait_gone(int(pidfile.read_text()))


def test_sigterm_resistant_group_is_sigkilled(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    started = time.monotonic()
    with capture_logs() as logs:
        result = sh(f"trap '' TERM; sh -c 'trap \"\" TERM; sleep 30' & echo $! > {pidfile}; wait", timeout_secs=0.3)
    assert result.status == "timeout"
    assert "shell.sigkill" in [e["event"] for e in logs]
    assert time.monotonic() - started < 4
    assert _wait_gone(int(pidfile.read_text()))


def test_background_process_holding_output_counts_as_timeout(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    result = sh(f"sleep 30 & echo $! > {pidfile}; exit 0", timeout_secs=0.5)
    assert result.status == "timeout"
    assert result.outputs["exit_code"] == 0  # the shell itself did finish
    assert _wait_gone(int(pidfile.read_text()))


def test_background_process_with_redirected_output_does_not_block(tmp_path: Path) -> None:
    """The action returns once the shell exits, while the job it left behind still runs (waiting
    for it would time out)."""
    pidfile = tmp_path / "pid"
    result = sh(f"sleep 30 >/dev/null 2>&1 & echo $! > {pidfile}; echo done", timeout_secs=5)
    pid = int(pidfile.read_text())
    try:
        assert (result.status, result.outputs["exit_code"], result.outputs["stdout"]) == ("ok", 0, "done\n")
        assert not _is_gone(pid)  # returned before the job ended, and did not kill it
    finally:
        os.kill(pid, 9)  # tidy up: a detached background job is left alone by design


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> str:
    value = "s3cr3t-value-that-must-not-leak"
    monkeypatch.setenv("SHERPA_TEST_SECRET", value)
    monkeypatch.setenv("SHERPA_TEST_ALLOWED", "allowed-value")
    monkeypatch.setenv("PATH", os.environ["PATH"])
    return value


def test_env_only_allow_list_reaches_the_child(secret_env: str) -> None:
    result = sh("env")
    names = {line.split("=", 1)[0] for line in result.outputs["stdout"].splitlines()}
    assert "SHERPA_TEST_SECRET" not in names
    assert "SHERPA_TEST_ALLOWED" not in names
    assert "PATH" in names
    # the shell may add a few of its own (PWD, SHLVL, _), but nothing else from our environment
    assert names - set(DEFAULT_ENV_ALLOWLIST) <= {"PWD", "SHLVL", "_", "OLDPWD"}
    assert secret_env not in repr(result.outputs)


def test_env_names_are_passed_through_by_name(secret_env: str) -> None:
    result = sh('echo "allowed=$SHERPA_TEST_ALLOWED secret=$SHERPA_TEST_SECRET"', env=["SHERPA_TEST_ALLOWED"])
    assert result.outputs["stdout"] == "allowed=allowed-value secret=\n"
    assert secret_env not in repr(result.outputs)


def test_env_name_not_set_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SHERPA_TEST_UNSET", raising=False)
    assert sh('echo "${SHERPA_TEST_UNSET-unset}"', env=["SHERPA_TEST_UNSET"]).outputs["stdout"] == "unset\n"


def test_env_takes_names_not_assignments() -> None:
    with pytest.raises(ValidationError, match="variable names only"):
        ShellArgs(command="true", env=["FOO=bar"])


def test_args_are_validated() -> None:
    with pytest.raises(ValidationError):
        ShellArgs(command="true", timeout_secs=0)
    with pytest.raises(ValidationError):
        ShellArgs(command="true", max_output_chars=0)
    with pytest.raises(ValidationError):
        ShellArgs(command="true", tiemout_secs=3)  # typos are caught, not ignored


def test_cwd_absolute_and_relative(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sub").mkdir()
    assert sh("pwd -P", cwd=str(tmp_path)).outputs["stdout"].strip() == str(tmp_path.resolve())
    monkeypatch.chdir(tmp_path)
    assert sh("pwd -P", cwd="sub").outputs["stdout"].strip() == str((tmp_path / "sub").resolve())
    assert sh("pwd -P").outputs["stdout"].strip() == str(tmp_path.resolve())


def test_missing_cwd_is_a_clear_action_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(ActionError, match="does not exist") as err:
        sh("true", cwd=str(missing))
    assert str(missing) in str(err.value)
    (tmp_path / "file").write_text("")
    with pytest.raises(ActionError, match="not a directory"):
        sh("true", cwd=str(tmp_path / "file"))


def test_async_twin_does_not_block_the_loop() -> None:
    async def main() -> tuple[ActionResult, int]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        result = await arun_shell(ShellArgs(command="sleep 0.3; echo hi"), ctx())
        task.cancel()
        return result, ticks

    result, ticks = asyncio.run(main())
    assert result.outputs["stdout"] == "hi\n"
    assert ticks >= 5


def test_kill_process_group_is_reusable_on_its_own(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    proc = subprocess.Popen(["/bin/sh", "-c", f"sleep 30 & echo $! > {pidfile}; wait"], start_new_session=True)
    deadline = time.monotonic() + 2
    while not pidfile.exists() or not pidfile.read_text().strip():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    with capture_logs() as logs:
        shell.kill_process_group(proc, grace=1.0)
    assert proc.returncode == -signal.SIGTERM  # SIGTERM sufficed: the leader was not sat out and SIGKILLed
    assert "shell.sigkill" not in [e["event"] for e in logs]  # nor was the group, after sitting out the grace
    assert _wait_gone(int(pidfile.read_text()))
    shell.kill_process_group(proc, grace=1.0)  # a second call on a dead group is harmless


# -------------------------------------------------------------- values of passed environment variables are never stored

SECRET_FLOW = """
name: secret_flow
initial: work
states:
  work:
    on_enter:
      - shell: {command: 'echo "token is $MY_APP_TOKEN"; echo "$MY_APP_TOKEN" >&2', env: [MY_APP_TOKEN]}
        save_as: echoed
      - set: {copied: "{{ echoed.stdout }}", note: "deploy done … password: CorrectHorseBattery9"}
    transitions:
      - {trigger: fail, dest: done}
  done:
    final: true
    on_enter:
      - shell: {command: 'echo "$MY_APP_TOKEN" >&2; exit 3', env: [MY_APP_TOKEN], check: true}
"""

TOKEN_VALUE = "plainvalue-7f3a9c"  # not token-shaped: only knowing the variable's value finds it


class TestPassedEnvironmentValuesAreNeverStored:
    def test_outputs_context_run_log_error_and_json_log_hold_no_value(
        self, tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A shell step allowed `env: [MY_APP_TOKEN]` echoes it (stdout, stderr, a failing check's message); a `set`
        copies it and writes `password: ...` prose. The SQLite rows, the JSONL log and the result hold neither value."""
        import json
        import sqlite3

        from sherpa_skills.cli import main

        monkeypatch.setenv("MY_APP_TOKEN", TOKEN_VALUE)
        flow = tmp_path / "secret_flow.yaml"
        flow.write_text(SECRET_FLOW)
        code = main(["run", str(flow), "--home", str(home), "--json"])
        out, err = capsys.readouterr()
        result = json.loads(out)
        assert code == 1 and result["status"] == "error" and "exit code 3" in result["error"]
        assert result["context"]["echoed"]["stdout"] == "token is [REDACTED]\n"
        everything = out + err
        conn = sqlite3.connect(home / "store.db")
        for table in ("runs", "run_log", "run_context", "run_trajectory", "run_events"):
            everything += json.dumps(conn.execute(f"SELECT * FROM {table}").fetchall())
        everything += "".join(p.read_text() for p in (home / "logs").glob("*.jsonl"))
        assert TOKEN_VALUE not in everything
        assert "CorrectHorseBattery9" not in everything.replace(out, "")  # patterns are redacted where data is stored
        assert "[REDACTED]" in json.dumps(conn.execute("SELECT value FROM run_context WHERE key = 'copied'").fetchall())
        assert "MY_APP_TOKEN" in everything  # the name is kept: it says what was passed

    def test_the_in_memory_belief_of_an_api_run_holds_no_value_either(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without a store, the belief (what a policy, a capture or a resumed run would read) is redacted too."""
        from sherpa_skills.engine.workflow import load_workflow_text

        monkeypatch.setenv("MY_APP_TOKEN", TOKEN_VALUE)
        agent = load_workflow_text(SECRET_FLOW, name="secret_flow.yaml").agent()
        result = agent.run()
        assert result.status == "error"
        assert TOKEN_VALUE not in agent.belief.to_json() + (result.error or "")

    def test_default_variables_and_short_values_are_not_treated_as_secrets(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """PATH, HOME and friends are not secrets, and a value of 1-3 characters (DEBUG=1) would redact every digit."""
        ctx_ = ctx()
        monkeypatch.setenv("DEBUG_LEVEL", "1")
        monkeypatch.setenv("MY_APP_TOKEN", TOKEN_VALUE)
        run_shell(
            ShellArgs(command="true", env=["PATH", "HOME", "DEBUG_LEVEL", "MY_APP_TOKEN", "UNSET_VARIABLE_X"]), ctx_
        )
        assert ctx_.secrets == {TOKEN_VALUE}
