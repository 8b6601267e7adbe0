"""Every bench in bench/ runs on tiny data (`--quick`) and leaves RESULTS.md alone; benches reach past the public face
only through bench/seams.py, and every seam there still resolves. A bench that rots now fails here, not at the next
measurement."""

from __future__ import annotations

import ast
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
RESULTS = BENCH / "RESULTS.md"
#: The shared parts: the harness and the seams are imported by benches, never run as one.
SHARED = {"harness.py", "seams.py"}
#: Seconds one bench may take with --quick: seconds on a quiet machine; the margin is for a loaded, shared one.
TIMEOUT = 300.0


def benches() -> list[Path]:
    """Every bench script: bench/*.py but the shared modules and the `_` children a bench starts itself."""
    return sorted(p for p in BENCH.glob("*.py") if p.name not in SHARED and not p.name.startswith("_"))


def _digest() -> str:
    return hashlib.sha256(RESULTS.read_bytes()).hexdigest() if RESULTS.exists() else ""


def _env(home: Path) -> dict[str, str]:
    """A temp home, offline, and only the data env vars the suite itself gets (a bench skips what is missing)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k in ("PATH", "LANG", "LC_ALL", "TMPDIR", "VIRTUAL_ENV", "SHERPA_SKILLS_MINILM_MODEL")
        or k.startswith("SHERPA_SKILLS_")
        and k.endswith("_DATA")
        or k == "SHERPA_SKILLS_ACCEPTANCE_SESSIONS"
    }
    env.update(
        HOME=str(home),
        SHERPA_SKILLS_HOME=str(home / ".sherpa-skills"),
        PYTHONPATH=str(ROOT),  # this checkout's sherpa_skills, whatever is installed
        HF_HUB_OFFLINE="1",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        NO_PROXY="*",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


@pytest.mark.slow  # seconds each, minutes in all; CI still runs `slow` (the README's test command runs everything)
@pytest.mark.parametrize("bench", benches(), ids=lambda p: p.name)
def test_a_bench_runs_quick_and_leaves_results_alone(bench: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    before = _digest()
    began = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, str(bench), "--quick"],
            cwd=ROOT,
            env=_env(home),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{bench.name} --quick took over {TIMEOUT:.0f} s: --quick must run on tiny data in seconds")
    took = time.monotonic() - began
    assert _digest() == before, f"{bench.name} --quick rewrote bench/RESULTS.md (git checkout it): it must never write"
    if done.returncode == 77:  # the harness's skip: a server or a tool this machine lacks, with the reason on stderr
        pytest.skip(f"{bench.name}: {done.stderr.strip().splitlines()[-1]}")
    assert done.returncode == 0, (
        f"{bench.name} --quick exited {done.returncode} after {took:.1f} s:\n{done.stderr[-3000:]}"
    )


def _internal_imports(path: Path) -> list[str]:
    """`FILE:LINE module` for every import of sherpa_skills below its top-level package (the public face)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [f"{path.name}:{node.lineno} {n}" for n in names if n.startswith("sherpa_skills.")]
    return found


def test_benches_reach_internals_only_through_seams() -> None:
    found = [hit for p in sorted(BENCH.glob("*.py")) if p.name != "seams.py" for hit in _internal_imports(p)]
    assert found == [], "import these through bench/seams.py (one named seam each, saying why):\n" + "\n".join(found)


def test_a_stray_internal_import_is_found(tmp_path: Path) -> None:
    """The door's attack: a bench that imports an internal directly, at any depth, is named by file and line."""
    stray = tmp_path / "stray_bench.py"
    stray.write_text(
        "import sherpa_skills\n"
        "from sherpa_skills import SkillStore\n"
        "def main():\n"
        "    from sherpa_skills.skills.store.database import ProcedureDatabase\n"
        "    import sherpa_skills.engine.agent\n"
    )
    assert _internal_imports(stray) == [
        "stray_bench.py:4 sherpa_skills.skills.store.database",
        "stray_bench.py:5 sherpa_skills.engine.agent",
    ]


def test_every_seam_still_resolves() -> None:
    """A renamed or moved internal is found here, in one place, before any bench runs."""
    sys.path.insert(0, str(BENCH))
    try:
        import seams
    finally:
        sys.path.remove(str(BENCH))
    missing = []
    for name, (module, attribute) in seams.SEAMS.items():
        try:
            getattr(seams, name)
        except (ImportError, AttributeError) as caught:
            missing.append(f"{name}: {module}.{attribute} ({caught})")
    assert missing == []


def _seams_asked(path: Path) -> list[tuple[int, str]]:
    """(line, name) of every `from seams import name` in a bench, at any depth."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (n.lineno, a.name)
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.module == "seams"
        for a in n.names
    ]


def test_every_seam_a_bench_asks_for_is_named() -> None:
    """A bench's child that imports a seam only in its own process (a Redis player, a baseline's child) is checked."""
    sys.path.insert(0, str(BENCH))
    try:
        import seams
    finally:
        sys.path.remove(str(BENCH))
    unnamed = [
        f"{p.name}:{line} {name}"
        for p in sorted(BENCH.glob("*.py"))
        for line, name in _seams_asked(p)
        if name not in seams.SEAMS
    ]
    assert unnamed == [], "add these to bench/seams.py, each with why:\n" + "\n".join(unnamed)


def test_an_unknown_seam_is_refused_by_name() -> None:
    sys.path.insert(0, str(BENCH))
    try:
        import seams
    finally:
        sys.path.remove(str(BENCH))
    with pytest.raises(AttributeError, match="no seam 'NoSuchThing'"):
        seams.NoSuchThing  # noqa: B018


@pytest.mark.parametrize(
    "bench", ["ticket_stream_bench.py", "ticket_wordings_bench.py", "decision_stream_bench.py", "match_bench.py"]
)
def test_a_bench_without_its_data_skips_saying_which(bench: str, tmp_path: Path) -> None:
    """A machine without the dev sets skips the bench (77, the variable named), not fails it, nor passes it silently."""
    env = {k: v for k, v in _env(tmp_path).items() if not k.endswith("_DATA")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / bench), "--quick"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 77, done.stderr[-2000:]
    assert "skipped: set SHERPA_SKILLS_" in done.stderr


def test_a_bench_without_quick_is_refused(tmp_path: Path) -> None:
    """The door's attack: a new bench that does not take --quick exits non-zero, which the smoke test above fails."""
    plain = tmp_path / "plain_bench.py"
    plain.write_text(
        "import argparse\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--runs', type=int)\n"
        "parser.parse_args()\n"
    )
    done = subprocess.run([sys.executable, str(plain), "--quick"], capture_output=True, text=True, env=_env(tmp_path))
    assert done.returncode != 0 and "--quick" in done.stderr


@pytest.mark.parametrize("bench", benches(), ids=lambda p: p.name)
def test_a_bench_goes_through_the_harness(bench: Path) -> None:
    """Its flags (--quick, --no-write), header and RESULTS.md section come from bench/harness.py, so --quick holds."""
    tree = ast.parse(bench.read_text(encoding="utf-8"))
    uses = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "harness" for a in n.names}
    # `parse` is the door: it is what turns --quick and --no-write into "never write" (the parser may be shared).
    assert "parse" in uses, f"{bench.name}: parse its arguments with harness.parse (the shared --quick, --no-write)"
