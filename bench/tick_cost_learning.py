"""Tick cost with learning on and nothing to replay, counted by callgrind in one run: the shared script's own
`memory` and `memory-learn` variants (`workflow.agent(learn=True)` in a fresh home), this project's child (one
`Learner` shared by the agents), and the capture at the end of a run against the run's length.

What learning adds to a run that matches nothing: the match at start, the hook's kept state at each commit (durable
runs), and the capture at the end. Each run after the first of the workload takes the same decisions as the first, so
its capture credits that procedure.

    python bench/tick_cost_learning.py --before 0412fdd   # about 15 minutes; rewrites a section of bench/RESULTS.md
    python bench/tick_cost_learning.py --no-write          # this tree only, print the section

Needs valgrind and the shared `tick_cost.sh` folder (found as `tick_cost.py` finds it). Both trees are compiled to
bytecode first: a module imported lazily inside the counted part would otherwise count its compilation.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from harness import arguments, machine, parse, skip, write_section  # noqa: E402  (after the sys.path line above)
from tick_cost import count as shared_count  # noqa: E402
from tick_cost import export, shared_bench  # noqa: E402

TITLE = "Tick cost with learning on, nothing to replay (instructions per step)"
STEPS = 360  # 3 episodes x 120 steps, as tick_cost.sh counts
TARGET, MOONSHOT = 1.5, 1.2
#: Cycles of 6 steps per run for the capture's scaling: N, 2N, 4N, 8N.
SIZES = (20, 40, 80, 160)

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
learner = Learner(ProcedureDatabase(path=os.path.join(tempfile.mkdtemp(), "skills.db")))
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

# The shared `memory-learn` workload at each run length: three runs in a fresh home (the first captures a new
# procedure, the next two credit it), each run's capture (LearningHook.on_stop) alone counted between the markers.
_SCALING_CHILD = r"""
import os, runpy, sys
bench_dir, sizes = sys.argv[1], [int(x) for x in sys.argv[2].split(",")]
sys.path.insert(0, bench_dir)
import common
from sherpa_skills.skills.capture import learning
stop = learning.LearningHook.on_stop
def counted(self, agent, result):
    os.getppid()
    try:
        return stop(self, agent, result)
    finally:
        os.getpgrp()
learning.LearningHook.on_stop = counted
def bench(a, build, run, llm_calls=lambda: 0, trajectory=None):
    for _ in range(3):
        run(build())
    return {}
common.bench, common.emit = bench, lambda *a, **k: None
for cycles in sizes:
    sys.argv = ["bench_sherpa_skills.py", "--variant", "memory-learn", "--reps", "1", "--episodes", "1",
                "--cycles", str(cycles)]
    runpy.run_path(os.path.join(bench_dir, "bench_sherpa_skills.py"), run_name="__main__")
"""


def _callgrind(tree: Path, argv: list[str], out: Path, what: str, threads: bool = False, **env_given: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0", **env_given}
    grind = ["valgrind", "--tool=callgrind", "--zero-before=getppid", "--dump-before=getpgrp"]
    if threads:  # a file per thread: the run's own (thread 1) apart from native pools (the embedder's, BLAS)
        grind.append("--separate-threads=yes")
    done = subprocess.run(
        [*grind, f"--callgrind-out-file={out}", sys.executable, *argv],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{what} failed on {tree}: {done.stderr.strip()[-2000:]}")


def _dumps(folder: Path, stem: str) -> list[int]:
    """The instruction count of each dump `stem`.1, .2, ... in order."""
    counts = []
    for n in range(1, 10_000):
        dump = folder / f"{stem}.{n}"
        if not dump.exists():
            break
        for line in dump.read_text(errors="replace").splitlines():
            if line.startswith(("summary:", "totals:")):
                counts.append(int(line.split()[1]))
                break
    return counts


def _total(dump: Path) -> int:
    for line in dump.read_text(errors="replace").splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    return 0


def count(tree: Path, bench_dir: Path, variant: str, learning: bool) -> tuple[float, float]:
    """kinstr per step of the counted run part, this project's child: (the run's own thread, all threads)."""
    with tempfile.TemporaryDirectory(prefix="sherpa-tick-learning-") as tmp:
        argv = ["-c", _CHILD, str(bench_dir), variant, "on" if learning else "off"]
        what = f"counting {variant} (learning {learning})"
        _callgrind(tree, argv, Path(tmp) / "cg.out", what, threads=True, PEERBENCH_ICOUNT="1")
        dumps = sorted(Path(tmp).glob("cg.out.1-*"))
        if not dumps:
            raise SystemExit(f"no callgrind count for {variant}")
        main, every = _total(dumps[0]), sum(_total(d) for d in dumps)
        return main / STEPS / 1000, every / STEPS / 1000


def capture_scaling(tree: Path, bench_dir: Path) -> dict[int, tuple[float, float]]:
    """By cycles: (kinstr of the first run's capture, of the third run's), one callgrind run for all sizes."""
    with tempfile.TemporaryDirectory(prefix="sherpa-capture-scaling-") as tmp:
        argv = ["-c", _SCALING_CHILD, str(bench_dir), ",".join(map(str, SIZES))]
        _callgrind(tree, argv, Path(tmp) / "cg.out", "capture scaling")
        counts = _dumps(Path(tmp), "cg.out")
    if len(counts) != 3 * len(SIZES):
        raise SystemExit(f"capture scaling: {len(counts)} counts, not {3 * len(SIZES)}")
    return {c: (counts[3 * i] / 1000, counts[3 * i + 2] / 1000) for i, c in enumerate(SIZES)}


def compiled(tree: Path) -> Path:
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "sherpa_skills")], check=True)
    return tree


def main(argv: list[str] | None = None) -> int:
    parser = arguments(description=__doc__.split("\n\n")[0], quick="the learning children run once each, uncounted")
    parser.add_argument("--before", metavar="REF", help="also count this commit (git archive), in the same run")
    parser.add_argument("--no-own", action="store_true", help="skip this project's child (the shared script only)")
    parser.add_argument("--jobs", type=int, default=2, help="callgrind children at a time")
    args = parse(parser, argv)
    if args.quick:  # callgrind takes minutes: each child runs once, uncounted, on this tree (its path, not its figure)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        for child in (_CHILD, _SCALING_CHILD):
            given = ["memory", "on"] if child is _CHILD else ["2"]
            argv = [sys.executable, "-c", child, str(shared_bench()), *given]
            subprocess.run(argv, cwd=ROOT, env=env, check=True, timeout=600, stdout=subprocess.DEVNULL)
        print("tick_cost_learning --quick: the learning run and the capture-scaling child ran (nothing counted)")
        return 0
    if shutil.which("valgrind") is None:
        skip("valgrind is not installed (Debian: apt-get install -y valgrind)")
    bench_dir = shared_bench()
    command = shlex.join(["python", "bench/tick_cost_learning.py", *(argv if argv is not None else sys.argv[1:])])
    started = datetime.now(timezone.utc)
    with tempfile.TemporaryDirectory(prefix="sherpa-tick-learning-trees-") as tmp:
        trees: dict[str, Path] = {}
        if args.before:
            rev = export(args.before, Path(tmp))
            trees[f"before ({rev})"] = compiled(Path(tmp))
        trees["after (this tree)"] = compiled(ROOT)
        # Each count is one callgrind child; two at a time (callgrind counts instructions, so sharing cores does not
        # change the figures, only how long the whole takes).
        jobs: dict[tuple[str, str], Callable[[], Any]] = {}
        for label, tree in trees.items():
            jobs[label, "shared"] = partial(shared_count, tree, bench_dir, ["memory", "memory-learn"])
            if not args.no_own and tree == ROOT:
                jobs[label, "own off"] = partial(count, tree, bench_dir, "memory", False)
                jobs[label, "own on"] = partial(count, tree, bench_dir, "memory", True)
            jobs[label, "scaling"] = partial(capture_scaling, tree, bench_dir)
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = {key: pool.submit(job) for key, job in jobs.items()}
            done = {key: future.result() for key, future in futures.items()}
        for key, value in done.items():
            print(*key, value, flush=True)
        shared = {label: done[label, "shared"] for label in trees}
        own = {label: (done[label, "own off"], done[label, "own on"]) for label in trees if (label, "own on") in done}
        scaling = {label: done[label, "scaling"] for label in trees}
    after = "after (this tree)"
    off, on = shared[after]["memory"], shared[after]["memory-learn"]
    ratio = on / off
    verdict = (
        f"**met** ({ratio:.2f}× ≤ {TARGET}×{', moonshot ' + str(MOONSHOT) + '× met too' if ratio <= MOONSHOT else ''})"
        if ratio <= TARGET
        else f"**missed** ({ratio:.2f}× > {TARGET}×)"
    )
    lines = [
        f"- Date: {started.strftime('%Y-%m-%d %H:%M UTC')}",
        f"- Machine: {machine()}",
        f"- Command: `{command}`: on each tree, `{bench_dir}/tick_cost.sh memory memory-learn` (the shared script, "
        "callgrind, 3 episodes x 120 steps, only `Agent.run()` counted), this project's child (the same workload, "
        "one `Learner` on an empty skill store given to each agent as a hook) and the capture's scaling (below). "
        "Both trees compiled to bytecode first.",
        f"- Target: learning on ≤ {TARGET}× learning off on the shared workload (moonshot {MOONSHOT}×): {verdict}.",
        "",
        "| tree | shared `memory` | shared `memory-learn` | learning's cost |",
        "|---|---:|---:|---:|",
    ]
    for label in trees:
        s_off, s_on = shared[label]["memory"], shared[label]["memory-learn"]
        lines.append(f"| {label} | {s_off:.1f} | {s_on:.1f} | +{s_on - s_off:.1f} ({s_on / s_off:.2f}×) |")
    for label, ((off_main, off_all), (on_main, on_all)) in own.items():
        lines += [
            "",
            f"This project's child on {label} (one `Learner` given to each agent as a hook), each thread counted "
            "apart (`--separate-threads=yes`): the run's own thread, and all threads as the shared script counts "
            "them (the others are native pools, the embedder's and BLAS's, woken when the first run's capture "
            "embedded its description). Off and on are separate processes here, not one: their difference is within "
            "what one figure moves from process to process (see the reading below).",
            "",
            "| learning | run's thread, kinstr/step | all threads, kinstr/step |",
            "|---|---:|---:|",
            f"| off | {off_main:.1f} | {off_all:.1f} |",
            f"| on | {on_main:.1f} ({on_main / off_main:.2f}×) | {on_all:.1f} ({on_all / off_all:.2f}×) |",
        ]
    lines += [
        "",
        "The capture at the end of one run (`LearningHook.on_stop`, thousand instructions), against the run's length: "
        "the shared `memory-learn` workload with `--cycles` N, 2N, 4N, 8N (6 steps and one rule decision per cycle), "
        "three runs in a fresh home, each capture counted alone. The first run's capture stores a new procedure (and "
        "indexes it for matching: embedding its description, the same at every length); the third's credits it.",
        "",
        "| steps (decisions) | " + " | ".join(f"{t}: first run | {t}: third run" for t in trees) + " |",
        "|---|" + "---:|---:|" * len(trees),
    ]
    for i, cycles in enumerate(SIZES):
        cells = []
        for label in trees:
            first, third = scaling[label][cycles]
            if i == 0:
                cells += [f"{first:,.0f}", f"{third:,.0f}"]
            else:
                f0, t0 = scaling[label][SIZES[i - 1]]
                cells += [f"{first:,.0f} (×{first / f0:.2f})", f"{third:,.0f} (×{third / t0:.2f})"]
        lines.append(f"| {cycles * 6} ({cycles}) | " + " | ".join(cells) + " |")
    body = "\n".join(lines)
    print(f"\n## {TITLE}\n\n{body}")
    if not args.no_write:
        write_section(TITLE, body)
        print(f"wrote {(HERE / 'RESULTS.md').relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
