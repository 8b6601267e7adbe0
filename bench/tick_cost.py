"""Tick cost in instructions per step: the peer workload counted by callgrind, this tree against an earlier commit.

Runs the shared `tick_cost.sh` (a 6-step plan/act/check cycle in a 3-level hierarchy, a rule decision per cycle,
3 episodes x 120 steps, only the run part counted; see its `bench_sherpa_skills.py`) on this source tree and, with
`--before REF`, on `git archive REF` in the same run. Then cProfile on the same workload shares those instructions out
among the functions of the tick (an estimate: a function's inclusive share of profiled time x the callgrind count).

    python bench/tick_cost.py --before f83fcaa       # about 3 minutes; rewrites a section of bench/RESULTS.md
    python bench/tick_cost.py --no-write             # this tree only, print the section

Needs valgrind. The shared scripts are found through SHERPA_SKILLS_PEER_BENCH (a folder holding tick_cost.sh), else
in a `shared/bench` folder beside the checkout or one level up (../shared/bench, ../../shared/bench).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from harness import arguments, machine, parse, skip, write_section  # noqa: E402  (after the sys.path line above)

TITLE = "Tick cost (instructions per step)"
TARGETS = {"memory": 160.0, "durable": 600.0}
PEERS = {"memory": "Burr 0.43: 460", "durable": "Burr 0.43 + SQLite persister: 929"}
# (file name, function, more functions of that file) -> the label shown; inclusive costs,
# so rows nest and do not add up.
FUNCTIONS = [
    (("tick.py", "tick_flow"), "run.tick.tick_flow (one step, commit excluded)"),
    (("compiler.py", "available"), "CompiledMachine.available (guards)"),
    (("compiler.py", "check_arguments"), "check_arguments (decision's arguments)"),
    (("tick.py", "act_all"), "run.tick.act_all (actions, their log entries and context writes)"),
    (("context.py", "increment"), "the increment action itself"),
    (("accounting.py", "log_action"), "run.accounting.log_action"),
    (("agent.py", "_recorded"), "Agent._recorded (scrub + freeze into the belief)"),
    (("agent.py", "_write_context"), "Agent._write_context"),
    (("agent.py", "_trajectory"), "Agent._trajectory"),
    (("main.py", "model_construct"), "pydantic model_construct (entries)"),
    (("belief.py", "log_entry", "trajectory_entry"), "belief.log_entry + trajectory_entry"),
    (("journal.py", "commit"), "run.journal.commit"),
    (("runstore.py", "commit_tick"), "RunStore.commit_tick"),
    (("run_values.py", "_dump"), "run_values._dump (redact + JSON per row)"),
    (("_values.py", "redact_value"), "redact_value"),
    (("~", "<method 'execute' of 'sqlite3.Connection' objects>"), "sqlite3 execute (BEGIN, UPDATE runs, COMMIT)"),
    (("~", "<method 'executemany' of 'sqlite3.Connection' objects>"), "sqlite3 executemany (appended rows)"),
]

# Runs the shared workload under cProfile, the counted part only (the same episodes tick_cost.sh counts, more of them).
_PROFILE_CHILD = r"""
import cProfile, io, json, os, pstats, runpy, sys
bench_dir, variant = sys.argv[1], sys.argv[2]
sys.argv = ["bench_sherpa_skills.py", "--variant", variant, "--reps", "1", "--episodes", "30"]
os.environ["PEERBENCH_ICOUNT"] = "1"
sys.path.insert(0, bench_dir)
import common
profile = cProfile.Profile()
def bench(a, build, run, llm_calls=lambda: 0, trajectory=None):
    run(build())
    agents = [build() for _ in range(a.episodes)]
    profile.enable()
    for agent in agents:
        run(agent)
    profile.disable()
    return {"icount_mode": True, "llm_calls_per_100_steps": None}
common.bench = bench
out, sys.stdout = sys.stdout, io.StringIO()
runpy.run_path(os.path.join(bench_dir, "bench_sherpa_skills.py"), run_name="__main__")
sys.stdout = out
stats = pstats.Stats(profile).stats
total = sum(tt for (_, _, _), (_, _, tt, _, _) in stats.items())
rows = {}
for (file, line, name), (_, _, tt, ct, _) in stats.items():
    key = os.path.basename(file) + "|" + name
    rows[key] = rows.get(key, 0.0) + ct / total
print(json.dumps(rows))
"""


def shared_bench() -> Path:
    """The folder holding the shared tick_cost.sh."""
    given = os.environ.get("SHERPA_SKILLS_PEER_BENCH")
    candidates = [Path(given)] if given else [ROOT.parent / "shared" / "bench", ROOT.parent.parent / "shared" / "bench"]
    for folder in candidates:
        if (folder / "tick_cost.sh").is_file():
            return folder
    raise SystemExit(
        f"tick_cost.sh not found in {', '.join(map(str, candidates))}; set SHERPA_SKILLS_PEER_BENCH to its folder"
    )


def _child(argv: list[str], tree: Path, env: dict[str, str], what: str) -> str:
    """Run a measuring child on `tree`'s code; its stdout, or exit naming what failed."""
    done = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{what} failed on {tree}: {done.stderr.strip()[-2000:]}")
    return done.stdout


def count(tree: Path, bench_dir: Path, variants: list[str]) -> dict[str, float]:
    """kinstr per step for each variant, from the shared script run on `tree`'s code."""
    env = {**os.environ, "PYTHON": sys.executable, "PYTHONPATH": str(tree)}
    out = _child(["bash", str(bench_dir / "tick_cost.sh"), *variants], tree, env, "tick_cost.sh")
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return {r["variant"]: r["kinstr_per_step"] for r in rows}


def shares(tree: Path, bench_dir: Path, variant: str) -> dict[str, float]:
    """Each function's inclusive share of the profiled run part, by `file|function`."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = _child([sys.executable, "-c", _PROFILE_CHILD, str(bench_dir), variant], tree, env, f"profiling {variant}")
    return json.loads(out.strip().splitlines()[-1])


def export(ref: str, into: Path) -> str:
    """The tree of commit `ref`, extracted into `into`; returns the short commit id."""
    rev = subprocess.run(
        ["git", "rev-parse", "--short", ref], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    archive = subprocess.run(["git", "archive", "--format=tar", rev], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return rev


def function_rows(variant: str, kinstr: dict[str, float], profiled: dict[str, dict[str, float]]) -> list[str]:
    labels = list(profiled)
    lines = [
        f"| {variant}: function (inclusive) | " + " | ".join(f"{t} kinstr/step" for t in labels) + " |",
        "|---|" + "---:|" * len(labels),
    ]
    for (file, *names), label in FUNCTIONS:
        found = [[profiled[t][f"{file}|{n}"] for n in names if f"{file}|{n}" in profiled[t]] for t in labels]
        values = [sum(f) if f else None for f in found]
        if all(v is None or v * kinstr[t] < 0.5 for v, t in zip(values, labels, strict=True)):
            continue
        cells = ["—" if v is None else f"{v * kinstr[t]:.1f}" for v, t in zip(values, labels, strict=True)]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = arguments(description=__doc__.split("\n\n")[0], quick="the shared workload run once, uncounted")
    parser.add_argument("--before", metavar="REF", help="also count this commit (git archive), in the same run")
    parser.add_argument(
        "--variants", nargs="+", default=["memory", "durable"], choices=["memory", "durable", "durable-full", "llm"]
    )
    parser.add_argument("--no-functions", action="store_true", help="skip the cProfile breakdown")
    parser.add_argument("--repeat", type=int, default=1, metavar="N", help="count each tree N times; report medians")
    args = parse(parser, argv)
    if args.quick:  # callgrind takes minutes: the shared workload runs once, uncounted (its path, not its figure)
        workload = [sys.executable, str(shared_bench() / "bench_sherpa_skills.py"), "--variant", "memory"]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        print(_child([*workload, "--reps", "1", "--episodes", "1"], ROOT, env, "the shared workload"))
        return 0
    if shutil.which("valgrind") is None:
        skip("valgrind is not installed (Debian: apt-get install -y valgrind)")
    bench_dir = shared_bench()
    command = shlex.join(["python", "bench/tick_cost.py", *(argv if argv is not None else sys.argv[1:])])
    started = datetime.now(timezone.utc)
    with tempfile.TemporaryDirectory(prefix="sherpa-tick-cost-") as tmp:
        trees: dict[str, Path] = {}
        if args.before:
            rev = export(args.before, Path(tmp))
            trees[f"before ({rev})"] = Path(tmp)
        trees["after (this tree)"] = ROOT
        for tree in trees.values():  # both trees from bytecode: a tree compiled only on import counts its compiling
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "sherpa_skills")], check=True)
        runs: dict[str, list[dict[str, float]]] = {label: [] for label in trees}
        for _ in range(max(1, args.repeat)):  # interleaved, so a change of load falls on both trees alike
            for label, tree in trees.items():
                runs[label].append(count(tree, bench_dir, args.variants))
        figures = {
            label: {v: statistics.median(r[v] for r in rows) for v in args.variants} for label, rows in runs.items()
        }
        for label, row in figures.items():
            print(label, json.dumps(row), flush=True)
        profiled = (
            {}
            if args.no_functions
            else {
                v: {label: shares(tree, bench_dir, v) for label, tree in trees.items()}
                for v in args.variants
                if v in ("memory", "durable")
            }
        )
    labels = list(trees)
    lines = [
        f"- Date: {started.strftime('%Y-%m-%d %H:%M UTC')}",
        f"- Machine: {machine()}",
        (
            f"- Command: `{command}` (runs `{bench_dir}/tick_cost.sh {' '.join(args.variants)}` on "
            f"each tree, compiled, median of {max(1, args.repeat)}: callgrind, 3 episodes x 120 steps, "
            "only `Agent.run()` counted)"
        ),
        (
            "- Workload: the peers' 6-step plan/act/check cycle in a 3-level hierarchy, "
            "a rule decision per cycle, an `increment`"
            " action per step (see the shared `bench_sherpa_skills.py`). Durable = `RunStore` (SQLite WAL, "
            "synchronous=NORMAL),"
            " each tick committed before the next; its figure moves by a few percent from run to run "
            "with the background WAL checkpoints, which callgrind counts too."
        ),
        "",
        "| variant | " + " | ".join(f"{t}, kinstr/step" for t in labels) + " | target | peer, same counter |",
        "|---|" + "---:|" * len(labels) + "---|---|",
    ]
    for v in args.variants:
        after = figures[labels[-1]].get(v)
        target = TARGETS.get(v)
        verdict = "" if target is None or after is None else f"≤ {target:.0f}: {'met' if after <= target else 'missed'}"
        lines.append(
            f"| {v} | "
            + " | ".join(f"{figures[t].get(v, float('nan')):.1f}" for t in labels)
            + f" | {verdict} | {PEERS.get(v, '')} |"
        )
    for v, by_tree in profiled.items():
        lines += ["", *function_rows(v, {t: figures[t][v] for t in labels}, by_tree)]
    if profiled:
        lines += [
            "",
            (
                "Function rows are estimates: the function's inclusive share of the same run part under cProfile"
                " (30 episodes), times the callgrind count of its tree. "
                "Rows nest (a caller includes its callees); — = the function does not exist in that tree."
            ),
        ]
    body = "\n".join(lines) + "\n"
    print()
    print(f"## {TITLE}\n\n{body}")
    if not args.no_write:
        write_section(TITLE, body)
        print(f"wrote {(HERE / 'RESULTS.md').relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
