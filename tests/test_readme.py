"""Every command in the README's ```bash blocks runs as written, from the repository root, in a temporary home.

Placeholders the reader fills in (RUN_ID, ID) are taken from the home as a reader would take them from the output;
a line that cannot run here (an install from the package index) is skipped with its reason printed.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

# Lines that cannot run in a test, and why (printed, and counted below so they stay few).
SKIPPED = {
    "pip install": "installs from the package index (the suite runs from an installed checkout)",
    "venv": "makes and enters a virtual environment (the suite already runs in one)",
    "python -m pytest": "runs this very suite",
    "--execute": "asks y/n/edit on a terminal before running anything (without one it refuses, by design)",
    "sherpa-skills ui": "serves until stopped (tests/test_ui_*.py start it on a free port and drive it)",
}
# Folders the README's commands create in the checkout, removed around each block so every run
# starts as a reader's would.
CREATED = ("demo-home", "build")
# A synopsis line lists subcommands with `|`: each is run on its own.
SYNOPSIS = re.compile(r"^sherpa-skills (\w+) (.+\|.+)$")


def bash_blocks(text: str) -> list[tuple[int, list[str]]]:
    """(line number, commands) per ```bash block; comments dropped, `\\` continuations joined."""
    blocks: list[tuple[int, list[str]]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```bash":
            start, commands, pending = i + 1, [], ""
            i += 1
            while lines[i].strip() != "```":
                line = lines[i]
                if not line.lstrip().startswith("#"):
                    pending += line.rstrip("\\").strip() + " " if line.rstrip().endswith("\\") else line
                    if not line.rstrip().endswith("\\"):
                        command = _strip_comment(pending).strip()
                        if command:
                            commands.append(command)
                        pending = ""
                i += 1
            blocks.append((start, commands))
        i += 1
    return blocks


def _strip_comment(line: str) -> str:
    """Drop a trailing `# ...` comment: a `#` that starts a word outside quotes."""
    quote = None
    for pos, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (pos == 0 or line[pos - 1].isspace()):
            return line[:pos]
    return line


BLOCKS = bash_blocks(README.read_text(encoding="utf-8"))


def test_the_readme_has_command_blocks():
    assert len(BLOCKS) >= 3 and sum(len(c) for _, c in BLOCKS) >= 8


def test_the_readme_opens_with_the_demo_then_the_tests():
    """What a new user runs first: two commands, each making a virtual environment (Debian's and Ubuntu's Python
    refuse pip outside one) and installing into it: the demo, then the tests. .ci/run runs these very lines."""
    text = README.read_text(encoding="utf-8")
    first_fence = next(line.strip() for line in text.splitlines() if line.startswith("```"))
    assert first_fence == "```bash"
    line, commands = BLOCKS[0]
    assert text.splitlines()[line - 1] == "```bash"
    venv = "python3 -m venv .venv && . .venv/bin/activate && "
    assert commands == [
        venv + "pip install -c constraints.txt . && sherpa-skills demo",
        venv + 'pip install -c constraints.txt -e ".[dev]" && python -m pytest -q',
    ]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "readme_command 1" in ci and "readme_command 2" in ci


@pytest.fixture
def env(tmp_path):
    home = tmp_path / "home"
    bindir = Path(sys.executable).parent
    return {
        **os.environ,
        "SHERPA_SKILLS_HOME": str(home),
        "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
        "COLUMNS": "100",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def _fill(command: str, env: dict[str, str], scratch: Path) -> str:
    """RUN_ID → the newest run in the home; ID → the newest procedure; FILE → a fresh `learn export`;
    python → this interpreter."""
    if "RUN_ID" in command:
        runs = json.loads(_sh("sherpa-skills runs --json", env).stdout)
        assert runs, f"no run to fill RUN_ID in: {command}"
        command = command.replace("RUN_ID", runs[0]["run_id"])
    if re.search(r"\bID\b", command):
        procedures = json.loads(_sh("sherpa-skills learn procedures --json", env).stdout)
        assert procedures, f"no procedure to fill ID in: {command}"
        command = re.sub(r"\bID\b", procedures[0]["id"], command)
    if re.search(r"\bFILE\b", command):
        exported = scratch / "export.json"
        assert _sh(f"sherpa-skills learn export {shlex.quote(str(exported))}", env).returncode == 0
        command = re.sub(r"\bFILE\b", shlex.quote(str(exported)), command)
    if command.startswith("python "):
        command = f"{shlex.quote(sys.executable)} {command[len('python ') :]}"
    return command


def _sh(command: str, env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180, input=stdin
    )


@pytest.mark.slow
@pytest.mark.parametrize(("line", "commands"), BLOCKS, ids=[f"README.md:{line}" for line, _ in BLOCKS])
def test_each_command_block_runs_as_written(line, commands, env, tmp_path, capsys):
    """Each command exits 0 (a waiting run counts: that is what the tutorial shows), in order, sharing one home."""
    import shutil

    for name in CREATED:
        shutil.rmtree(ROOT / name, ignore_errors=True)
    try:
        _run_block(line, commands, env, tmp_path, capsys)
    finally:
        for name in CREATED:
            shutil.rmtree(ROOT / name, ignore_errors=True)


def _run_block(line, commands, env, tmp_path, capsys):
    ran = 0
    for command in (part.strip() for c in commands for part in c.split(" && ")):
        reason = next((why for prefix, why in SKIPPED.items() if prefix in command), None)
        if reason:
            with capsys.disabled():
                print(f"\nREADME.md:{line}: skipped `{command}`: {reason}")
            continue
        synopsis = SYNOPSIS.match(command)
        parts = (
            [f"sherpa-skills {synopsis.group(1)} {p.strip()}" for p in synopsis.group(2).split("|")]
            if synopsis
            else [command]
        )
        for part in parts:
            proc = _sh(_fill(part, env, tmp_path), env)
            assert proc.returncode == 0, (
                f"README.md:{line}: `{part}` exited {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
            )
            assert "Traceback" not in proc.stderr
            ran += 1
    assert ran or all(any(p in c for p in SKIPPED) for c in commands)
