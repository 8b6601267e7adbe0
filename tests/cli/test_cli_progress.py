"""Progress on the long commands: on a terminal it says what is done and how far; under --json or a pipe, nothing."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from sherpa_skills.cli.heartbeat import _Progress
from sherpa_skills.heartbeat.runner import run_once
from sherpa_skills.sessions import import_paths


class _Recorder:
    """A terminal's output and the engine's action events, in the order they happened."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def write(self, text: str) -> int:
        for line in re.findall(r"✓ (\w+) ([\d.]+) s", re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)):
            self.seen.append(f"tick {line[0]} {line[1]}")
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True


class TestHeartbeatTicks:
    def test_each_phase_is_ticked_after_its_work_with_its_own_time(self, tmp_path):
        """It printed "✓ extract 0.0 s" before extract ran, each time belonging to the phase before."""
        recorder = _Recorder()
        durations: list[float] = []

        class Observed(_Progress):
            def on_action(self, *, run: Any, action: str, duration_ms: float, **_: Any) -> None:  # type: ignore[override]
                recorder.seen.append(f"action {action}")
                durations.append(duration_ms / 1000)

        progress = Observed(Console(file=recorder, force_terminal=True, width=80))  # type: ignore[arg-type]
        try:
            report = run_once(tmp_path / "home", progress=progress)
        finally:
            progress.stop()
        assert report["status"] == "ran"
        phases = ["extract", "crystallise", "health", "maintenance", "memory"]
        order = [s.split()[1] for s in recorder.seen]
        expected = ["heartbeat_lock", "lock"]
        for phase in phases:
            expected += ["heartbeat_phase", phase]
        expected += ["heartbeat_report", "report", "heartbeat_release", "release"]
        assert order == expected
        # Each tick's time is at least its own phase's work (the action's duration), rounded as printed.
        ticks = [float(s.split()[2]) for s in recorder.seen if s.startswith("tick")]
        assert all(t >= round(d, 1) - 0.05 for t, d in zip(ticks, durations, strict=True))


def test_with_every_the_next_heartbeat_ticks_its_own_phases(tmp_path):
    """`--every` runs heartbeats one after another: the wait between them is no phase's time."""
    recorder = _Recorder()
    progress = _Progress(Console(file=recorder, force_terminal=True, width=80))  # type: ignore[arg-type]
    try:
        for _ in range(2):
            assert run_once(tmp_path / "home", progress=progress)["status"] == "ran"
    finally:
        progress.stop()
    ticked = [s.split()[1] for s in recorder.seen]
    once = ["lock", "extract", "crystallise", "health", "maintenance", "memory", "report", "release"]
    assert ticked == once + once


def _on_a_terminal(argv: list[str], home: Path) -> str:
    """What a command writes to stderr when stderr is a terminal (a pseudo-terminal), escapes removed."""
    parent, child = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "sherpa_skills.cli", *argv, "--home", str(home)],
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
    os.close(parent)
    assert proc.wait(timeout=120) == 0
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", seen.decode(errors="replace"))


def _piped(argv: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "sherpa_skills.cli", *argv, "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def big_history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 9.6 MB shell history of 1,200 long commands: read in several blocks, in about a second."""
    path = tmp_path_factory.mktemp("logs") / "big.bash_history"
    path.write_text("".join(f"echo {i} {'x' * 8000}\n" for i in range(1200)))
    return path


class TestSessionsImportProgress:
    def test_a_big_file_reports_its_bytes_as_it_is_read(self, big_history, tmp_path):
        """One big log showed nothing until it was all read (300,000 commands: 63 s of silence)."""
        seen: list[tuple[int, int]] = []
        import_paths(
            [big_history], home=tmp_path / "home", read_progress=lambda done, total: seen.append((done, total))
        )
        size = big_history.stat().st_size
        assert all(total == size for _, total in seen)
        assert len([d for d, _ in seen if 0 < d < size]) >= 2 and seen[-1] == (size, size)
        assert [d for d, _ in seen] == sorted(d for d, _ in seen)

    def test_on_a_terminal_a_bar_shows_while_one_file_is_read(self, big_history, tmp_path):
        text = _on_a_terminal(["sessions", "import", str(big_history), "--no-mine"], tmp_path / "home")
        assert "importing" in text and "MB" in text

    def test_in_a_pipe_and_under_json_there_is_no_bar(self, big_history, tmp_path):
        piped = _piped(["sessions", "import", str(big_history)], tmp_path / "home")
        assert "importing" not in piped.stderr and "mining" not in piped.stderr
        assert "1200 new commands" in piped.stdout
        again = _piped(["sessions", "import", "--json", str(big_history)], tmp_path / "home2")
        assert again.stderr == "" and json.loads(again.stdout)["commands"] == 1200


class TestOtherLongCommands:
    def test_on_a_terminal_each_shows_a_bar(self, tmp_path):
        home = tmp_path / "home"
        export, steps = tmp_path / "procedures.json", tmp_path / "steps.yaml"
        steps.write_text("- make build\n- make test\n")
        _piped(["learn", "capture-success", "build", "--steps-file", str(steps)], home)
        _piped(["learn", "export", str(export)], home)
        export.write_text(export.read_text().replace("make build", "make all"))  # new to the store: imported
        for argv, label in (
            (["learn", "reindex"], "embedding"),
            (["learn", "import", str(export)], "importing"),
            (["db", "copy", "--from", str(home), "--to", str(tmp_path / "copy")], "copying"),
        ):
            assert label in _on_a_terminal(argv, home), argv

    def test_in_a_pipe_they_are_silent(self, tmp_path):
        home = tmp_path / "home"
        _piped(["learn", "reindex"], home)
        copied = _piped(["db", "copy", "--from", str(home), "--to", str(tmp_path / "copy")], home)
        assert copied.stderr == ""
