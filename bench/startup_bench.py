"""Start-up: how long the CLI takes before it does anything, and where a run's first second goes.

Every figure is a fresh subprocess, timed from spawn: `import sherpa_skills`, `--help`, `validate`, the time to the
first step of `examples/support_triage` (its first "→ STATE via TRIGGER" progress line on stderr) and to the end of
that run, and the whole `sherpa-skills demo`. The baseline, measured in the same run, is the same commands with
`SHERPA_SKILLS_SCRIPTED_VIA=litellm`: the scripted stand-in reached through litellm, as every offline run did before
it answered in-process. CPU = the child's user + system time, which the load of other work on the machine inflates
much less than wall time. Import costs of the heavy dependencies are `python -c "import X"` minus `python -c pass`.

    python bench/startup_bench.py                 # rewrites the "Start-up" section of bench/RESULTS.md
    python bench/startup_bench.py --runs 3 --no-write
    python bench/startup_bench.py --install-size  # also a fresh venv: `pip install -c constraints.txt .`, du (minutes)
"""

from __future__ import annotations

import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from harness import arguments, machine, parse, write_section  # noqa: E402

TITLE = "Start-up"
TARGET_FIRST_STEP_S = 1.5
TARGET_DEMO_S = 2.0
TARGET_IMPORT_MS = 150.0
TARGET_HELP_MS = 300.0
TICKET = "The app crashes with an error every time I open it."
HEAVY = ("litellm", "chromadb", "onnxruntime", "tokenizers", "numpy", "httpx")


@dataclass
class Timing:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    first_step: list[float] = field(default_factory=list)


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(argv: list[str], env: dict[str, str], timing: Timing, first_step: bool = False) -> None:
    cpu0 = _cpu_children()
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=ROOT, text=True)
    assert proc.stderr is not None
    seen = None
    tail: list[str] = []
    for line in proc.stderr:
        if first_step and seen is None and " via " in line and line.lstrip().startswith("→"):
            seen = time.perf_counter() - t0
        tail = (tail + [line])[-20:]
    code = proc.wait()
    timing.wall.append(time.perf_counter() - t0)
    timing.cpu.append(_cpu_children() - cpu0)
    if code != 0:
        raise SystemExit(f"{shlex.join(argv)} failed ({code}):\n{''.join(tail)}")
    if first_step:
        if seen is None:
            raise SystemExit(f"{shlex.join(argv)} printed no step:\n{''.join(tail)}")
        timing.first_step.append(seen)


#: Whether each command first runs once untimed (--quick times its one run cold: it checks the path, not the figure).
WARM_UP = True


def measure(argv: list[str], env: dict[str, str], runs: int, first_step: bool = False) -> Timing:
    if WARM_UP:
        run_once(argv, env, Timing(), first_step)  # page cache and .pyc files: dropped
    timing = Timing()
    for _ in range(runs):
        run_once(argv, env, timing, first_step)
    return timing


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1e3:.0f}"


def heavy_after(code: str, env: dict[str, str]) -> list[str]:
    probe = f"{code}\nimport sys; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=ROOT, check=True
    ).stdout
    return eval(out.strip().splitlines()[-1])  # a list literal printed just above


def install_size() -> list[str]:
    """A fresh venv with the project installed as CI installs it: total size, package count, the largest packages."""
    with tempfile.TemporaryDirectory(prefix="sherpa-install-") as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip"]
        t0 = time.perf_counter()
        subprocess.run(
            [*pip, "install", "-q", "--disable-pip-version-check", "-c", str(ROOT / "constraints.txt"), str(ROOT)],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        seconds = time.perf_counter() - t0
        total = int(
            subprocess.run(["du", "-sm", str(venv)], capture_output=True, text=True, check=True).stdout.split()[0]
        )
        names = subprocess.run(
            [*pip, "list", "--format=freeze", "--disable-pip-version-check"], capture_output=True, text=True, check=True
        ).stdout.split()
        site = next((venv / "lib").glob("python3*/site-packages"))
        sizes = []
        for entry in site.iterdir():
            if entry.is_dir() and not entry.name.endswith((".dist-info", "__pycache__")):
                size = int(
                    subprocess.run(["du", "-sm", str(entry)], capture_output=True, text=True).stdout.split()[0] or 0
                )
                sizes.append((size, entry.name))
        top = ", ".join(f"{n} {s} MB" for s, n in sorted(sizes, reverse=True)[:10])
        return [
            "Fresh install (`python -m venv` + `pip install -c constraints.txt .`, "
            f"{seconds:.0f} s with a warm pip cache):"
            f" {total} MB, {len(names)} distributions (pip and setuptools included). Largest: {top}."
        ]


def main(argv: list[str] | None = None) -> int:
    parser = arguments(description=__doc__.split("\n\n")[0], quick="one timed run per command, no install")
    parser.add_argument(
        "--runs", type=int, default=7, help="timed runs per command after one dropped warm-up (default 7)"
    )
    parser.add_argument(
        "--install-size", action="store_true", help="also measure a fresh install (minutes, needs the package index)"
    )
    args = parse(parser, argv)
    if args.quick:
        global WARM_UP
        args.runs, args.install_size, WARM_UP = 1, False, False
    command = shlex.join(["python", "bench/startup_bench.py", *(argv if argv is not None else sys.argv[1:])])
    py = sys.executable
    script = Path(py).parent / "sherpa-skills"
    cli = [str(script)] if script.is_file() else [py, "-m", "sherpa_skills"]
    base_env = {k: v for k, v in os.environ.items() if k != "SHERPA_SKILLS_SCRIPTED_VIA"}
    via_litellm = {**base_env, "SHERPA_SKILLS_SCRIPTED_VIA": "litellm"}
    home = Path(tempfile.mkdtemp(prefix="sherpa-startup-"))
    load_start = machine()
    run_argv = [
        *cli,
        "run",
        "examples/support_triage/workflow.yaml",
        "--home",
        str(home),
        "--input",
        f"ticket={TICKET}",
    ]
    demo_argv = [*cli, "demo", "--home", str(home / "demo")]

    rows: list[tuple[str, Timing, str]] = []
    print("commands ...", flush=True)
    reference = measure([py, "-c", "pass"], base_env, args.runs)
    rows.append(("`python -c pass` (reference)", reference, "—"))
    rows.append(
        (
            '`python -c "import sherpa_skills"`',
            measure([py, "-c", "import sherpa_skills"], base_env, args.runs),
            f"≤ {TARGET_IMPORT_MS:.0f} ms",
        )
    )
    rows.append(
        ("`sherpa-skills --help`", measure([*cli, "--help"], base_env, args.runs), f"≤ {TARGET_HELP_MS:.0f} ms")
    )
    rows.append(
        (
            "`sherpa-skills validate examples/support_triage/workflow.yaml`",
            measure([*cli, "validate", "examples/support_triage/workflow.yaml"], base_env, args.runs),
            "—",
        )
    )
    run_direct = measure(run_argv, base_env, args.runs, first_step=True)
    run_litellm = measure(run_argv, via_litellm, args.runs, first_step=True)
    demo_direct = measure(demo_argv, base_env, args.runs)
    demo_litellm = measure(demo_argv, via_litellm, args.runs)

    print("imports ...", flush=True)
    imports = []
    for module in ("litellm", "chromadb", "onnxruntime", "rich", "structlog", "pydantic"):
        env = {**base_env, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        t = measure([py, "-c", f"import {module}"], env, max(1 if args.quick else 3, args.runs // 2))
        imports.append((module, statistics.median(t.wall), statistics.median(t.cpu)))

    heavy = {
        "import sherpa_skills": heavy_after("import sherpa_skills", base_env),
        "load and run examples/support_triage (scripted, default route)": heavy_after(
            "from sherpa_skills import load_workflow, RunStore\n"
            "wf = load_workflow('examples/support_triage/workflow.yaml')\n"
            f"wf.agent(store=RunStore(home={str(home / 'probe')!r})).run({{'ticket': {TICKET!r}}})",
            base_env,
        ),
    }
    size = install_size() if args.install_size else []
    shutil.rmtree(home, ignore_errors=True)

    first_direct, first_litellm = statistics.median(run_direct.first_step), statistics.median(run_litellm.first_step)
    demo_d, demo_l = statistics.median(demo_direct.wall), statistics.median(demo_litellm.wall)
    lines = [
        f"- Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; at start: {load_start}; at end: {machine()}",
        f"- Command: `{command}`; each figure is the median of {args.runs} fresh subprocesses after one "
        "dropped warm-up run.",
        "- Wall = spawn to exit (or to the first step); CPU = the child's user + system seconds. "
        "With other work on the 2 cores, wall time is inflated by the load; CPU much less so.",
        "",
        "| command | wall ms | CPU ms | target |",
        "|---|---:|---:|---|",
    ]
    for label, t, target in rows:
        lines.append(f"| {label} | {ms(t.wall)} | {ms(t.cpu)} | {target} |")
    lines += [
        "| `sherpa-skills run examples/support_triage/workflow.yaml`: "
        f"to the first step | {ms(run_direct.first_step)} | — | ≤ {TARGET_FIRST_STEP_S * 1e3:.0f} ms |",
        "| the same run, to its end (waiting for approval; 2 LLM calls) "
        f"| {ms(run_direct.wall)} | {ms(run_direct.cpu)} | — |",
        f"| `sherpa-skills demo` (3 runs, one resumed) | {ms(demo_direct.wall)} | {ms(demo_direct.cpu)} | ≤ "
        f"{TARGET_DEMO_S * 1e3:.0f} ms |",
        "| baseline: the run through litellm (`SHERPA_SKILLS_SCRIPTED_VIA=litellm`), "
        f"to the first step | {ms(run_litellm.first_step)} | — | — |",
        f"| baseline: the same, to its end | {ms(run_litellm.wall)} | {ms(run_litellm.cpu)} | — |",
        f"| baseline: `sherpa-skills demo` through litellm | {ms(demo_litellm.wall)} | {ms(demo_litellm.cpu)} | — |",
        "",
        f"Ratios: first step {first_litellm / first_direct:.1f}× sooner, "
        f"the demo {demo_l / demo_d:.1f}× faster (wall) than through litellm.",
        "",
        'Each dependency imported alone (`python -c "import X"`, interpreter start included; compare the'
        " `python -c pass` row above):",
        "",
        "| module | wall ms | CPU ms |",
        "|---|---:|---:|",
        *[f"| {m} | {w * 1e3:.0f} | {c * 1e3:.0f} |" for m, w, c in imports],
        "",
        "Heavy modules loaded (of " + ", ".join(HEAVY) + "):",
        "",
        *[f"- {what}: {', '.join(mods) or 'none'}" for what, mods in heavy.items()],
    ]
    if size:
        lines += ["", *size]
    run_cpu, demo_cpu = statistics.median(run_direct.cpu), statistics.median(demo_direct.cpu)
    verdicts = [
        f"time to the first step ≤ {TARGET_FIRST_STEP_S} s, wall: "
        f"{'met' if first_direct <= TARGET_FIRST_STEP_S else 'MISSED'} ({first_direct:.2f} s)",
        "the same in CPU, bounded by the whole run's CPU: "
        f"{'met' if run_cpu <= TARGET_FIRST_STEP_S else 'MISSED'} (≤ {run_cpu:.2f} s)",
        f"whole demo ≤ {TARGET_DEMO_S} s, wall: {'met' if demo_d <= TARGET_DEMO_S else 'MISSED'} ({demo_d:.2f} s)",
        f"whole demo ≤ {TARGET_DEMO_S} s, CPU: {'met' if demo_cpu <= TARGET_DEMO_S else 'MISSED'} ({demo_cpu:.2f} s)",
    ]
    lines += ["", "Targets:", "", *[f"- {v}" for v in verdicts]]
    load = float(load_start.split("load average ")[1].split()[0]) if "load average " in load_start else 0.0
    if load >= 1.0:
        lines += [
            "",
            f"**Noisy run**: the load average was {load:.2f} on {os.cpu_count()} cores when timing started, so wall"
            " times are inflated by other work (see `python -c pass`); the CPU column is the comparable figure."
            " Re-run on a quiet machine before judging the wall-time targets.",
        ]
    body = "\n".join(lines) + "\n"
    print(body)
    if not args.no_write:
        write_section(TITLE, body)
        print("wrote bench/RESULTS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
