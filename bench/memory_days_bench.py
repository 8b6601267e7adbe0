"""What an agent is handed at run start, over 30 simulated days: curated memory (dedup, supersede, decay, a domain)
against the naive "every note it ever wrote".

One agent writes 20 facts a day through `SharedMemory.remember`: 8 exact repeats of what it already knows, 4
corrections (a new value for a known subject, written with `supersedes`), 3 facts about new subjects (40 subjects at
most, then they too become corrections) and 5 episodes ("deployed build N"). Each simulated day ends with a run end
on the agent's domain (one changelog line, a new status) and a day of ageing: every timestamp in the store moves back
86,400 s, which is what a day passing looks like to decay. The start context measured each morning is exactly what
the domain hook injects (`Domains.start_context` with the memory `briefing`), as compact JSON; the naive context is
every text written so far, one per line. Tokens are estimated as characters / 4.

    python bench/memory_days_bench.py            # about a minute; rewrites its section of bench/RESULTS.md
    python bench/memory_days_bench.py --no-write
"""

from __future__ import annotations

import json
import os
import random
import shlex
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from time import perf_counter

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from harness import arguments, machine, parse, write_section  # noqa: E402

TITLE = "Memory at run start over 30 days"
SERVICES = ["payments", "checkout", "search", "billing", "auth", "inventory", "shipping", "ledger"]
SETTINGS = ["pool size", "timeout in seconds", "replica count", "retry limit", "cache TTL in minutes"]
DAY = 86400.0


def tokens(text: str) -> int:
    return (len(text) + 3) // 4


def main(argv: list[str] | None = None) -> int:
    parser = arguments(description=__doc__.split("\n\n")[0], quick="8 days of 3 writes")
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--per-day", type=int, default=20)
    args = parse(parser, argv)
    if args.quick:
        args.days, args.per_day = 8, 3  # the report reads the morning after day 7
    command = shlex.join(["python", "bench/memory_days_bench.py", *(argv if argv is not None else sys.argv[1:])])

    from seams import Companion, Domains, HashingEmbedder, SharedMemory, briefing, configure

    configure(level="error")
    rng = random.Random(13)
    subjects = [f"the {s} {k}" for s in SERVICES for k in SETTINGS][:40]
    rows = []
    wall0 = perf_counter()
    with tempfile.TemporaryDirectory(prefix="sherpa-days-bench-") as tmp:
        home = Path(tmp)
        memory = SharedMemory(home, companion=Companion(home / "companion", embedder=HashingEmbedder(384)))
        domains = Domains(home=home)
        domains.claim("ops", "ops")
        domains.decide("ops", "page_above", 50, by="sam")
        domains.decide("ops", "quiet_hours", [22, 7], by="sam")
        # `briefing` reads the home's own SharedMemory (one per home and thread): only its store, the same SQLite file
        # this one writes, so what this one remembers is what the briefing reads.
        current: dict[str, tuple[str, str]] = {}  # subject -> (artifact id, text)
        naive: list[str] = []
        build = 1000
        counts = {"repeats": 0, "merged": 0, "corrections": 0, "new": 0, "episodes": 0}
        for day in range(1, args.days + 1):
            start = domains.start_context("ops", "ops", briefing(home, "ops"))
            curated = json.dumps(start, separators=(",", ":"), ensure_ascii=False)
            stats = memory.store.stats()
            rows.append(
                (
                    day,
                    tokens(curated),
                    tokens("\n".join(naive)),
                    len(naive),
                    stats["artifacts"] - stats["superseded"],
                    stats["per_tier"],
                )
            )
            plan = (["repeat"] * 8 + ["correct"] * 4 + ["new"] * 3 + ["episode"] * 5)[: args.per_day]
            rng.shuffle(plan)
            for what in plan:
                if what == "new" and len(current) >= len(subjects):
                    what = "correct"
                if what in ("repeat", "correct") and not current:
                    what = "new"
                if what == "repeat":
                    subject = rng.choice(sorted(current))
                    text = current[subject][1]
                    written = memory.remember(text, agent="ops", abstraction="pattern")
                    counts["repeats"] += 1
                    counts["merged"] += written.duplicate
                elif what == "correct":
                    subject = rng.choice(sorted(current))
                    text = f"{subject} is {rng.randint(2, 500)}"
                    written = memory.remember(text, agent="ops", abstraction="pattern", supersedes=current[subject][0])
                    counts["corrections"] += 1
                elif what == "new":
                    subject = next(s for s in subjects if s not in current)
                    text = f"{subject} is {rng.randint(2, 500)}"
                    written = memory.remember(text, agent="ops", abstraction="pattern")
                    counts["new"] += 1
                else:
                    build += 1
                    subject = None
                    text = f"day {day}: deployed build {build} to {rng.choice(SERVICES)}"
                    written = memory.remember(text, agent="ops")
                    counts["episodes"] += 1
                naive.append(text)
                if subject is not None:
                    current[subject] = (written.artifact.id, written.artifact.text)
            domains.set_status("ops", "ops", {"day": day, "known_subjects": len(current), "last_build": build})
            domains.run_ended("ops", "ops", f"day-{day}", "final", {"outcome": "final", "day": day})
            # A day passes.
            memory.store.db.transaction(
                lambda conn: conn.execute(
                    "UPDATE memory_artifacts SET created = created - ?, last_access = last_access - ?,"
                    " last_seen = last_seen - ?",
                    (DAY, DAY, DAY),
                )
            )
        final_start = domains.start_context("ops", "ops", briefing(home, "ops"))
        stats = memory.store.stats()
        rows.append(
            (
                args.days + 1,
                tokens(json.dumps(final_start, separators=(",", ":"), ensure_ascii=False)),
                tokens("\n".join(naive)),
                len(naive),
                stats["artifacts"] - stats["superseded"],
                stats["per_tier"],
            )
        )
        domains.close()
        memory.close()
    wall = perf_counter() - wall0

    day7 = next(r for r in rows if r[0] == 8)  # the morning after day 7
    last = rows[-1]
    ratio = last[1] / day7[1]
    peak = max(r[1] for r in rows if r[0] >= 8)
    width = 40
    scale = max(r[2] for r in rows) or 1
    curve = [
        "```",
        "tokens at run start, morning of day N (█ naive: every note; ▒ curated: domain + briefing); "
        f"full bar = {scale:,}",
    ]
    for day, cur, nai, *_ in rows:
        if day == 1 or day % 3 == 0 or day == rows[-1][0]:
            curve.append(f"day {day:>2}  {'█' * round(width * nai / scale):<{width}} {nai:>6,}")
            curve.append(f"        {'▒' * max(1, round(width * cur / scale)):<{width}} {cur:>6,}")
    curve.append("```")
    table = [
        "| morning of day | curated tokens | naive tokens | notes written | current artifacts | hot / warm / cold |",
        "|---:|---:|---:|---:|---:|---|",
    ]
    for day, cur, nai, written, live, tiers in rows:
        if day in (1, 2, 4, 8, 11, 15, 22, 29) or day == rows[-1][0]:
            table.append(
                f"| {day} | {cur:,} | {nai:,} | {written} | {live} | {tiers['hot']} / "
                f"{tiers['warm']} / {tiers['cold']} |"
            )
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    body = "\n".join(
        [
            f"- Date: {stamp}",
            f"- Machine: {machine()}",
            f"- Command: `{command}` ({wall:.0f} s)",
            f"- Simulated: {args.days} days × {args.per_day} writes by one agent through `SharedMemory.remember` "
            f"({counts['repeats']} repeats, of which {counts['merged']} merged as exact duplicates; "
            f"{counts['corrections']} corrections "
            f"with `supersedes`; {counts['new']} new subjects; {counts['episodes']} episodes), "
            "a run end on its domain each day, and "
            "each night every timestamp aged by one day. Companion: "
            "the hashing embedder (the near-duplicate check runs; the figures here are sizes, not times).",
            "- Measured each morning: the JSON the domain hook puts in the run's context (`domain`: "
            "2 decisions, the status, "
            "the 5 latest changelog entries, the open proposals count and the briefing — "
            "at most 12 current notes, principles "
            "and patterns before episodes, hot before warm, cold and superseded ones left out) "
            "against the naive context, every note written so far. Tokens = characters / 4.",
            "",
            f"**Result:** the curated start context on the morning after day {args.days} is {last[1]:,} tokens, "
            f"{ratio:.2f} × its size after day 7 ({day7[1]:,}; the largest after day 7 was {peak:,}, "
            f"{peak / day7[1]:.2f} ×) — "
            + ("flat, within the 20 % asked." if peak <= 1.2 * day7[1] else "NOT within the 20 % asked.")
            + f" The naive context grew from {day7[2]:,} to {last[2]:,} tokens "
            f"({last[2] / max(1, day7[2]):.1f} ×), linearly with the notes written.",
            "",
            *table,
            "",
            *curve,
        ]
    )
    print(body)
    if not args.no_write:
        write_section(TITLE, body)
        print(f"wrote bench/RESULTS.md section {TITLE!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
