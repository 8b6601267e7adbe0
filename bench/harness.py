"""What every bench shares: its flags (--quick, --no-write), its header, its timing and its RESULTS.md section.

A bench parses its arguments with `parse(arguments(__doc__, quick="what --quick shrinks"))`: --quick runs it on tiny
data in seconds (tests/bench/test_bench_smoke.py runs every bench so) and, like --no-write, leaves RESULTS.md alone.
A bench reaches past the public face (`sherpa_skills`, SkillStore, Workflow, RunStore, the CLI) only through
bench/seams.py; one that cannot run here (no server, no tool) calls `skip(reason)`.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
_HEADER = (
    "# Benchmark results\n\nMeasured figures from the scripts in `bench/`; each section is rewritten by its script.\n"
)


#: Whether write_section may touch RESULTS.md: `parse` turns it off for --quick and --no-write, so no bench can forget.
_WRITE = True
#: The exit code of a bench that cannot run here (no server, no tool): the smoke test reports it as a skip.
SKIP = 77


def arguments(
    description: str | None = None, quick: str = "tiny data, in seconds", **kwargs: Any
) -> argparse.ArgumentParser:
    """An argument parser with the flags every bench shares; the bench adds its own."""
    kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
    made = argparse.ArgumentParser(description=description, **kwargs)
    made.add_argument("--quick", action="store_true", help=f"{quick}; never writes bench/RESULTS.md")
    made.add_argument("--no-write", action="store_true", help="print the section, do not touch bench/RESULTS.md")
    return made


def parse(made: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The bench's arguments; after --quick or --no-write, write_section only prints and `args.no_write` is set."""
    global _WRITE
    args = made.parse_args(argv)
    args.no_write = args.no_write or args.quick  # a bench's own `if not args.no_write` (a model file) holds too
    _WRITE = not args.no_write
    return args


def command(script: str, argv: Sequence[str] | None = None) -> str:
    """The command line that reproduces this measurement, as RESULTS.md quotes it."""
    return shlex.join(["python", f"bench/{Path(script).name}", *(sys.argv[1:] if argv is None else argv)])


def header(cmd: str) -> str:
    """The lines a section opens with: the machine and its load, and the exact command."""
    return f"Machine: {machine()}.\nCommand: `{cmd}`."


def timed(fn: Callable[[], object], repeats: int) -> list[float]:
    """Seconds of `repeats` calls of `fn`, one figure a call (wall clock, perf_counter)."""
    out = []
    for _ in range(repeats):
        began = time.perf_counter()
        fn()
        out.append(time.perf_counter() - began)
    return out


def skip(reason: str) -> NoReturn:
    """Stop a bench that cannot run on this machine, saying why (the smoke test skips it, as the suite does)."""
    print(f"skipped: {reason}", file=sys.stderr)
    raise SystemExit(SKIP)


def machine() -> str:
    """`uname -srm`, cores, CPU model, Python, the load average and the commit measured."""
    cpu = "unknown CPU"
    try:
        cpu = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
    except (OSError, StopIteration):
        pass
    uname = " ".join((platform.system(), platform.release(), platform.machine()))
    try:
        load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        load = "unknown"
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=RESULTS.parent
        ).stdout.strip()
    except OSError:
        rev = ""
    return f"`{uname}`, {os.cpu_count()} cores, {cpu}, Python {platform.python_version()}; load average {load}" + (
        f"; commit {rev}" if rev else ""
    )


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def _bounds(lines: list[str], title: str) -> tuple[int, int] | None:
    """Where the `## title` section is in RESULTS.md's lines: its heading's index and the index after its last line."""
    start = next((i for i, line in enumerate(lines) if line.rstrip() == f"## {title}"), None)
    if start is None:
        return None
    return start, next(
        (j for j in range(start + 1, len(lines)) if lines[j].startswith("## ") or lines[j].startswith("# ")), len(lines)
    )


def write_section(title: str, body: str) -> None:
    """Replace the `## title` section of RESULTS.md (or append it), leaving every other section as it was; after
    --quick or --no-write, print it instead."""
    if not _WRITE:
        print(f"## {title}\n\n{body.rstrip()}\n")
        return
    text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else _HEADER
    lines = text.splitlines(keepends=True)
    section = f"## {title}\n\n{body.rstrip()}\n"
    bounds = _bounds(lines, title)
    if bounds is None:
        RESULTS.write_text(text.rstrip("\n") + "\n\n" + section, encoding="utf-8")
        return
    start, end = bounds
    tail = "".join(lines[end:])
    RESULTS.write_text("".join(lines[:start]) + section + ("\n" + tail if tail else ""), encoding="utf-8")


def read_section(title: str) -> str | None:
    """The body of the `## title` section of RESULTS.md (without its heading), or None when there is none."""
    lines = RESULTS.read_text(encoding="utf-8").splitlines(keepends=True) if RESULTS.exists() else []
    bounds = _bounds(lines, title)
    return None if bounds is None else "".join(lines[bounds[0] + 1 : bounds[1]]).strip("\n")


def write_section_text(section: str) -> None:
    """Like `write_section`, for a section text that starts with its own `## title` line."""
    heading, _, body = section.lstrip().partition("\n")
    write_section(heading.removeprefix("## ").strip(), body.strip("\n"))
