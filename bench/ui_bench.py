"""Browser view server times: the runs page over 10,000 runs, a run of 3,000 steps, and `sherpa-skills ui` start-up.

Each figure is set beside a baseline measured in the same run: the CLI's own path to the same data
(`runs --json`'s list_runs, `show --json`'s get_run + load_belief) and `sherpa-skills --help` for start-up.
Pages are requested in-process through Starlette's TestClient (server time: routing, store reads, template render).

    python bench/ui_bench.py            # about a minute; rewrites its section of bench/RESULTS.md
    python bench/ui_bench.py --quick    # 200 runs, a 300-step run, 2 repeats; nothing written
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from time import perf_counter
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from harness import arguments, machine, median, parse, percentile, write_section  # noqa: E402

RUNS = 10_000
STEPS = 3_000
TARGET_RUNS_MS, TARGET_RUN_MS, TARGET_START_S = 300.0, 500.0, 1.5
DIAGRAM = "its diagram alone (`statechart_svg`: SVG of the machine, marks of 3,000 steps)"

LOOP = """\
name: long-loop
initial: work
states:
  work:
    initial: a
    states:
      a: {}
      b: {}
  done: {final: true}
transitions:
  - {trigger: next, source: work/a, dest: work/b}
  - {trigger: back, source: work/b, dest: work/a}
  - {trigger: finish, source: work, dest: done}
"""


def fill(home: Path, workflow: Path) -> str:
    """10,000 short runs of three workflows, then one run of 3,000 steps (trajectory and log rows); returns its id."""
    from seams import TickRecord

    from sherpa_skills import LogEntry, RunStore, TrajectoryEntry

    store = RunStore(home=home)
    counters = {"steps": 3, "llm_calls": 1, "tokens": 120}
    for i in range(RUNS):
        record = TickRecord(trajectory=[TrajectoryEntry(tick=0, state="work/a", at=time.time())], context=[("i", i)])
        store.create_run(
            f"run{i:05d}",
            ("triage", "planner", "build")[i % 3],
            str(workflow),
            None,
            {"i": i},
            "work/a",
            counters,
            record,
        )
        store.commit_tick(
            f"run{i:05d}",
            TickRecord(),
            status=("final", "error", "waiting")[i % 3],
            state="done",
            tick=1,
            counters=counters,
        )
    now = time.time()
    store.create_run(
        "long",
        "long-loop",
        str(workflow),
        None,
        {},
        "work/a",
        {},
        TickRecord(trajectory=[TrajectoryEntry(tick=0, state="work/a", at=now)]),
    )
    for tick in range(1, STEPS + 1):
        state = "work/b" if tick % 2 else "work/a"
        record = TickRecord(
            trajectory=[
                TrajectoryEntry(
                    tick=tick,
                    state=state,
                    trigger="next" if tick % 2 else "back",
                    source="work/a",
                    decided_by="rule",
                    at=now + tick,
                )
            ],
            log=[
                LogEntry(
                    tick=tick,
                    action="shell",
                    inputs={"command": f"echo step {tick}"},
                    outputs={"exit_code": 0, "stdout": f"step {tick}\n"},
                    started=now + tick,
                    duration_ms=3.0,
                )
            ],
            context=[("last", tick)],
        )
        store.commit_tick(
            "long", record, status="running", state=state, tick=tick, counters={"steps": tick, "actions": tick}
        )
    store.close()
    return "long"


def timed(fn: Callable[[], Any], repeats: int) -> list[float]:
    fn()  # warm-up: imports, template compilation, SQLite page cache
    out = []
    for _ in range(repeats):
        t = perf_counter()
        fn()
        out.append((perf_counter() - t) * 1000)
    return out


def startup(home: Path, repeats: int) -> tuple[list[float], list[float], list[float]]:
    """Seconds from spawning `sherpa-skills ui` to its first /api/runs answer;
    `--help` and `runs --json --limit 1` to exit."""
    ui, helps, lists = [], [], []
    for _ in range(repeats):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        t = perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "sherpa_skills.cli", "ui", "--home", str(home), "--port", str(port)],
            stderr=subprocess.DEVNULL,
        )
        try:
            while True:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/api/runs?per_page=1", timeout=5).read()
                    break
                except OSError as exc:
                    if proc.poll() is not None:
                        raise SystemExit("sherpa-skills ui exited before answering") from exc
                    time.sleep(0.01)
            ui.append(perf_counter() - t)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        t = perf_counter()
        subprocess.run([sys.executable, "-m", "sherpa_skills.cli", "--help"], check=True, capture_output=True)
        helps.append(perf_counter() - t)
        t = perf_counter()
        subprocess.run(
            [sys.executable, "-m", "sherpa_skills.cli", "runs", "--json", "--limit", "1", "--home", str(home)],
            check=True,
            capture_output=True,
        )
        lists.append(perf_counter() - t)
    return ui, helps, lists


def main() -> int:
    parser = arguments(description=__doc__.split("\n")[0], quick="200 runs and a 300-step run, 2 repeats")
    options = parse(parser)
    repeats, start_repeats = (2, 1) if options.quick else (21, 7)
    if options.quick:
        global RUNS, STEPS
        RUNS, STEPS = 200, 300
    began = perf_counter()
    load_before = " ".join(Path("/proc/loadavg").read_text().split()[:3])

    from seams import create_app, run_detail, run_summary
    from starlette.testclient import TestClient

    from sherpa_skills import RunStore

    with tempfile.TemporaryDirectory(prefix="sherpa-ui-bench-") as tmp:
        home = Path(tmp) / "home"
        workflow = Path(tmp) / "long-loop.yaml"
        workflow.write_text(LOOP)
        t = perf_counter()
        long_id = fill(home, workflow)
        fill_s = perf_counter() - t
        store = RunStore(home=home)
        with TestClient(create_app(home), base_url="http://127.0.0.1") as client:

            def get(path: str) -> Callable[[], Any]:
                def fn() -> None:
                    r = client.get(path)
                    assert r.status_code == 200, (path, r.status_code)

                return fn

            figures = {
                "runs page 1 (`/runs`, 50 of 10,000)": timed(get("/runs"), repeats),
                "runs page 100 (`/runs?page=100`)": timed(get("/runs?page=100"), repeats),
                "runs searched (`/runs?q=run0999`, a LIKE scan of 10,000)": timed(get("/runs?q=run0999"), repeats),
                "runs filtered (`/runs?status=waiting&workflow=build`)": timed(
                    get("/runs?status=waiting&workflow=build"), repeats
                ),
                "`/api/runs` (JSON twin)": timed(get("/api/runs"), repeats),
                "baseline: `runs --json` data (list_runs(50) + run_summary + json)": timed(
                    lambda: json.dumps([run_summary(r) for r in store.list_runs(50)], default=str), repeats
                ),
                "run of 3,000 steps (`/runs/long`: diagram, timeline, log)": timed(get(f"/runs/{long_id}"), repeats),
                "`/api/runs/long` (JSON twin)": timed(get(f"/api/runs/{long_id}"), repeats),
                "baseline: `show --json` data (get_run + load_belief + run_detail + json)": timed(
                    lambda: json.dumps(run_detail(store.get_run(long_id), store.load_belief(long_id)), default=str),
                    repeats,
                ),
            }
        # The page's diagram alone: SVG drawn on the server (this run keeps no machine: from its file), its layout
        # cached per machine.
        from seams import highlighted_mermaid, svg

        from sherpa_skills import load_workflow

        drawing = highlighted_mermaid(
            load_workflow(workflow).machine, store.visited_states(long_id), store.get_run(long_id).state
        )
        svg._laid_out.cache_clear()
        t = perf_counter()
        svg.statechart_svg(drawing)
        first_draw_ms = (perf_counter() - t) * 1000
        figures[DIAGRAM] = timed(lambda: svg.statechart_svg(drawing), repeats)
        store.close()
        ui_s, help_s, list_s = startup(home, start_repeats)

    load_after = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    runs_ms, run_ms = (
        median(figures["runs page 1 (`/runs`, 50 of 10,000)"]),
        median(figures["run of 3,000 steps (`/runs/long`: diagram, timeline, log)"]),
    )
    base_runs = median(figures["baseline: `runs --json` data (list_runs(50) + run_summary + json)"])
    base_run = median(figures["baseline: `show --json` data (get_run + load_belief + run_detail + json)"])
    rows = ["| request | median ms | p90 ms | vs its CLI baseline | target |", "|---|---:|---:|---:|---|"]
    for name, values in figures.items():
        base = base_run if "3,000" in name or "/api/runs/long" in name else base_runs
        ratio = "—" if name.startswith("baseline") or name == DIAGRAM else f"{median(values) / base:.1f}×"
        target = ""
        if name.startswith("runs page 1 "):
            target = f"≤ {TARGET_RUNS_MS:.0f} ms: {'met' if runs_ms <= TARGET_RUNS_MS else 'NOT met'}"
        elif name.startswith("run of 3,000"):
            target = f"≤ {TARGET_RUN_MS:.0f} ms: {'met' if run_ms <= TARGET_RUN_MS else 'NOT met'}"
        rows.append(f"| {name} | {median(values):.1f} | {percentile(values, 90):.1f} | {ratio} | {target} |")
    ui_med, help_med, list_med = median(ui_s), median(help_s), median(list_s)
    body = "\n".join(
        [
            f"- Date: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC",
            f"- Machine: {machine()}; load average at start {load_before}, at end {load_after}",
            f"- Command: `python bench/ui_bench.py` ({repeats} timed requests each after one warm-up; "
            f"start-up {start_repeats} times; "
            f"whole run {perf_counter() - began:.0f} s, of which {fill_s:.0f} s filling the store)",
            f"- Store: {RUNS:,} runs (three workflows, three statuses) "
            f"and one run of {STEPS:,} steps (a trajectory entry, a shell log entry "
            "and a context write per step), written through `RunStore` into a temporary home. "
            "Requests go through Starlette's TestClient "
            "in-process, so the figures are server time: routing, store reads, "
            "jinja2 rendering and the diagram, drawn here as SVG (the browser only sizes it).",
            "",
            *rows,
            "",
            f"The diagram's first draw (its layout, then cached for the machine): {first_draw_ms:.1f} ms.",
            "",
            "`sherpa-skills ui` start-up, spawn to first `/api/runs` answer: "
            f"median {ui_med:.2f} s (min {min(ui_s):.2f}, max {max(ui_s):.2f}); "
            f"target ≤ {TARGET_START_S} s: {'met' if ui_med <= TARGET_START_S else 'NOT met'}. "
            f"Baselines, same run: `sherpa-skills --help` to exit, median {help_med:.2f} s ({ui_med / help_med:.1f}×); "
            "`sherpa-skills runs --json --limit 1` (the same store imports, one query) to exit, "
            f"median {list_med:.2f} s ({ui_med / list_med:.1f}×).",
        ]
    )
    print(body)
    if not options.quick:
        write_section("Browser view (sherpa-skills ui)", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
