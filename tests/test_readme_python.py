"""Every ```python block in the README runs as written, as a reader copying it would run it.

Each block runs in its own subprocess with this interpreter, in a fresh working folder holding a copy of examples/ (so a
path like `examples/ticket_learning/workflow.yaml` means what it means at the repository root), with a temporary
SHERPA_SKILLS_HOME and no network. A block that raises fails with its README.md line: the block is padded so that its
traceback's line numbers are the README's. A block that cannot run is marked `<!-- not run:
REASON -->` on the line before
its fence; the reason is printed, and such blocks stay few.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
NOT_RUN = re.compile(r"^<!--\s*not run:\s*(.+?)\s*-->$")
# The runner installs the same network tripwire as conftest.py (loopback only), then runs the block as __main__.
RUNNER = """
import ipaddress, runpy, sys
def local(host):
    if host is None or host in ('', 'localhost'):
        return True
    if isinstance(host, (bytes, bytearray)):
        host = bytes(host).decode()
    try:
        return ipaddress.ip_address(str(host).strip('[]')).is_loopback
    except ValueError:
        return False
def tripwire(event, args):
    if event == 'socket.getaddrinfo' and not local(args[0]):
        raise RuntimeError(f'network access from a README snippet: {args[0]!r}')
    if event == 'socket.connect' and isinstance(args[1], tuple) and not local(args[1][0]):
        raise RuntimeError(f'network access from a README snippet: {args[1][0]!r}')
sys.addaudithook(tripwire)
runpy.run_path(sys.argv[1], run_name='__main__')
"""


class Block:
    def __init__(self, line: int, code: str, skip: str | None):
        self.line, self.code, self.skip = line, code, skip


def python_blocks(text: str) -> list[Block]:
    """Each ```python block: the README line of its first code line, its code,
    and the reason it is not run (or None)."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            marker = NOT_RUN.match(lines[i - 1].strip()) if i else None
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            blocks.append(Block(i + 2, "\n".join(lines[i + 1 : end]) + "\n", marker.group(1) if marker else None))
            i = end
        i += 1
    return blocks


def run_block(block: Block, workdir: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run one block in `workdir`; its tracebacks name README.md and the README's line numbers."""
    script = workdir.parent / "snippet" / "README.md"
    script.parent.mkdir(exist_ok=True)
    script.write_text("\n" * (block.line - 1) + block.code, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-c", RUNNER, str(script)], cwd=workdir, env=env, capture_output=True, text=True, timeout=300
    )


def failure(block: Block, proc: subprocess.CompletedProcess[str]) -> str | None:
    """None when the block ran; else what a reader needs: the README line and the end of its traceback."""
    if proc.returncode == 0:
        return None
    raised = re.findall(r'README\.md", line (\d+)', proc.stderr)
    where = f" (raised at README.md:{raised[-1]})" if raised else ""
    return (
        f"README.md:{block.line}: the python block exited {proc.returncode}{where}\n{proc.stdout[-1500:]}\n"
        f"{proc.stderr[-3000:]}"
    )


BLOCKS = python_blocks(README.read_text(encoding="utf-8"))


@pytest.fixture
def sandbox(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A fresh working folder with a copy of examples/, and an environment with a temporary home and no
    model but the stand-in."""
    workdir = tmp_path / "work"
    shutil.copytree(ROOT / "examples", workdir / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("SHERPA_SKILLS_", "OPENAI_", "ANTHROPIC_"))}
    env = {
        **keep,
        "SHERPA_SKILLS_HOME": str(tmp_path / "home"),
        "HOME": str(tmp_path / "user"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "HF_HUB_OFFLINE": "1",
    }
    return workdir, env


def test_the_readme_has_python_blocks_and_few_are_not_run():
    assert len(BLOCKS) >= 3
    assert sum(1 for b in BLOCKS if b.skip) <= 1, [b.line for b in BLOCKS if b.skip]


@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=[f"README.md:{b.line}" for b in BLOCKS])
def test_each_python_block_runs_as_written(block: Block, sandbox, capsys):
    if block.skip:
        with capsys.disabled():
            print(f"\nREADME.md:{block.line}: python block not run: {block.skip}")
        pytest.skip(block.skip)
    workdir, env = sandbox
    problem = failure(block, run_block(block, workdir, env))
    assert problem is None, problem


@pytest.mark.slow
def test_a_broken_block_fails_naming_its_readme_line(sandbox):
    """The check itself: a block that raises is reported with the README line it starts at, and the line that raised."""
    workdir, env = sandbox
    block = python_blocks("intro\n\n```python\nimport sherpa_skills as sk\n\nsk.load_workflow('no-such.yaml')\n```\n")[
        0
    ]
    block.line = 300  # as if it stood further down the README
    problem = failure(block, run_block(block, workdir, env))
    assert problem is not None and problem.startswith(
        "README.md:300: the python block exited 1 (raised at README.md:302)"
    )
    assert "no-such.yaml:1: no such file" in problem


def test_the_not_run_marker_is_read_with_its_reason():
    text = "a\n<!-- not run: shows a signature -->\n```python\ndef f(x): ...\n```\n\n```python\nprint(1)\n```\n"
    first, second = python_blocks(text)
    assert (first.line, first.skip, first.code) == (4, "shows a signature", "def f(x): ...\n")
    assert (second.line, second.skip) == (8, None)


def test_a_block_that_reaches_beyond_this_machine_fails(sandbox):
    """Snippets run offline: a lookup of another host raises in the block, as it would in the suite."""
    workdir, env = sandbox
    block = python_blocks("```python\nimport socket\n\nsocket.getaddrinfo('example.com', 443)\n```\n")[0]
    problem = failure(block, run_block(block, workdir, env))
    assert (
        problem is not None and "raised at README.md:4" in problem and "network access from a README snippet" in problem
    )
    local = python_blocks("```python\nimport socket\n\nsocket.getaddrinfo('127.0.0.1', 443)\n```\n")[0]
    assert failure(local, run_block(local, workdir, env)) is None
