"""Workflow load time on the start-up path: our YAML loader against the pure-Python PyYAML loader it replaced.

The loader parses with PyYAML's C parser, YAML 1.2 scalars and a line for every value (sherpa_skills/yaml_source.py).
Baselines measured in the same run: `yaml.load(..., SafeLoader)` (pure Python, no lines: what the loader built on
before) and, when it is importable, ruamel.yaml's round-trip loader, which keeps lines too (not a dependency).

    python bench/yaml_bench.py           # a few seconds; rewrites the `## YAML loading` section of bench/RESULTS.md
    python bench/yaml_bench.py --quick   # 3 loads each, prints only
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from time import perf_counter
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from harness import arguments, machine, parse, write_section  # noqa: E402

WORKFLOW = HERE.parent / "examples" / "support_triage" / "workflow.yaml"
REPEATS = 300


def timed(fn: Callable[[], Any], repeats: int = REPEATS) -> float:
    """Median milliseconds of `repeats` calls, after one warm-up."""
    fn()
    runs = []
    for _ in range(repeats):
        t0 = perf_counter()
        fn()
        runs.append((perf_counter() - t0) * 1000)
    return statistics.median(runs)


def main(argv: list[str] | None = None) -> int:
    import yaml
    from seams import load_yaml_text

    from sherpa_skills import load_workflow

    args = parse(arguments(__doc__, quick="3 loads each"), argv)
    repeats = 3 if args.quick else REPEATS

    text = WORKFLOW.read_text(encoding="utf-8")
    rows = [
        (
            "yaml_source.load_yaml_text (C parser, YAML 1.2, lines)",
            timed(lambda: load_yaml_text(text, str(WORKFLOW)), repeats),
        ),
        (
            "baseline: yaml.load, pure-Python SafeLoader, no lines",
            timed(lambda: yaml.load(text, Loader=yaml.SafeLoader), repeats),
        ),
    ]
    try:
        import ruamel.yaml
        from ruamel.yaml import YAML

        rows.append(
            (
                f"baseline: ruamel.yaml {ruamel.yaml.__version__} round-trip loader (keeps lines)",
                timed(lambda: YAML(typ="rt").load(text), repeats),
            )
        )
    except ImportError:
        rows.append(("baseline: ruamel.yaml (not installed: skipped)", float("nan")))
    rows.append(("whole load_workflow (YAML, spec, compile, policy)", timed(lambda: load_workflow(WORKFLOW), repeats)))
    ours = rows[0][1]
    lines = [
        f"Machine: {machine()}",
        "",
        f"Command: `python bench/yaml_bench.py` — {WORKFLOW.relative_to(HERE.parent)} "
        f"({len(text.splitlines())} lines), median of {repeats} loads. "
        "ruamel.yaml is not a dependency: for its row it was "
        "installed apart (`pip install --target DIR ruamel.yaml`) and put on PYTHONPATH.",
        "",
        "| loader | median ms | ratio to ours |",
        "|---|---:|---:|",
    ]
    lines += [f"| {name} | {ms:.3f} | {ms / ours:.1f}x |" for name, ms in rows]
    write_section("YAML loading", "\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
