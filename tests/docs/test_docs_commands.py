"""Every command in the shell blocks of README.md and the docs runs as written, as a reader following the page would.

A page's blocks run in order, each command in its own `bash -c`, sharing one working folder (a copy of examples/,
statemachines/ and policies/, so paths mean what they mean at the repository root), one temporary home
(SHERPA_SKILLS_HOME) and one temporary HOME; nothing is written into the checkout. `cd DIR`, `cd -` and
`export NAME=VALUE` lines carry over to the next commands, as in the reader's shell. Placeholders the reader fills in
from what they see (RUN_ID, ID, MEMORY_ID, FILE) are taken from the home. A command exits 0 unless its comment says
`exit N`; an `<!-- output -->` block after a shell block is what its last command prints. Lines that cannot run in a
test are skipped with the reason printed, and blocks marked `<!-- not run: REASON -->` are left out (see _snippets.py).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _snippets import ROOT, SHELL, Block, normalised, page_blocks, pages

# Lines that cannot run in a test, and why (printed, and kept few).
SKIPPED = {
    "pip install": "installs from the package index (the suite runs from an installed checkout)",
    "python3 -m venv": "makes and enters a virtual environment (the suite already runs in one)",
    ". .venv/bin/activate": "enters a virtual environment (the suite already runs in one)",
    "python -m pytest": "runs this very suite",
    "git clone": "clones from GitHub (the suite runs in a clone already)",
    "sherpa-skills ui": "serves until stopped (tests/ui start it on a free port and drive it)",
    "mkdocs serve": "serves until stopped (the docs build is checked by `mkdocs build --strict`)",
    "mkdocs build": "needs the docs extra (CI builds the site)",
    "ruff ": "a style gate: .ci/run runs it on the checkout (here the working folder is a copy of examples/ only)",
    "mypy": "a style gate: .ci/run runs it on the checkout (here the working folder is a copy of examples/ only)",
    "python docs/reference/generate.py": "rewrites the checkout's reference (tests/docs/test_reference.py checks it)",
}
COPIED = ("examples", "statemachines", "policies")
EXPECTED_EXIT = re.compile(r"#.*\bexit(?:s)? (\d+)\b")


def commands(block: Block) -> list[tuple[str, int]]:
    """(command, expected exit code) per command line: comments dropped, `\\` continuations joined."""
    found: list[tuple[str, int]] = []
    pending = ""
    for line in block.code.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1].strip() + " "
            continue
        line = pending + line.strip() if pending else line
        pending = ""
        expected = EXPECTED_EXIT.search(line[len(strip_comment(line)) :])
        command = strip_comment(line).strip()
        if command:
            found.append((command, int(expected.group(1)) if expected else 0))
    return found


def strip_comment(line: str) -> str:
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


class Reader:
    """One reader's shell: a working folder, a home, and what `cd` and `export` changed."""

    def __init__(self, tmp: Path) -> None:
        self.cwd = self.previous = tmp / "work"
        self.cwd.mkdir()
        for name in COPIED:
            shutil.copytree(ROOT / name, self.cwd / name, ignore=shutil.ignore_patterns("__pycache__"))
        for name in ("user", "tmp"):
            (tmp / name).mkdir()
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("SHERPA_SKILLS_", "OPENAI_", "ANTHROPIC_"))}
        self.env = {
            **keep,
            "SHERPA_SKILLS_HOME": str(tmp / "home"),
            "HOME": str(tmp / "user"),
            "TMPDIR": str(tmp / "tmp"),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            "COLUMNS": "100",
            "PYTHONDONTWRITEBYTECODE": "1",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "HF_HUB_OFFLINE": "1",
        }
        self.scratch = tmp

    def sh(self, command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", command],
            cwd=self.cwd,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=180,
            stdin=subprocess.DEVNULL,
        )

    def run(self, command: str) -> subprocess.CompletedProcess[str]:
        if command == "cd -":  # back to the folder before the last `cd`, as the reader's shell goes
            self.cwd, self.previous = self.previous, self.cwd
            return self.sh("pwd")
        if command.startswith("cd "):
            proc = self.sh(f"{command} && pwd")
            if proc.returncode == 0:
                self.previous, self.cwd = self.cwd, Path(proc.stdout.strip().splitlines()[-1])
            return proc
        exported = re.match(r"^export (\w+)=", command)
        if exported:
            proc = self.sh(f'{command} && printf %s "${exported.group(1)}"')
            if proc.returncode == 0:
                self.env[exported.group(1)] = proc.stdout
            return proc
        return self.sh(self.fill(command))

    def fill(self, command: str) -> str:
        """RUN_ID → the newest run in the home; ID → the newest procedure; MEMORY_ID → the newest memory artifact;
        FILE → a fresh `learn export`;
        python → this interpreter."""
        if "RUN_ID" in command:
            runs = json.loads(self.sh("sherpa-skills runs --json").stdout)
            assert runs, f"no run to fill RUN_ID in: {command}"
            command = command.replace("RUN_ID", runs[0]["run_id"])
        if re.search(r"\bID\b", command):
            procedures = json.loads(self.sh("sherpa-skills learn procedures --json").stdout)
            assert procedures, f"no procedure to fill ID in: {command}"
            command = re.sub(r"\bID\b", procedures[0]["id"], command)
        if "MEMORY_ID" in command:
            lines = self.sh("sherpa-skills memory export --history").stdout.splitlines()
            artifacts = [json.loads(line) for line in lines if line.startswith("{")]
            assert artifacts, f"no memory artifact to fill MEMORY_ID in: {command}"
            command = command.replace("MEMORY_ID", max(artifacts, key=lambda a: a["created"])["id"])
        if re.search(r"\bFILE\b", command):
            exported = self.scratch / "export.json"
            assert self.sh(f"sherpa-skills learn export {shlex.quote(str(exported))}").returncode == 0
            command = re.sub(r"\bFILE\b", shlex.quote(str(exported)), command)
        return re.sub(r"(^|&& |\| )python ", rf"\1{shlex.quote(sys.executable)} ", command)


def untracked() -> set[str]:
    """What git does not track in the checkout, ignored or not, a new folder as one entry (none without git)."""
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        return set()
    proc = subprocess.run(
        ["git", "ls-files", "--others", "--directory"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    # Tools' caches and environments at the top (.mypy_cache/, .venv/) come and go as a developer works meanwhile.
    return {path for path in proc.stdout.splitlines() if not path.startswith(".") and "__pycache__" not in path}


SHELL_PAGES = [p for p in pages() if any(b.lang in SHELL and not b.not_run for b in page_blocks(p))]


def test_the_docs_have_shell_blocks_and_few_are_not_run():
    shell = [b for p in pages() for b in page_blocks(p) if b.lang in SHELL]
    assert len(shell) >= 20 and sum(len(commands(b)) for b in shell) >= 60
    not_run = [b.where for b in shell if b.not_run]
    assert len(not_run) <= 6, not_run  # today: OpenAI and Ollama (tutorial), PostgreSQL, Redis, an OTLP collector


def test_every_command_is_shown_as_sherpa_skills_command():
    """The docs show the console script, never `python -m sherpa_skills`, so a reader types what the docs show."""
    for page in pages():
        for block in page_blocks(page):
            if block.lang in SHELL:
                assert "python -m sherpa_skills" not in block.code, block.where


@pytest.mark.slow
@pytest.mark.parametrize("page", SHELL_PAGES, ids=[p.relative_to(ROOT).as_posix() for p in SHELL_PAGES])
def test_each_page_runs_as_written(page: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = untracked()
    reader = Reader(tmp_path)
    last_output: str | None = None
    for block in page_blocks(page):
        if block.file and not block.not_run:
            target = reader.cwd / block.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.code, encoding="utf-8")
        if block.output and last_output is not None:
            assert normalised(block.code) in normalised(last_output), (
                f"{block.where}: the output shown is not what the command prints:\n{last_output[-3000:]}"
            )
        if block.lang not in SHELL:
            if not block.output and not block.file:
                last_output = None  # an output block after this one is the python test's to compare
            continue
        if block.not_run:
            with capsys.disabled():
                print(f"\n{block.where}: not run: {block.not_run}")
            continue
        last_output = None
        for command, expected in commands(block):
            for part in split_and(command):
                reason = next((why for prefix, why in SKIPPED.items() if part.startswith(prefix)), None)
                if reason:
                    with capsys.disabled():
                        print(f"\n{block.where}: skipped `{part}`: {reason}")
                    continue
                proc = reader.run(part)
                code = proc.returncode
                assert code == (expected if part == split_and(command)[-1] else 0), (
                    f"{block.where}: `{part}` exited {code}\n{proc.stdout[-3000:]}"
                )
                assert "Traceback" not in proc.stdout, f"{block.where}: `{part}`\n{proc.stdout[-3000:]}"
                last_output = proc.stdout
    added = untracked() - before
    assert not added, f"the page's commands wrote into the checkout: {sorted(added)}"


def split_and(command: str) -> list[str]:
    """`a && b` as the reader's shell runs it: one after the other (each part a command of its own here)."""
    return [part.strip() for part in command.split(" && ")]


def test_the_command_reader_follows_the_conventions():
    block = Block(
        "x.md",
        1,
        "bash",
        "# a comment\nsherpa-skills runs   # list them\nsherpa-skills learn replay 'x # y' \\\n  --json   # exit 3\n",
    )
    assert commands(block) == [("sherpa-skills runs", 0), ("sherpa-skills learn replay 'x # y' --json", 3)]
    assert split_and("cd /tmp && ls") == ["cd /tmp", "ls"]
