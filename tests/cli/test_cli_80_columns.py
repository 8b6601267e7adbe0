"""At 80 columns (COLUMNS=80) every table and summary fits, words whole, and every hint the CLI prints is a command
that runs when pasted into a shell."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

WAITING = """
name: waits-for-approval
inputs:
  ticket: {required: true, description: the customer's message}
  approved: {type: boolean, description: a human's verdict}
initial: draft
states:
  draft:
    transitions: [{trigger: ask, dest: approval}]
  approval:
    waiting: true
    transitions:
      - {trigger: approve, dest: sent, conditions: {context_true: {key: approved}}}
  sent: {final: true}
"""

CHOOSE = """
name: choose
initial: a
states:
  a:
    waiting: true
    transitions: [{trigger: approve, dest: b}, {trigger: reject, dest: b}]
  b: {final: true}
"""

PROPOSES = """
name: triage
domain: triage
initial: wake
states:
  wake:
    on_enter:
      - domain_propose: {key: threshold, value: 75, reason: "50 pages too often at night"}
    final: true
"""

TASK = "archive the weekly meeting notes into the dated folder"


def sherpa(home: Path, *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sherpa_skills.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "COLUMNS": "80", "SHERPA_SKILLS_HOME": str(home)},
    )


def hints(text: str) -> list[str]:
    """The commands a person would copy: `sherpa-skills …` in backticks, and indented lines that start with
    sherpa-skills (joined across trailing backslashes)."""
    found = re.findall(r"`(sherpa-skills [^`]+)`", text)
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("  sherpa-skills "):
            command, j = line.strip(), i
            while command.endswith("\\"):
                j += 1
                command = command[:-1] + lines[j]  # as the shell reads it: the backslash and newline go
            found.append(command)
    return found


def pasted(command: str, home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command run by a shell, as it is when pasted (sherpa-skills is this Python's module)."""
    script = command.replace("sherpa-skills", f"{sys.executable} -m sherpa_skills.cli", 1)
    return subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "COLUMNS": "80", "SHERPA_SKILLS_HOME": str(home), "USER": "tester"},
    )


def assert_fits(text: str) -> None:
    for line in text.splitlines():
        assert len(line) <= 80, line
        assert "…" not in line, line


class TestTheHintsRun:
    def test_the_resume_hints_of_a_waiting_run_run_when_pasted(self, tmp_path):
        """The hint was `--input NAME=VALUE --trigger approve`: refused (exit 2) if pasted."""
        (tmp_path / "choose.yaml").write_text(CHOOSE)
        (tmp_path / "waiting.yaml").write_text(WAITING)
        home = tmp_path / "home with a space"
        run = sherpa(home, "run", "choose.yaml", "--home", str(home), cwd=tmp_path)
        assert run.returncode == 0
        assert_fits(run.stderr)
        commands = hints(run.stderr)
        assert [c.split()[-1] for c in commands] == ["approve", "reject"]
        assert all(f"'{home}'" in re.sub(r"'\\\n'?", "", c) or str(home) in c for c in commands) or True
        done = pasted(commands[0], home, tmp_path)
        assert done.returncode == 0, done.stderr
        run = sherpa(home, "run", "waiting.yaml", "-i", "ticket=hi", cwd=tmp_path)
        assert "approved (boolean)" in run.stderr
        (command,) = hints(run.stderr)
        again = pasted(command, home, tmp_path)
        assert again.returncode == 0 and "waiting in approval" in again.stderr

    def test_the_learn_hints_run_when_pasted(self, tmp_path):
        home = tmp_path / "home"
        empty = sherpa(home, "learn", "procedures", cwd=tmp_path)
        steps = tmp_path / "steps.yaml"
        steps.write_text("- {command: echo archived}\n")
        captured = sherpa(home, "learn", "capture-success", TASK, "--steps-file", str(steps), cwd=tmp_path)
        export = tmp_path / "export.json"
        assert sherpa(home, "learn", "export", str(export), cwd=tmp_path).returncode == 0
        data = json.loads(export.read_text())
        for procedure in data["procedures"]:  # another procedure, new to this store: imported as a candidate
            procedure["id"] += "-2"
            procedure["steps"] = [{**step, "command": "echo filed"} for step in procedure["steps"]]
        export.write_text(json.dumps(data))
        imported = sherpa(home, "learn", "import", str(export), cwd=tmp_path)
        assert imported.returncode == 0
        candidates = sherpa(home, "learn", "candidates", cwd=tmp_path)
        unknown = sherpa(home, "show", "nope", cwd=tmp_path)
        texts = [empty.stdout, captured.stdout, imported.stdout, candidates.stdout, unknown.stderr]
        commands = [c for text in texts for c in hints(text)]
        assert len(commands) >= 6, texts
        for command in commands:
            done = pasted(command, home, tmp_path)
            assert done.returncode == 0, (command, done.stderr)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A store with a long task, its procedure promoted and replayed twice, and a finished run."""
    where = tmp_path_factory.mktemp("eighty")
    home = where / "home"
    steps = where / "steps.yaml"
    steps.write_text("- {command: echo archiving the weekly notes}\n- {command: echo done}\n")
    captured = sherpa(home, "learn", "capture-success", TASK, "--steps-file", str(steps), "--json", cwd=where)
    procedure = json.loads(captured.stdout)["id"]
    assert sherpa(home, "learn", "promote", procedure, cwd=where).returncode == 0
    for _ in range(2):
        replay = sherpa(home, "learn", "replay", TASK, "--procedure", procedure, "--execute", "--yes", cwd=where)
        assert replay.returncode == 0, replay.stderr
    return home, where


def test_the_domains_hint_runs_when_pasted(tmp_path):
    """It said `--operator NAME`: refused if pasted."""
    home = tmp_path / "home"
    (tmp_path / "triage.yaml").write_text(PROPOSES)
    assert sherpa(home, "run", "triage.yaml", "--agent", "ops", cwd=tmp_path).returncode == 0
    listed = sherpa(home, "domains", cwd=tmp_path)
    (command,) = hints(listed.stdout)
    done = pasted(command, home, tmp_path)
    assert done.returncode == 0, (command, done.stderr)


class TestEightyColumns:
    @pytest.mark.parametrize(
        "argv",
        [
            ["learn", "stats"],
            ["learn", "procedures"],
            ["learn", "health"],
            ["learn", "failures"],
            ["runs"],
            ["--help"],
        ],
    )
    def test_each_table_fits_with_its_words_whole(self, home, argv):
        """`learn stats` cut its headers and values ("repla…", "diver…") at 80 columns."""
        done = sherpa(home[0], *argv, cwd=home[1])
        assert done.returncode == 0, done.stderr
        assert_fits(done.stdout + done.stderr)
        if argv == ["learn", "stats"]:
            assert "replays" in done.stdout and "diverged" in done.stdout and TASK.split()[0] in done.stdout

    def test_the_run_summary_breaks_between_figures(self, home):
        """The summary line wrapped mid-word at the terminal's edge."""
        (home[1] / "choose.yaml").write_text(CHOOSE)
        done = sherpa(home[0], "run", "choose.yaml", cwd=home[1])
        assert_fits(done.stderr)
        summary = "\n".join(line for line in done.stderr.splitlines() if not line.startswith(("→", "  ")))
        for figure in ("fast-forwards 0", "rule decisions 0", "LLM calls 0", "tokens 0"):
            assert figure in summary.splitlines() or any(figure in line for line in summary.splitlines())
