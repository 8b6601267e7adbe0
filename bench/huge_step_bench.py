"""Huge input: a steps file whose one step is a 5 MB command, through the CLI as a person runs it.

    python bench/huge_step_bench.py           # rewrites the `## Huge input: a 5 MB step` section of bench/RESULTS.md
    python bench/huge_step_bench.py --quick   # a 50 kB step, prints only

Capture is refused (a step holds at most `MAX_COMMAND_CHARS`); a 5 MB step stored before that limit is replayed, dry
and executed. Baseline, same run: the procedure-glob pattern as it was (unanchored, rescanning a long word from each
letter) against the one now, on the same command text, at sizes the old one finishes in.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import arguments, machine, parse, write_section  # noqa: E402

OLD_GLOB = re.compile(r"[\w.-]*(?:\*|\[[\w-]+\])[\w.*\[\]-]*")
SIZE = 5_000_000


def cli(home: Path, *args: str) -> tuple[float, int, dict[str, object]]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "sherpa_skills", *args, "--home", str(home), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=home.parent,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    elapsed = time.monotonic() - started
    out = json.loads(done.stdout) if done.stdout.strip() else {"stderr": done.stderr[-300:]}
    return elapsed, done.returncode, out


def main(argv: list[str] | None = None) -> None:
    from seams import _PROC_GLOB, CapturedProcedure, ProcedureStep

    from sherpa_skills import SkillStore

    args = parse(arguments(__doc__, quick="a 50 kB step, old pattern on 1-2 k characters"), argv)
    size_, small = (50_000, (1_000, 2_000)) if args.quick else (SIZE, (10_000, 20_000))
    began = time.monotonic()
    command = "echo " + "a" * size_
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        steps = Path(tmp) / "steps.json"
        steps.write_text(json.dumps({"description": "print a lot", "steps": [{"command": command}]}))
        t, code, out = cli(home, "learn", "capture-success", "x", "--steps-file", str(steps))
        rows.append(("`learn capture-success x --steps-file` (one 5 MB step)", t, f"exit {code}: refused"))
        skills = SkillStore(home)
        legacy = [ProcedureStep.model_construct(command=command)]  # as stored before the limit existed
        # The store names what it keeps (the id a procedure carries in is not kept): replay the one it returns.
        stored = skills.store.add_procedure(
            CapturedProcedure(id="legacy", task_type="x", description="print", steps=legacy)
        )
        skills.promote(stored.id)
        t, code, out = cli(home, "learn", "replay", "x", "--procedure", stored.id)
        rows.append(
            ("`learn replay x --procedure ID` (dry run, the 5 MB step stored)", t, f"exit {code}: {out.get('status')}")
        )
        t, code, out = cli(home, "learn", "replay", "x", "--procedure", stored.id, "--execute", "--yes")
        rows.append(("… `--execute --yes`", t, f"exit {code}: {out.get('status')}"))
    glob = []
    for size in (*small, size_):
        text = "\n".join(["x", "print", "", "echo " + "a" * size])
        started = time.monotonic()
        _PROC_GLOB.findall(text)
        now = time.monotonic() - started
        before = None
        if size <= small[-1]:
            started = time.monotonic()
            OLD_GLOB.findall(text)
            before = time.monotonic() - started
        glob.append((size, before, now))
    table = "\n".join(f"| {name} | {t:.2f} | {what} |" for name, t, what in rows)
    globs = "\n".join(
        f"| {size:,} | {'not run (quadratic)' if before is None else f'{before:.2f}'} | {now:.3f} |"
        for size, before, now in glob
    )
    whole = time.monotonic() - began
    body = f"""- Date: {time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
- Machine: {machine()}
- Command: `python bench/huge_step_bench.py` (each CLI command once, a fresh process; whole run {whole:.0f} s)
- Target: a 5 MB step is refused at capture or replayed (dry) in seconds; no command hangs (was: past 120 s).

| command | seconds | answer |
|---|---:|---|
{table}

The cause of the hang, alone (`procedure_text`'s glob pattern over the procedure's text; seconds):

| command characters | before (unanchored) | now (starts at a word's start) |
|---:|---:|---:|
{globs}
"""
    write_section("Huge input: a 5 MB step", body)
    print(body)


if __name__ == "__main__":
    main()
