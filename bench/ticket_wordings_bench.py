"""One procedure per path, not per wording: tickets of one kind in customers' own words through the ticket workflow
that learns, and the procedures they leave (issue 40).

Each kind's first N wordings (`tickets_dev.json`; N = 4 by default, `--wordings`) run in turn — refund, crash,
question, refund, … — with random four-digit orders and no disputes, the model being the shared stand-in that routes by
the customer's words plus the judge's rules (as `bench/ticket_stream_bench.py`). Then, per path (the triggers the
procedures take): how many procedures the stream left on it, their aliases and the runs those name, the counted
successes and whether the path replays. `--baseline DIR` runs the same stream, in the same invocation, against the code
in DIR (e.g. `git archive` of the commit before) for the comparison.

    python bench/ticket_wordings_bench.py --baseline /tmp/before                # rewrites its section of RESULTS.md
    python bench/ticket_wordings_bench.py --wordings 20 --baseline /tmp/before --no-write

Needs SHERPA_SKILLS_LEARNING_DATA (the folder with tickets_dev.json and tickets.script.yaml).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from harness import arguments, machine, parse, write_section  # noqa: E402
from ticket_stream_bench import KINDS, WORKFLOW, data_dir, script_with_judge  # noqa: E402

TITLE = "One procedure per path: four wordings of one ticket kind"


def tickets(per_kind: int, seed: int = 40) -> list[tuple[str, dict[str, Any]]]:
    """Kinds in turn, each kind's first `per_kind` wordings, random orders, nothing disputed."""
    found = json.loads((data_dir() / "tickets_dev.json").read_text(encoding="utf-8"))
    rng = random.Random(seed)
    return [
        (kind, {"ticket": found[kind][n], "order": str(rng.randint(1000, 9999))})
        for n in range(per_kind)
        for kind in KINDS
    ]


def how(learning: dict[str, Any]) -> str:
    """What learning did with one run: a new procedure, a credit with the run's wording as an alias, a credit of the
    same wording, a replay of a procedure the task matched (after the judge chose it, or directly)."""
    if learning.get("procedure"):
        return "replayed after the judge" if (learning.get("judged") or {}).get("procedure") else "replayed"
    captured = learning.get("captured") or {}
    if captured.get("new"):
        return "new procedure"
    return "alias" if learning.get("alias") else ("credited" if captured else "not captured")


def outcome(result: Any) -> tuple[str, str]:
    """Where a ticket ended and with what context (each decision's arguments land there)."""
    return result.state, json.dumps({k: v for k, v in result.context.items() if k != "event"}, sort_keys=True)


def measure(per_kind: int) -> dict[str, Any]:
    """The stream in a fresh home with this process's sherpa_skills; what it left, per path, as JSON."""
    from seams import configure, replay_refusal

    import sherpa_skills as sk

    configure(level="error")
    with tempfile.TemporaryDirectory(prefix="sherpa-wordings-") as tmp:
        home = Path(tmp)
        script = script_with_judge(data_dir() / "tickets.script.yaml", home)
        text = WORKFLOW.read_text(encoding="utf-8").replace(
            "model: scripted/tickets.script.yaml", f"model: scripted/{script}"
        )
        workflow = sk.load_workflow_text(text, base_dir=WORKFLOW.parent)
        skills = sk.SkillStore(home)
        runs, ended, started = [], [], time.perf_counter()
        for kind, inputs in tickets(per_kind):
            result = workflow.agent(learn=skills).run(inputs)
            ended.append(outcome(result))
            runs.append(
                {"kind": kind, "state": result.state, "llm_calls": result.llm_calls, "how": how(result.learning or {})}
            )
        seconds = time.perf_counter() - started
        # The same tickets unreplayed (the model decides every one): a replay that took a ticket elsewhere differs.
        differ = 0
        for (_, inputs), learned in zip(tickets(per_kind), ended, strict=True):
            differ += outcome(workflow.agent(learn=False).run(inputs)) != learned
        paths: dict[str, dict[str, Any]] = {}
        for p in skills.procedures(workflow.machine.name):
            aliases = [a for a in skills.aliases(p.id) if a.kind == "alias"]
            row = paths.setdefault(
                " → ".join(d.trigger for d in p.decisions),
                {"procedures": 0, "successes": 0, "replayable": 0, "aliases": 0, "from_runs": 0, "confidence": []},
            )
            row["procedures"] += 1
            row["successes"] += p.success_count
            row["replayable"] += replay_refusal(p, skills.store.health(p.id)) is None
            row["aliases"] += len(aliases)
            row["from_runs"] += sum(1 for a in aliases if str(getattr(a, "source", None) or "").startswith("run:"))
            row["confidence"].append(p.confidence)
        skills.close()
    return {"runs": runs, "paths": paths, "seconds": round(seconds, 2), "differ": differ}


def baseline(folder: Path, per_kind: int) -> dict[str, Any]:
    """The same stream measured by the code in `folder`, in a process of its own."""
    env = {**os.environ, "PYTHONPATH": str(folder)}
    done = subprocess.run(
        [sys.executable, __file__, "--emit", "--wordings", str(per_kind)],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    if done.returncode != 0:
        raise SystemExit(f"the baseline in {folder} failed:\n{done.stderr[-2000:]}")
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def _path_line(path: str, row: dict[str, Any], before: dict[str, Any] | None) -> str:
    was = (
        f" (baseline: {before['procedures']} procedure(s), {before['replayable']} replayable, "
        f"confidence {', '.join(f'{c:.2f}' for c in before['confidence'])})"
        if before
        else ""
    )
    return (
        f"| {path} | {row['procedures']} | {row['aliases']} ({row['from_runs']} naming a run) | {row['successes']} "
        f"| {row['replayable']} of {row['procedures']}{was} |"
    )


def _runs(hows: list[str], in_turn: bool) -> str:
    if in_turn:
        return ", ".join(hows)
    return ", ".join(f"{how} {count}" for how, count in Counter(hows).most_common())


def section(
    per_kind: int, now: dict[str, Any], before: dict[str, Any] | None, base: str | None, commit: str | None
) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = f"SHERPA_SKILLS_LEARNING_DATA=… python bench/ticket_wordings_bench.py --wordings {per_kind}" + (
        f" --baseline {base}" + (f" --baseline-commit {commit}" if commit else "") if base else ""
    )
    made = f"`git archive {commit} | tar -x -C {base}`" if commit and base else "a checkout of the code before"
    calls = sum(r["llm_calls"] for r in now["runs"])
    lines = [
        f"Measured {stamp} on {machine()}.",
        f"Command: `{command}`; `tickets_dev.json`, the first {per_kind} wordings of each kind "
        f"({len(now['runs'])} tickets, kinds in turn, nothing disputed); the shared stand-in model with the judge's "
        f"rules. Baseline: the same stream, same invocation, on the code before ({made}).",
        "",
        "| path the procedures take | procedures | aliases | counted successes | replayable |",
        "|---|---:|---|---:|---|",
    ]
    for path, row in sorted(now["paths"].items()):
        lines.append(_path_line(path, row, (before or {}).get("paths", {}).get(path)))
    for path, row in sorted((before or {}).get("paths", {}).items()):
        if path not in now["paths"]:
            lines.append(f"| {path} | 0 | - | - | - (baseline: {row['procedures']} procedure(s)) |")
    for name, measured in (("", now), ("baseline ", before)):
        if measured is None:
            continue
        per = {k: [r["how"] for r in measured["runs"] if r["kind"] == k] for k in KINDS}
        told = "in turn" if per_kind <= 4 else "counted"
        lines.append("")
        lines.append(
            f"What {name}learning did with each kind's runs ({told}): "
            + "; ".join(f"{k}: {_runs(v, per_kind <= 4)}" for k, v in per.items())
            + "."
        )
    total = sum(r["procedures"] for r in now["paths"].values())
    lines += [
        "",
        f"Target: four wordings of one kind → one procedure with aliases. Procedures in all: {total}"
        + (f" (baseline {sum(r['procedures'] for r in before['paths'].values())})" if before else "")
        + f"; LLM calls over the stream: {calls}"
        + (f" (baseline {sum(r['llm_calls'] for r in before['runs'])})" if before else "")
        + f"; tickets ending elsewhere than the same ticket unreplayed: {now['differ']}"
        + (f" (baseline {before['differ']})" if before else "")
        + f"; stream time {now['seconds']} s"
        + (f" (baseline {before['seconds']} s)" if before else "")
        + ".",
    ]
    return "\n".join(lines) + "\n"


def summary(per_kind: int, now: dict[str, Any], before: dict[str, Any] | None) -> str:
    """The longer stream in a line: procedures, aliases, replays, wrong outcomes, against the baseline."""

    def told(measured: dict[str, Any]) -> str:
        hows = Counter(r["how"] for r in measured["runs"])
        paths = measured["paths"].values()
        return (
            f"{sum(p['procedures'] for p in paths)} procedures on {len(measured['paths'])} paths, "
            f"{sum(p['aliases'] for p in paths)} aliases, {sum(p['replayable'] for p in paths)} replayable; runs: "
            + ", ".join(f"{how} {count}" for how, count in hows.most_common())
            + f"; {sum(r['llm_calls'] for r in measured['runs'])} LLM calls; "
            f"{measured['differ']} ending elsewhere than unreplayed"
        )

    return (
        f"The first {per_kind} wordings of each kind ({len(now['runs'])} tickets, same command with `--wordings "
        f"{per_kind}`): {told(now)}." + (f" Baseline: {told(before)}." if before else "")
    )


def main() -> None:
    parser = arguments(description=__doc__.split("\n", 1)[0], quick="one wording of each kind, no longer stream")
    parser.add_argument("--wordings", type=int, default=4, help="wordings of each kind (default 4)")
    parser.add_argument("--baseline", help="a checkout of the code before, run on the same stream for comparison")
    parser.add_argument("--baseline-commit", help="the commit that checkout holds, to name it in the section")
    parser.add_argument("--also", type=int, default=20, help="a longer stream summarised too (default 20; 0: none)")
    parser.add_argument("--emit", action="store_true", help=argparse.SUPPRESS)  # the baseline's process: JSON only
    args = parse(parser)
    if args.quick and not args.emit:
        args.wordings, args.also, args.baseline = 1, 0, None
    if args.emit:
        print(json.dumps(measure(args.wordings)))
        return
    before = baseline(Path(args.baseline), args.wordings) if args.baseline else None
    now = measure(args.wordings)
    text = section(args.wordings, now, before, args.baseline, args.baseline_commit)
    if args.also:
        longer = measure(args.also)
        was = baseline(Path(args.baseline), args.also) if args.baseline else None
        text += "\n" + summary(args.also, longer, was) + "\n"
    print(f"## {TITLE}\n\n{text}")
    if not args.no_write:
        write_section(TITLE, text)


if __name__ == "__main__":
    main()
