"""Tick cost with learning on and nothing to replay: the peer workload of `tick_cost.py`, each agent given a learning
hook on an empty skill store, counted by callgrind against the same workload without the hook, in one run.

What learning adds to a run that matches nothing: the match at start (amortised over the run's 120 steps), the hook's
saved state compared at each commit, and the capture at the end (the workload's rule decisions make a trajectory).

    python bench/tick_cost_learning.py             # about 2 minutes; rewrites a section of bench/RESULTS.md
    python bench/tick_cost_learning.py --no-write  # print the section only

Needs valgrind and the shared `tick_cost.sh` folder (found as `tick_cost.py` finds it).
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from _results import machine, write_section  # noqa: E402  (after the sys.path line above)
from tick_cost import shared_bench  # noqa: E402

TITLE = "Tick cost with learning on, nothing to replay (instructions per step)"
STEPS = 360  # 3 episodes x 120 steps, as tick_cost.sh counts

# The shared workload with each measured agent given (or not) a learning hook on an empty skill store; the same
# getppid/getpgrp markers as the shared bench bound what callgrind counts.
_CHILD = r"""
import os, runpy, sys, tempfile
bench_dir, variant, learning = sys.argv[1], sys.argv[2], sys.argv[3] == "on"
sys.argv = ["bench_sherpa_skills.py", "--variant", variant, "--reps", "1", "--episodes", "3"]
sys.path.insert(0, bench_dir)
import common
from sherpa_skills.skills.capture.learning import Learner
from sherpa_skills.skills.store.database import ProcedureDatabase
learner = Learner(ProcedureDatabase(os.path.join(tempfile.mkdtemp(), "skills.db")))
shared = common.bench
def bench(a, build, run, llm_calls=lambda: 0, trajectory=None):
    def learning_build():
        agent = build()
        if learning:  # before the run starts: hooks are first asked when it does
            agent.hooks = (*agent.hooks, learner.hook())
        return agent
    return shared(a, learning_build, run, llm_calls, trajectory)
common.bench = bench
runpy.run_path(os.path.join(bench_dir, "bench_sherpa_skills.py"), run_name="__main__")
"""


def count(bench_dir: Path, variant: str, learning: bool) -> float:
    """kinstr per step of the counted run part."""
    with tempfile.TemporaryDirectory(prefix="sherpa-tick-learning-") as tmp:
        out = Path(tmp) / "cg.out"
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PEERBENCH_ICOUNT": "1", "PYTHONHASHSEED": "0"}
        argv = [
            "valgrind",
            "--tool=callgrind",
            "--zero-before=getppid",
            "--dump-before=getpgrp",
            f"--callgrind-out-file={out}",
            sys.executable,
            "-c",
            _CHILD,
            str(bench_dir),
            variant,
            "on" if learning else "off",
        ]
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800, check=False)
        if done.returncode != 0:
            raise SystemExit(f"counting {variant} (learning {learning}) failed: {done.stderr.strip()[-2000:]}")
        dumps = sorted(Path(tmp).glob("cg.out*"))
        for dump in dumps:
            for line in dump.read_text(errors="replace").splitlines():
                if line.startswith(("summary:", "totals:")) and dump.name.endswith(".1"):
                    return int(line.split()[1]) / STEPS / 1000
        raise SystemExit(f"no callgrind count for {variant} in {[d.name for d in dumps]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", nargs="+", default=["memory", "durable"], choices=["memory", "durable"])
    parser.add_argument("--no-write", action="store_true", help="print the section, do not touch bench/RESULTS.md")
    args = parser.parse_args(argv)
    bench_dir = shared_bench()
    command = shlex.join(["python", "bench/tick_cost_learning.py", *(argv if argv is not None else sys.argv[1:])])
    started = datetime.now(timezone.utc)
    rows = []
    for variant in args.variants:
        off, on = count(bench_dir, variant, False), count(bench_dir, variant, True)
        print(variant, f"off {off:.1f}", f"on {on:.1f}", flush=True)
        rows.append(f"| {variant} | {off:.1f} | {on:.1f} | +{on - off:.1f} ({on / off:.2f}×) |")
    body = "\n".join(
        [
            f"- Date: {started.strftime('%Y-%m-%d %H:%M UTC')}",
            f"- Machine: {machine()}",
            f"- Command: `{command}` (callgrind, the shared workload of `tick_cost.sh`, 3 episodes x 120 steps, "
            "only `Agent.run()` counted)",
            "- Learning on = each agent given `Learner(empty skill store).hook()`: it matches its task at start "
            "(nothing to replay), compares its kept state at each commit and captures the run at its end. "
            "Learning off = the same child without the hook (the figures of the section above are the shared "
            "script's own).",
            "",
            "| variant | learning off, kinstr/step | learning on, kinstr/step | learning's cost |",
            "|---|---:|---:|---:|",
            *rows,
        ]
    )
    print(f"\n## {TITLE}\n\n{body}")
    if not args.no_write:
        write_section(TITLE, body)
        print(f"wrote {(HERE / 'RESULTS.md').relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
