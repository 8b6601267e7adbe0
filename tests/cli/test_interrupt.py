"""Ctrl-C and SIGTERM (docker stop, systemd) during `run` / `resume`:
the run is recorded `interrupted`, the user is told how
to resume it, the exit code is 128 + the signal, and resuming re-runs only the action that was in flight."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

# Each start of the action appends a line; the first two starts then sleep (they are what the signals interrupt).
SLEEPY = """
name: sleepy
inputs:
  marker: {required: true}
initial: start
states:
  start: {}
  busy:
    on_enter:
      shell: {command: "echo started >> {{ marker }}; test $(wc -l < {{ marker }}) -ge 3 || sleep 30", timeout_secs: 60}
  done: {final: true}
transitions:
  - {trigger: go, source: start, dest: busy}
  - {trigger: finished, source: busy, dest: done}
"""


def _as_in_a_terminal() -> None:
    # A suite started in the background (`&`) passes SIGINT on ignored, which the CLI rightly keeps: Ctrl-C is tested.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(home: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "sherpa_skills", *args, "--home", str(home)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_as_in_a_terminal,
    )


def interrupt_once_started(proc: subprocess.Popen[str], marker: Path, starts: int, signum: int) -> tuple[str, str]:
    """Send `signum` once the shell action has started for the `starts`-th time; the process's (stdout, stderr)."""
    deadline = time.time() + 30
    while (
        (not marker.exists() or len(marker.read_text().split()) < starts)
        and proc.poll() is None
        and time.time() < deadline
    ):
        time.sleep(0.02)
    assert proc.poll() is None, f"the command ended before its action started: {proc.communicate()}"
    time.sleep(0.1)  # inside the sleep, not between the echo and it
    proc.send_signal(signum)
    try:
        return proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"signal {signum} did not stop the command: {proc.communicate()}")


def stored(home: Path) -> tuple[str, str, str]:
    with sqlite3.connect(home / "store.db") as conn:
        return conn.execute("SELECT run_id, status, state FROM runs").fetchone()


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_marks_the_run_interrupted_and_resume_finishes_it(tmp_path: Path, signum: int) -> None:
    """Interrupted in `run`, then again in `resume`: each time `interrupted` in the store, the resume command on stderr,
    exit 128 + signal; a last resume re-runs the action once more and finishes."""
    home, marker = tmp_path / "home", tmp_path / "marker"
    workflow = tmp_path / "sleepy.yaml"
    workflow.write_text(SLEEPY)
    code = 128 + signum

    proc = start(home, "run", str(workflow), "-i", f"marker={marker}")
    out, err = interrupt_once_started(proc, marker, 1, signum)
    run_id, status, state = stored(home)
    assert (proc.returncode, status, state) == (code, "interrupted", "start"), err
    assert "Traceback" not in err
    assert f"run {run_id} interrupted" in err
    assert f"sherpa-skills resume {run_id} --home {home}" in err, "the exact command to resume it"

    listed = subprocess.run(
        [sys.executable, "-m", "sherpa_skills", "runs", "--json", "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert [(r["run_id"], r["status"]) for r in json.loads(listed.stdout)] == [(run_id, "interrupted")]
    shown = subprocess.run(
        [sys.executable, "-m", "sherpa_skills", "show", run_id, "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "interrupted in start" in shown.stdout

    proc = start(home, "resume", run_id, "--json")
    out, err = interrupt_once_started(proc, marker, 2, signum)
    assert proc.returncode == code, err
    assert json.loads(out) == {
        "run_id": run_id,
        "status": "interrupted",
        "state": "start",
        "signal": signal.Signals(signum).name,
    }
    assert stored(home)[1:] == ("interrupted", "start")

    done = subprocess.run(
        [sys.executable, "-m", "sherpa_skills", "resume", run_id, "--json", "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["status"], result["state"]) == ("final", "done")
    assert [i["action"] for i in result["interrupted"]] == ["shell"], "the action in flight is the one re-run"
    assert marker.read_text().split() == ["started"] * 3
    assert stored(home)[1:] == ("final", "done")
    with sqlite3.connect(home / "store.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM run_intents").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM run_log WHERE action = 'shell'").fetchone()[0] == 1, (
            "logged once, as it finished"
        )
