"""Every ```python block in README.md and the docs runs as written, as a reader copying it would run it.

Each block runs in its own subprocess with this interpreter, in a fresh working folder holding a copy of examples/ (so a
path like `examples/ticket_learning/workflow.yaml` means what it means at the repository root) and the files its page
asks the reader to save (`<!-- file: PATH -->`), with a temporary SHERPA_SKILLS_HOME and no network. A block that
raises fails with its page and line: the block is padded so that its traceback's line numbers are the page's. An
`<!-- output -->` block after it is what it prints. A block that cannot run is marked `<!-- not run: REASON -->` on
the line before its fence; the reason is printed, and such blocks stay few.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _snippets import ROOT, Block, all_blocks, blocks, normalised

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
        raise RuntimeError(f'network access from a docs snippet: {args[0]!r}')
    if event == 'socket.connect' and isinstance(args[1], tuple) and not local(args[1][0]):
        raise RuntimeError(f'network access from a docs snippet: {args[1][0]!r}')
sys.addaudithook(tripwire)
runpy.run_path(sys.argv[1], run_name='__main__')
"""

ALL = all_blocks()
PYTHON = [b for b in ALL if b.lang == "python" and not b.file]


def expected_output(block: Block) -> str | None:
    """The `<!-- output -->` block right after this one on its page, if any."""
    same_page = [b for b in ALL if b.page == block.page]
    following = [b for b in same_page if b.line > block.line]
    return following[0].code if following and following[0].output else None


def run_block(block: Block, workdir: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run one block in `workdir`; its tracebacks name the page and its line numbers."""
    script = workdir.parent / "snippet" / block.page
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text("\n" * (block.line - 1) + block.code, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-c", RUNNER, str(script)], cwd=workdir, env=env, capture_output=True, text=True, timeout=300
    )


def failure(block: Block, proc: subprocess.CompletedProcess[str]) -> str | None:
    """None when the block ran; else what a reader needs: the page line and the end of its traceback."""
    if proc.returncode == 0:
        return None
    raised = re.findall(rf'{re.escape(Path(block.page).name)}", line (\d+)', proc.stderr)
    where = f" (raised at {block.page}:{raised[-1]})" if raised else ""
    return (
        f"{block.where}: the python block exited {proc.returncode}{where}\n{proc.stdout[-1500:]}\n{proc.stderr[-3000:]}"
    )


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
        "TMPDIR": str(tmp_path),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "HF_HUB_OFFLINE": "1",
    }
    return workdir, env


def test_the_docs_have_python_blocks_and_few_are_not_run():
    assert len(PYTHON) >= 6
    assert sum(1 for b in PYTHON if b.not_run) <= 3, [b.where for b in PYTHON if b.not_run]


@pytest.mark.slow
@pytest.mark.parametrize("block", PYTHON, ids=[b.where for b in PYTHON])
def test_each_python_block_runs_as_written(block: Block, sandbox, capsys):
    if block.not_run:
        with capsys.disabled():
            print(f"\n{block.where}: python block not run: {block.not_run}")
        pytest.skip(block.not_run)
    workdir, env = sandbox
    for saved in (b for b in ALL if b.page == block.page and b.file and not b.not_run):
        target = workdir / saved.file
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(saved.code, encoding="utf-8")
    proc = run_block(block, workdir, env)
    problem = failure(block, proc)
    assert problem is None, problem
    shown = expected_output(block)
    if shown is not None:
        assert normalised(shown) in normalised(proc.stdout), f"{block.where}: it printed\n{proc.stdout[-3000:]}"


@pytest.mark.slow
def test_a_broken_block_fails_naming_its_page_line(sandbox):
    """The check itself: a block that raises is reported with the line it starts at, and the line that raised."""
    workdir, env = sandbox
    text = "intro\n\n```python\nimport sherpa_skills as sk\n\nsk.load_workflow('no-such.yaml')\n```\n"
    block = blocks(text, "x.md")[0]
    block.line = 300  # as if it stood further down the page
    problem = failure(block, run_block(block, workdir, env))
    assert problem is not None and problem.startswith("x.md:300: the python block exited 1 (raised at x.md:302)")
    assert "no-such.yaml:1: no such file" in problem


def test_the_markers_are_read_with_their_values():
    text = (
        "a\n<!-- not run: shows a signature -->\n```python\ndef f(x): ...\n```\n\n```python\nprint(1)\n```\n"
        "<!-- output -->\n```text\n1\n```\n<!-- file: a/b.yaml -->\n```yaml\nname: x\n```\n"
    )
    first, second, output, saved = blocks(text, "x.md")
    assert (first.line, first.not_run, first.code) == (4, "shows a signature", "def f(x): ...\n")
    assert (second.line, second.not_run, second.output) == (8, None, False)
    assert output.output and output.code == "1\n"
    assert (saved.file, saved.lang) == ("a/b.yaml", "yaml")


def test_a_block_that_reaches_beyond_this_machine_fails(sandbox):
    """Snippets run offline: a lookup of another host raises in the block, as it would in the suite."""
    workdir, env = sandbox
    block = blocks("```python\nimport socket\n\nsocket.getaddrinfo('example.com', 443)\n```\n", "x.md")[0]
    problem = failure(block, run_block(block, workdir, env))
    assert problem is not None and "raised at x.md:4" in problem and "network access from a docs snippet" in problem
    local = blocks("```python\nimport socket\n\nsocket.getaddrinfo('127.0.0.1', 443)\n```\n", "x.md")[0]
    assert failure(local, run_block(local, workdir, env)) is None


def test_output_is_compared_with_ids_and_times_folded():
    assert normalised("run 3a52831c065e  ✓ set 12 ms\n  in /tmp/tmp.x/a archive-notes-990c1b8f") == normalised(
        "run 0123456789ab ✓ set 0 ms in /var/other/a archive-notes-f9026362"
    )
