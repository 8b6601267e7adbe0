"""Every command in the shell blocks of README.md and the docs runs as written, as a reader following the page would.

A page's blocks run in order, each command in its own `bash -c`, sharing one working folder (a copy of examples/,
statemachines/ and policies/, so paths mean what they mean at the repository root), one temporary home
(SHERPA_SKILLS_HOME) and one temporary HOME; nothing is written into the checkout. `cd DIR`, `cd -`, `export
NAME=VALUE` and `unset NAME` lines carry over to the next commands, as in the reader's shell. Placeholders the reader
fills in from what they see (RUN_ID, ID, MEMORY_ID, FILE) are taken from the home. A command exits 0 unless its
comment says `exit N`; an `<!-- output -->` block after a shell block is what its last command prints. Lines that
cannot run in a test are skipped with the reason printed, and blocks marked `<!-- not run: REASON -->` are left out
(see _snippets.py).
A block marked `<!-- needs: SERVER -->` runs against a server the suite starts (SERVERS): the address it shows is
replaced by the test server's, visibly. A command ending in `&` runs in the background until the page ends, as a
reader's background job; it must not have failed by then.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import pytest
from _servers import MARKS, SERVERS, Server, started, wait_arrived
from _snippets import ROOT, SHELL, Block, blocks, normalised, page_blocks, pages

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
        self.jobs: list[tuple[str, subprocess.Popen[bytes], Path]] = []

    def background(self, command: str, timeout: float = 60) -> None:
        """`COMMAND &`: started, and the next command waits for its first line (an agent's `ready`), as a reader
        would before going on; a job that exits first must have exited 0."""
        log = self.scratch / f"job-{len(self.jobs)}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                ["bash", "-c", self.fill(command)],
                cwd=self.cwd,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group, so the page's end stops it and its children
            )
        self.jobs.append((command, proc, log))
        deadline = time.monotonic() + timeout
        while not log.stat().st_size and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() in (None, 0), f"`{command}` exited {proc.returncode}\n{log.read_text()[-3000:]}"

    def stop_jobs(self) -> list[str]:
        """Stop the background jobs still running; what went wrong in any of them (a failure, a traceback)."""
        problems = []
        for command, proc, log in self.jobs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=10)
            elif proc.returncode != 0:
                problems.append(f"`{command}` exited {proc.returncode}")
            text = log.read_text(errors="replace")
            if "Traceback" in text:
                problems.append(f"`{command}` printed a traceback:\n{text[-3000:]}")
        return problems

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
        unset = re.match(r"^unset (\w+)$", command)
        if unset:
            self.env.pop(unset.group(1), None)
            return self.sh("true")
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


def needs(page: Path) -> list[str]:
    """The servers a page's shell blocks need, in the order they first appear."""
    return list(dict.fromkeys(b.needs for b in page_blocks(page) if b.needs and b.lang in SHELL))


def page_param(page: Path) -> object:
    marks = [mark for server in needs(page) for mark in MARKS.get(server, [])]
    return pytest.param(page, marks=marks, id=page.relative_to(ROOT).as_posix())


def test_the_docs_have_shell_blocks_and_few_are_not_run():
    shell = [b for p in pages() for b in page_blocks(p) if b.lang in SHELL]
    assert len(shell) >= 20 and sum(len(commands(b)) for b in shell) >= 60
    not_run = [b.where for b in shell if b.not_run]
    assert len(not_run) <= 2, not_run  # today: OpenAI and Ollama (tutorial); servers are started (`needs:`)
    assert {"postgres", "redis", "otlp"} <= {b.needs for b in shell}, "the server how-tos run against real servers"


def needs_problems(found: list[Block]) -> list[str]:
    """What is wrong with the `needs:` marks: a server the suite does not start, a block that is not shell commands."""
    problems = []
    for block in found:
        if block.needs is None:
            continue
        if block.needs not in SERVERS:
            problems.append(f"{block.where}: needs {block.needs!r}: the suite starts {', '.join(SERVERS)}")
        if block.lang not in SHELL:
            problems.append(f"{block.where}: `needs:` marks a shell block, not a {block.lang or 'plain'} one")
    return problems


def test_every_needs_mark_names_a_server_the_suite_starts_on_a_shell_block():
    """A typo in a mark (`needs: postgresql`) or one on a block that is not run as commands fails, naming the block."""
    assert needs_problems([b for p in pages() for b in page_blocks(p)]) == []
    text = (
        "<!-- needs: postgresql -->\n```bash\nsherpa-skills runs\n```\n<!-- needs: redis -->\n```python\nx = 1\n```\n"
    )
    assert needs_problems(blocks(text, "x.md")) == [
        "x.md:3: needs 'postgresql': the suite starts postgres, redis, otlp",
        "x.md:7: `needs:` marks a shell block, not a python one",
    ]


def test_a_needs_block_shows_the_readers_address_and_runs_with_the_test_servers():
    server = Server("redis", re.compile(r"redis://[^\s\"']+"), "redis://127.0.0.1:5555/0")
    assert server.fill("sherpa-skills send --bus redis://127.0.0.1:6379/0 --initial t.yaml") == (
        "sherpa-skills send --bus redis://127.0.0.1:5555/0 --initial t.yaml"
    )


def test_every_command_is_shown_as_sherpa_skills_command():
    """The docs show the console script, never `python -m sherpa_skills`, so a reader types what the docs show."""
    for page in pages():
        for block in page_blocks(page):
            if block.lang in SHELL:
                assert "python -m sherpa_skills" not in block.code, block.where


@pytest.mark.slow
@pytest.mark.parametrize("page", [page_param(p) for p in SHELL_PAGES])
def test_each_page_runs_as_written(
    page: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest
) -> None:
    before = untracked()
    reader = Reader(tmp_path)
    with ExitStack() as stack:
        servers: dict[str, Server] = {}
        for name in needs(page):
            assert name in SERVERS, f"{page.name}: needs {name!r}: the suite starts {list(SERVERS)}"
            servers[name] = stack.enter_context(started(name, request, tmp_path / f"server-{name}"))
            reader.env.update(servers[name].env)
            with capsys.disabled():
                shown = ", ".join(f"{k}={'***' if 'PASSWORD' in k else v}" for k, v in servers[name].env.items())
                print(f"\n{page.name}: {name} started at {servers[name].url}{'; ' + shown if shown else ''}")
        try:
            run_page(page, reader, servers, capsys)
            for server in servers.values():  # what the page sent arrived (agents and exporters finish after it)
                missing = wait_arrived(server)
                assert missing is None, f"{page.name}: {server.name}: {missing}"
        finally:
            problems = reader.stop_jobs()
        assert not problems, f"{page.name}: a background job failed: {problems}"
    added = untracked() - before
    assert not added, f"the page's commands wrote into the checkout: {sorted(added)}"


def run_page(page: Path, reader: Reader, servers: dict[str, Server], capsys: pytest.CaptureFixture[str]) -> None:
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
            parts = split_and(command)
            for at, part in enumerate(parts):
                reason = next((why for prefix, why in SKIPPED.items() if part.startswith(prefix)), None)
                if reason:
                    with capsys.disabled():
                        print(f"\n{block.where}: skipped `{part}`: {reason}")
                    continue
                if block.needs:
                    filled = servers[block.needs].fill(part)
                    if filled != part:
                        with capsys.disabled():
                            print(f"\n{block.where}: `{part}` runs as `{filled}` (the test's {block.needs} server)")
                    part = filled
                if part.endswith(" &") and not part.endswith("&& &"):
                    reader.background(part[:-2].rstrip())
                    continue
                proc = reader.run(part)
                code = proc.returncode
                assert code == (expected if at == len(parts) - 1 else 0), (
                    f"{block.where}: `{part}` exited {code}\n{proc.stdout[-3000:]}"
                )
                assert "Traceback" not in proc.stdout, f"{block.where}: `{part}`\n{proc.stdout[-3000:]}"
                last_output = proc.stdout


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
