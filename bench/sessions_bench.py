"""Session import throughput on Claude Code JSONL: MB/s and commands/s, median of 3 runs.

A synthetic ~50 MB transcript is written to a temporary folder from the line shapes of the real Claude
Code samples (read in place from $SHERPA_SKILLS_ACCEPTANCE_SESSIONS or ../shared/acceptance-sessions,
never copied into the project), repeated with fresh tool-use ids so every call is a new command; without
the samples, from a small built-in transcript of the same schema. Each run imports it into a fresh home.
Then, on the last home: re-importing the unchanged file, and importing after ~2 MB were appended; and
10,000 small session files imported, then imported again with nothing new (what a heartbeat pays).
Rewrites the `## Session import` section of bench/RESULTS.md.

    python bench/sessions_bench.py [--mb 50] [--runs 3] [--no-write]
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import arguments, parse, write_section_text  # noqa: E402  (after the sys.path lines above)
from harness import machine as shared_machine  # noqa: E402
from seams import SessionStore, import_paths  # noqa: E402

RESULTS = ROOT / "bench" / "RESULTS.md"
SECTION = "## Session import"

_BUILTIN = [
    {
        "type": "user",
        "sessionId": "s-bench",
        "uuid": "u1",
        "parentUuid": None,
        "isSidechain": False,
        "cwd": "/work/app",
        "timestamp": "2026-01-01T10:00:00.000Z",
        "message": {"role": "user", "content": "run the tests and fix what fails " * 20},
    },
    {
        "type": "assistant",
        "sessionId": "s-bench",
        "uuid": "u2",
        "parentUuid": "u1",
        "isSidechain": False,
        "cwd": "/work/app",
        "timestamp": "2026-01-01T10:00:01.000Z",
        "message": {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_A",
                    "name": "Bash",
                    "input": {"command": "pytest -q tests/", "description": "Run tests"},
                }
            ],
        },
    },
    {
        "type": "user",
        "sessionId": "s-bench",
        "uuid": "u3",
        "parentUuid": "u2",
        "isSidechain": False,
        "cwd": "/work/app",
        "timestamp": "2026-01-01T10:00:05.000Z",
        "toolUseResult": {"stdout": "1 failed, 41 passed" * 30, "stderr": "", "interrupted": False},
        "message": {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_A",
                    "is_error": True,
                    "content": "Exit code 1\n" + "F....... [100%]\n" * 60,
                }
            ],
        },
    },
    {
        "type": "assistant",
        "sessionId": "s-bench",
        "uuid": "u4",
        "parentUuid": "u3",
        "isSidechain": False,
        "cwd": "/work/app",
        "timestamp": "2026-01-01T10:00:06.000Z",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_B", "name": "Read", "input": {"file_path": "/work/app/x.py"}}
            ],
        },
    },
    {
        "type": "user",
        "sessionId": "s-bench",
        "uuid": "u5",
        "parentUuid": "u4",
        "isSidechain": False,
        "cwd": "/work/app",
        "timestamp": "2026-01-01T10:00:07.000Z",
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_B", "content": "def f():\n    return 1\n" * 200}],
        },
    },
]


def template() -> tuple[list[str], str]:
    folder = os.environ.get("SHERPA_SKILLS_ACCEPTANCE_SESSIONS") or str(ROOT.parent / "shared" / "acceptance-sessions")
    claude = Path(folder) / "claude-code"
    files = sorted(claude.rglob("*.jsonl")) if claude.is_dir() else []
    if files:
        lines = [line for f in files for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
        return (
            lines,
            f"line shapes of the {len(files)} real Claude Code samples in {folder}/claude-code "
            f"({sum(f.stat().st_size for f in files) / 1e6:.2f} MB)",
        )
    return [json.dumps(e) for e in _BUILTIN], "the built-in 5-line transcript (real samples not found)"


_IDS = re.compile(r'"(toolu_|call_)')


def write_transcript(path: Path, lines: list[str], target_bytes: int) -> tuple[int, int]:
    """Repeat `lines` with fresh tool-use ids until the file reaches `target_bytes`; returns (bytes, repeats)."""
    written = repeat = 0
    with path.open("w", encoding="utf-8") as out:
        while written < target_bytes:
            chunk = "\n".join(_IDS.sub(lambda m, r=repeat: f'"{m.group(1)}r{r}_', line) for line in lines) + "\n"
            out.write(chunk)
            written += len(chunk.encode("utf-8"))
            repeat += 1
    return written, repeat


def many_files(work: Path, count: int = 10_000) -> tuple[float, float]:
    """(first import, median of 3 re-imports) of `count` small session files, seconds:
    what a heartbeat pays with nothing new."""
    root = work / "many" / "projects"
    for i in range(count):
        folder = root / f"-project-{i % 100}"
        folder.mkdir(parents=True, exist_ok=True)
        session = f"{i:08d}-0000-4000-8000-000000000000"
        lines = [
            {
                "type": "assistant",
                "sessionId": session,
                "uuid": "a",
                "cwd": "/w",
                "timestamp": "2026-01-01T00:00:00Z",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": f"toolu_many_{i}", "name": "Bash", "input": {"command": "make test"}}
                    ],
                },
            },
            {
                "type": "user",
                "sessionId": session,
                "uuid": "b",
                "cwd": "/w",
                "timestamp": "2026-01-01T00:00:03Z",
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": f"toolu_many_{i}", "content": "ok"}],
                },
            },
        ]
        (folder / f"{session}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    home = work / "many" / "home"
    started = time.perf_counter()
    import_paths([root], home=home)
    first = time.perf_counter() - started
    again = []
    for _ in range(3):
        started = time.perf_counter()
        summary = import_paths([root], home=home)
        again.append(time.perf_counter() - started)
        assert summary.commands == 0 and summary.unchanged_files == count
    return first, statistics.median(again)


def git_rev() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = arguments(description=__doc__.split("\n", 1)[0], quick="a 0.5 MB transcript, one run")
    parser.add_argument("--mb", type=float, default=50.0, help="size of the synthetic transcript (default 50)")
    parser.add_argument("--runs", type=int, default=3)
    args = parse(parser, argv)
    if args.quick:
        args.mb, args.runs = 0.5, 1

    lines, origin = template()
    work = Path(tempfile.mkdtemp(prefix="sessions-bench-"))
    try:
        transcript = work / "projects" / "-bench" / "5e55a0b5-0000-4000-8000-000000000000.jsonl"
        transcript.parent.mkdir(parents=True)
        size, repeats = write_transcript(transcript, lines, int(args.mb * 1e6))
        runs = []
        for run in range(args.runs):
            home = work / f"home{run}"
            started = time.perf_counter()
            summary = import_paths([transcript], home=home, settle_seconds=1e12)
            seconds = time.perf_counter() - started
            runs.append((seconds, summary))
            print(
                f"run {run + 1}: {seconds:.2f} s, {size / 1e6 / seconds:.1f} MB/s, {summary.commands} commands "
                f"({summary.commands / seconds:,.0f}/s)",
                flush=True,
            )
        seconds = statistics.median(r[0] for r in runs)
        summary = runs[0][1]
        # The last home again: nothing new, then ~2 MB appended.
        started = time.perf_counter()
        again = import_paths([transcript], home=home, settle_seconds=1e12)
        unchanged_ms = (time.perf_counter() - started) * 1000
        with transcript.open("a", encoding="utf-8") as out:
            extra = "\n".join(_IDS.sub(lambda m: f'"{m.group(1)}extra_', line) for line in lines) + "\n"
            out.write(extra)
        started = time.perf_counter()
        grown = import_paths([transcript], home=home, settle_seconds=1e12)
        grown_s = time.perf_counter() - started
        with SessionStore(home=home) as store:
            stored = store.count_commands()
        many_first, many_again = many_files(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    mbps = size / 1e6 / seconds
    cps = summary.commands / seconds
    spread = ", ".join(f"{r[0]:.2f} s" for r in runs)
    section = f"""{SECTION}

- Date: {datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")} (commit {git_rev()})
- Machine: {shared_machine()}
- Command: `python bench/sessions_bench.py{"" if args.mb == 50 and args.runs == 3 else f" --mb {args.mb:g} --runs {args.runs}"}`
- Workload: one synthetic Claude Code transcript of {size / 1e6:.1f} MB ({repeats} repeats of {origin}, tool-use ids made unique per repeat),
  {summary.lines_read:,} lines, {summary.commands:,} Bash commands ({summary.succeeded:,} succeeded, {summary.failed:,} failed,
  {summary.rejected:,} rejected, {summary.unknown:,} unknown), imported with `import_paths` into a fresh home (SQLite WAL) each run:
  parse, pair tool_use/tool_result, redact commands and output excerpts, store.

| measure | value |
|---|---:|
| import throughput (median of {len(runs)}) | **{mbps:.1f} MB/s** |
| commands imported per second (median) | {cps:,.0f} |
| wall time per run | {spread} |
| re-import of the unchanged file | {unchanged_ms:.1f} ms, {again.commands} new commands |
| import after {len(extra.encode()) / 1e6:.1f} MB were appended | {grown_s * 1000:.0f} ms, {grown.commands} new commands ({len(extra.encode()) / 1e6 / grown_s:.1f} MB/s); {stored:,} stored in all |
| 10,000 one-call session files: first import | {many_first:.2f} s ({10_000 / many_first:,.0f} files/s) |
| the same 10,000 files again, nothing new (median of 3) | {many_again * 1000:.0f} ms (size and mtime unchanged: not opened) |
"""  # noqa: E501  (a RESULTS.md section as it reads: a table row is one line)
    print(section)
    if not args.no_write:
        write_section_text(section)
        print(f"updated {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
