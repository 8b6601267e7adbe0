"""Does the store's own match floor ask less, with nothing wrong replayed? A stream of asks through one store, each
answered by a person-judge oracle, run on copies of the same store with the floor calibrated off and on. Rewrites the
`## Procedure matching: the store's own floor (NL2Bash dev)` section of bench/RESULTS.md.

    # minutes on 2 cores (the store's ~7,400 texts embedded once; --embedding-cache keeps them between runs)
    SHERPA_SKILLS_MATCHING_DATA=../shared/matching SHERPA_SKILLS_LEARNING_DATA=../shared/learning \\
        python bench/match_floor_bench.py [--seeds 1,2,3] [--sample 600] [--embedding-cache /tmp/e.pkl] [--no-write]

Store: NL2Bash dev commands as bench/match_bench.py stores them (2,394 procedures), plus the 15 everyday routines of
routines_dev.json (each proven by three successes). Stream: NL2Bash dev paraphrases and the routines' close / medium /
far wordings (positives), NL2Bash negatives (commands never stored) and the routines' near misses and unrelated asks
(negatives), mixed in a seeded order. Negatives word for word another stored description are left out (no matcher
that reads only the task can refuse them); positives word for word another stored command's description replay that
one by the exact rule whatever the floor, so the wrong replays are also shown without them ("distinct").

Each ask goes through `Matcher.match` (unscoped, as `learn replay QUERY` asks). `match`: right, wrong (a positive,
another procedure) or false (a negative). `needs-confirmation`: the oracle confirms the right procedure when it is
offered (`confirm(query, id)`), else rejects every offered one (`reject(query, ids)`). `no-match`: missed (a positive)
or fine (a negative). Arms, each on its own copy of the store built once: *off* (`Matcher(calibrate=False)`: the
shipped floor), *on* (the store's own floor, the oracle a person: the default `by`), *agent* (as *on*, every answer
given `by="agent:bench"`, as an MCP client's: its confirmations are claims, so the floor must not lower on them).
"""

from __future__ import annotations

import os
import pickle
import random
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import match_bench as mb  # noqa: E402
from harness import arguments, command, header, machine, parse, write_section  # noqa: E402

SECTION = "Procedure matching: the store's own floor (NL2Bash dev)"
LEARNING_ENV = "SHERPA_SKILLS_LEARNING_DATA"
AGENT = "agent:bench"
#: (name, calibrate, who answers: None is the person at hand, the default `by`)
ARMS: tuple[tuple[str, bool, str | None], ...] = (("off", False, None), ("on", True, None), ("agent", True, AGENT))
THIRDS = 3
#: The issue's targets (NL2Bash).
HIT, WRONG, FALSE, FOUND, ASKED_NEG = 0.25, 0.01, 0.03, 0.70, 0.25


@dataclass(frozen=True)
class Ask:
    query: str
    gold: str | None  # the right procedure's id; None for a negative
    same: bool = False  # a positive word for word another stored command's description


@dataclass
class Outcome:
    """What one ask came to: right | wrong | offered (confirmed) | asked (rejected) | missed (positives);
    false | asked | fine (negatives); and the selected candidate's relevance when one was replayed."""

    ask: Ask
    said: str
    score: float | None = None
    floor: float = 1.0  # the floor the store replayed from at this ask


@dataclass
class ArmRun:
    name: str
    outcomes: list[Outcome] = field(default_factory=list)
    floors: list[Any] = field(default_factory=list)  # the Floor at the end of each third
    lowest: float = 1.0  # the lowest floor the store replayed from during the stream
    first_calibrated: int | None = None  # the ask from which the store's own floor held
    refused: int = 0  # confirmations refused (UsageError): a literal the offered candidate disagrees with
    seconds: float = 0.0
    points: list[Any] = field(default_factory=list)  # the answered questions the floor reads, at the end


# ---------------------------------------------------------------- the store and the stream


def build(home: Path, split: dict[str, Any], routines: dict[str, Any] | None) -> tuple[list[str], dict[str, str]]:
    """The store every arm copies: the NL2Bash commands (`match_bench.build_store`) and the routines; closed."""
    from seams import CapturedProcedure, ProcedureStep

    matcher, ids, _ = mb.build_store(home, split["stored"])
    routine_ids: dict[str, str] = {}
    if routines:
        added = []
        for r in routines["procedures"]:
            proc = matcher.store.add_procedure(
                CapturedProcedure(
                    id=f"routine-{r['task']}",
                    task_type=r["task"],
                    description=r["description"],
                    steps=[ProcedureStep(command=s) for s in r["steps"]],
                    success_count=3,  # captured three times in bench/match_ask_bench.py: one success is not proof
                    source="manual",
                )
            )
            routine_ids[r["task"]] = proc.id
            added.append(proc)
        if (why := matcher.index_many(added)) is not None:
            raise SystemExit(f"the routines could not be indexed: {why}")
    matcher.store.close()
    return ids, routine_ids


def stream(
    split: dict[str, Any],
    ids: list[str],
    routines: dict[str, Any] | None,
    routine_ids: dict[str, str],
    seed: int,
    sample: int | None,
) -> tuple[list[Ask], int]:
    """The asks in a seeded order (a seeded sample of them with `sample`), and how many negatives were left out."""
    described = {mb._norm(d): i for i, (_, d) in enumerate(split["stored"])}
    asks = [Ask(q, ids[g], described.get(mb._norm(q), g) != g) for q, g in split["positives"]]
    asks += [Ask(q, None) for q, same, _ in split["negatives"] if not same]
    left_out = sum(same for _, same, _ in split["negatives"])
    if routines:
        for r in routines["procedures"]:
            asks += [Ask(r[kind], routine_ids[r["task"]]) for kind in ("close", "medium", "far")]
        asks += [Ask(q, None) for q in routines["near_misses"] + routines["unrelated"]]
    rng = random.Random(seed)
    rng.shuffle(asks)
    return (asks[:sample] if sample else asks), left_out


# ---------------------------------------------------------------- one arm


def run_arm(home: Path, copy: Path, asks: list[Ask], name: str, calibrate: bool, by: str | None) -> ArmRun:
    """The stream through a copy of the store, each needs-confirmation answered by the oracle (`by`)."""
    from seams import Matcher, ProcedureDatabase

    from sherpa_skills import UsageError

    shutil.copytree(home, copy)
    store = ProcedureDatabase(path=copy / "store.db")
    matcher = Matcher(store, embedder=mb.embedder(), calibrate=calibrate)
    run = ArmRun(name)
    ends = {len(asks) * (t + 1) // THIRDS - 1 for t in range(THIRDS)}
    began = time.perf_counter()
    for i, ask in enumerate(asks):
        d = matcher.match(ask.query, by=by)  # the agent asks as it answers: its answers shape its own matches
        run.lowest = min(run.lowest, d.floor)
        if run.first_calibrated is None and d.floor_reason and d.floor_reason.startswith("calibrated"):
            run.first_calibrated = i
        if d.decision == "match":
            said = "false" if ask.gold is None else "right" if d.procedure_id == ask.gold else "wrong"
            run.outcomes.append(Outcome(ask, said, d.selected.score if d.selected else None, d.floor))
        elif d.decision == "needs-confirmation":
            offered = [c.procedure_id for c in d.offered]
            if ask.gold is not None and ask.gold in offered:
                try:
                    matcher.confirm(ask.query, ask.gold, by=by)
                    run.outcomes.append(Outcome(ask, "offered"))
                except UsageError:  # the judge's answer refused: counted, and the ask stays asked
                    run.refused += 1
                    run.outcomes.append(Outcome(ask, "asked"))
            else:
                matcher.reject(ask.query, offered, by=by)
                run.outcomes.append(Outcome(ask, "asked"))
        else:
            run.outcomes.append(Outcome(ask, "missed" if ask.gold is not None else "fine"))
        if i in ends:
            run.floors.append(matcher.floor_for(None))
    run.seconds = time.perf_counter() - began
    run.points = matcher.answers.asked_points(None)
    store.close()
    return run


# ---------------------------------------------------------------- figures


def figures(outcomes: list[Outcome], shipped: float) -> dict[str, Any]:
    pos = [o for o in outcomes if o.ask.gold is not None]
    neg = [o for o in outcomes if o.ask.gold is None]
    distinct = [o for o in pos if not o.ask.same]
    n, m = max(len(pos), 1), max(len(neg), 1)
    # Replayed only because the store's floor was under the shipped one (an alias's vouching replays below either).
    below = [o for o in outcomes if o.said in ("right", "wrong", "false") and o.floor <= (o.score or 1.0) < shipped]
    return {
        "pos": len(pos),
        "neg": len(neg),
        "hit": sum(o.said == "right" for o in pos) / n,
        "wrong": sum(o.said == "wrong" for o in pos) / n,
        "wrong_distinct": sum(o.said == "wrong" for o in distinct) / max(len(distinct), 1),
        "false": sum(o.said == "false" for o in neg) / m,
        "found": sum(o.said in ("right", "offered") for o in pos) / n,
        "asked_pos": sum(o.said in ("offered", "asked") for o in pos) / n,
        "asked_neg": sum(o.said == "asked" for o in neg) / m,
        # replayed with a relevance under the shipped floor: what the store's own floor let through
        "below": {k: sum(o.said == k for o in below) for k in ("right", "wrong", "false")},
    }


def thirds(run: ArmRun) -> list[list[Outcome]]:
    n = len(run.outcomes)
    return [run.outcomes[n * t // THIRDS : n * (t + 1) // THIRDS] for t in range(THIRDS)]


def pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def permille(x: float) -> str:
    return f"{1000 * x:.1f} ‰"


def floor_cell(f: Any) -> str:
    if f.basis == "shipped":
        return f"{f.value:g} shipped ({f.counted} counted{f', {f.claims} claims' if f.claims else ''})"
    return (
        f"**{f.value:g}** calibrated ({f.counted} counted, {f.wrong} wrong{f', {f.claims} claims' if f.claims else ''})"
    )


def table(runs: dict[str, ArmRun], shipped: float) -> list[str]:
    rows = [
        "| arm | third | positives / negatives | direct hit | wrong (distinct) | false replay | found | asked: "
        "positives | asked: negatives | replayed by a lowered floor: right / wrong / false | floor at the end |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, run in runs.items():
        for t, part in enumerate(thirds(run)):
            f = figures(part, shipped)
            b = f["below"]
            rows.append(
                f"| {name} | {t + 1} | {f['pos']} / {f['neg']} | {pct(f['hit'])} | {permille(f['wrong'])} "
                f"({permille(f['wrong_distinct'])}) | {pct(f['false'])} | {pct(f['found'])} | {pct(f['asked_pos'])} "
                f"| {pct(f['asked_neg'])} | {b['right']} / {b['wrong']} / {b['false']} | {floor_cell(run.floors[t])} |"
            )
    return rows


BANDS = (0.785, 0.7, 0.6, 0.5, 0.4, 0.3)
#: Measured by hand, kept with the figures it explains (seed 1, the full stream).
NOTES = """
Measured on the floor's first rule (b37b21f: anyone's rejections counted, the bound over all asked questions rather
than over those scoring at or above the floor), the same command with `--seeds 1 --no-write` on an archive of that
commit with this bench: the *on* arm lowered the floor to 0.5832, 0.5012 and 0.4833 by the end of each third; direct
hit in the last third 20.3 → 26.9 %, but false replay 3.3 → 5.0 % (23 negatives replayed through the lowered floor,
10 in the last third; the bound is 3 %). The *agent* arm lowered it to 0.7667, 0.7286 and 0.696 on rejections alone
(543 counted, every one saying the best was wrong, 261 confirmations not counted): an agent's answers made the store
replay more. The rule now measured counts only a person's answers and bounds the wrong share among the questions
scoring from the floor up to the shipped one (what a lower floor adds); tests/skills/match/test_floor_claims.py and
test_match_floor.py hold the agent's attack shut.

The wrong replays *distinct* from the stored descriptions (seed 1, the same in every arm) are not the floor's. Of
the 6 in the stream before this round's vouch fix, 3 repeat word for word a wording the oracle had confirmed earlier
for a twin command (NL2Bash gives two commands the same description and the same paraphrase — "Find SUID files",
`find / -perm +4000` and `-perm +u=s` — so the confirmed alias replays the first; the two do the same work), 1 says
less than another description ("List screen IDs": `screen -list` for `screen -ls`, the same), 1 scores 0.82 on
relevance alone, and 1 was vouched for by an alias naming /path/to/base/dir while the task said "the current
directory tree": a vouched task must now say every place the description names (5 in the stream since; the 2nd
third of seed 1: 7.4 → 3.7 ‰).
"""


def points_line(points: list[Any], bound: float) -> str:
    """Why the store's own floor is where it is: a person's answered questions by the best candidate's relevance."""
    from seams import by_person

    mine = [p for p in points if by_person(p.by)]
    if not mine:
        return "no question a person answered"
    wrong = [p.score for p in mine if p.wrong]
    top = max(wrong, default=0.0)
    above = sum(not p.wrong and p.score > top for p in mine)
    bands = []
    for t in BANDS:
        at = [p for p in mine if p.score >= t]
        w = sum(p.wrong for p in at)
        bands.append(f"≥ {t:g}: {len(at)} ({w} wrong, estimate {(w + 1) / (len(at) + 1):.2f})")
    return (
        f"{len(mine)} a person answered, {len(wrong)} saying the best was wrong; the highest-scored wrong one at "
        f"{top:.3f}, {above} right above it ({int(round(1 / bound)) - 1} needed to lower the floor there); by the "
        f"best candidate's relevance: {'; '.join(bands)} (the bound: {bound:g})"
    )


def why_line(runs_by_seed: dict[int, dict[str, ArmRun]], shipped: float, bound: float) -> str:
    """Where a person's answers put the wrong share under the shipped floor, over every seed (the *on* arm)."""
    from seams import by_person

    shares, tops = [], []
    for runs in runs_by_seed.values():
        mine = [p for p in runs["on"].points if by_person(p.by)]
        tops.append(max((p.score for p in mine if p.wrong), default=0.0))
        for t in BANDS[1:]:
            at = [p for p in mine if t <= p.score < shipped]
            if len(at) >= 10:
                shares.append(sum(p.wrong for p in at) / len(at))
    if not shares:
        return "- Too few answered questions under the shipped floor to say where a lower floor would hold."
    return (
        f"- Why: of the questions a person answered, the share saying the best candidate was wrong is "
        f"{100 * min(shares):.0f}–{100 * max(shares):.0f} % in every band of its relevance from [0.7, {shipped:g}) "
        f"down to [{BANDS[-1]:g}, {shipped:g}) (bands of 10 or more, every seed): relevance under the shipped "
        f"floor does not tell right from wrong in this stream, so no "
        f"lower floor holds the {bound:.0%} bound and the shipped one stays; the highest-scored wrong answer sat at "
        f"{min(tops):.3f}–{max(tops):.3f}, just under it."
    )


def reading(runs_by_seed: dict[int, dict[str, ArmRun]], shipped: float) -> list[str]:
    """The plain reading, per seed: the floor's move, the last third's gain and cost, the issue's targets."""
    out = []
    for seed, runs in runs_by_seed.items():
        off, on, agent = (figures(thirds(runs[a])[-1], shipped) for a in ("off", "on", "agent"))
        f_on, f_agent = runs["on"].floors[-1], runs["agent"].floors[-1]
        moved = (
            f"the floor stayed shipped ({f_on.value:g})"
            if f_on.basis == "shipped"
            else f"the store's own floor {'lowered' if f_on.value < shipped else 'raised'} it to {f_on.value:g} "
            f"(lowest during the stream {runs['on'].lowest:g}; calibrated from ask {runs['on'].first_calibrated})"
        )
        out.append(
            f"- Seed {seed}: {moved}. Last third, off → on: direct hit {pct(off['hit'])} → {pct(on['hit'])} "
            f"({100 * (on['hit'] - off['hit']):+.1f} points), wrong {permille(off['wrong'])} → {permille(on['wrong'])}"
            f" (distinct {permille(off['wrong_distinct'])} → {permille(on['wrong_distinct'])}), false replay "
            f"{pct(off['false'])} → {pct(on['false'])}, found {pct(off['found'])} → {pct(on['found'])}, negatives "
            f"asked {pct(off['asked_neg'])} → {pct(on['asked_neg'])}, positives asked {pct(off['asked_pos'])} → "
            f"{pct(on['asked_pos'])}. Agent arm: floor {f_agent.value:g} ({f_agent.basis}; "
            f"{f_agent.claims} confirmations not counted), direct hit {pct(agent['hit'])}, false {pct(agent['false'])}"
            f"{'' if f_agent.basis == 'shipped' else ' — **the agent moved the floor**'}."
        )
        for name, f in (("off", off), ("on", on)):
            ok = f["hit"] >= HIT and f["wrong_distinct"] <= WRONG and f["false"] <= FALSE
            found = f["found"] >= FOUND and f["asked_neg"] <= ASKED_NEG
            out.append(
                f"  - {name}, last third, against the issue's targets: direct hit@1 ≥ 25 % at wrong ≤ 1 % (distinct) "
                f"and false ≤ 3 %: {'met' if ok else '**missed**'}; found ≥ 70 % asking ≤ 25 % of negatives: "
                f"{'met' if found else '**missed**'}."
            )
    return out


def main() -> int:
    parser = arguments(
        description=__doc__.splitlines()[0],
        quick="60 NL2Bash procedures, 60 asks, no routines (the floor stays shipped: too few answers)",
    )
    parser.add_argument("--seed", type=int, default=1, help="the stream's order")
    parser.add_argument("--seeds", help="several orders, comma-separated (overrides --seed)")
    parser.add_argument("--sample", type=int, help="only the first N asks of each seeded stream")
    parser.add_argument("--no-routines", action="store_true", help="NL2Bash only")
    parser.add_argument("--embedding-cache", type=Path)
    args = parse(parser)
    matching, learning = os.environ.get(mb.ENV), os.environ.get(LEARNING_ENV)
    if not matching:
        print(f"skipped: set {mb.ENV} (the shared data folder)")
        return 0
    split = mb.load_split(Path(matching) / "nl2bash-dev.jsonl")
    routines = None
    if learning and not args.no_routines and not args.quick:
        import json

        routines = json.loads((Path(learning) / "routines_dev.json").read_text(encoding="utf-8"))
    if args.quick:
        split = mb.tiny(split)
    if args.embedding_cache and args.embedding_cache.exists():
        mb.embedder().cache.update(pickle.loads(args.embedding_cache.read_bytes()))
    from seams import RELEVANCE_FLOOR

    shipped = float(RELEVANCE_FLOOR)
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else [args.seed]
    runs_by_seed: dict[int, dict[str, ArmRun]] = {}
    started = machine()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "store"
        home.mkdir()
        ids, routine_ids = build(home, split, routines)
        left_out = 0
        for seed in seeds:
            asks, left_out = stream(split, ids, routines, routine_ids, seed, args.sample)
            runs_by_seed[seed] = {
                name: run_arm(home, Path(tmp) / f"{seed}-{name}", asks, name, calibrate, by)
                for name, calibrate, by in ARMS
            }
            print(f"seed {seed}: {', '.join(f'{r.name} {r.seconds:.0f} s' for r in runs_by_seed[seed].values())}")
    if args.embedding_cache:
        args.embedding_cache.write_bytes(pickle.dumps(mb.embedder().cache))
    first = next(iter(runs_by_seed.values()))["off"]
    n_pos = sum(o.ask.gold is not None for o in first.outcomes)
    n_same = sum(o.ask.same for o in first.outcomes)
    body = [
        header(f"{mb.ENV}=../shared/matching {LEARNING_ENV}=../shared/learning {command(__file__)}"),
        f"At start: {started}.",
        "",
        f"Store: {len(ids)} NL2Bash dev commands{f' and {len(routine_ids)} everyday routines' if routines else ''} "
        f"(bench/match_bench.py's store). Stream per seed: {len(first.outcomes)} asks, {n_pos} positives "
        f"({n_same} word for word another stored command's description: replayed by the exact rule whatever the "
        f"floor, left out of *distinct*) and {len(first.outcomes) - n_pos} negatives ({left_out} NL2Bash negatives "
        f"word for word a stored description left out){f', a seeded sample of {args.sample}' if args.sample else ''}. "
        "Each arm on its own copy of one store; needs-confirmation answered by the oracle: the right procedure "
        "confirmed when offered, else every offered one rejected. *off*: `Matcher(calibrate=False)`, the shipped "
        f"floor {shipped:g}; *on*: the store's own floor (skills/match/floor.py, bound "
        f"{_bound():g}), answers by the person; *agent*: as *on*, every answer `by={AGENT!r}` (an MCP client's: "
        "confirmations are claims, rejections count). *found*: replayed right or confirmed; *asked*: "
        "needs-confirmation; *replayed by a lowered floor*: direct replays whose relevance reached the store's floor "
        f"but not the shipped {shipped:g}; *floor at the end*: `floor_for(None)` after the third.",
        "",
    ]
    for seed, runs in runs_by_seed.items():
        secs = ", ".join(f"{r.name} {r.seconds:.0f} s" for r in runs.values())
        refused = sum(r.refused for r in runs.values())
        body += [f"Seed {seed} ({secs}{f'; {refused} confirmations refused' if refused else ''}):", ""]
        body += table(runs, shipped) + [""]
        body += [f"Floor at the end ({name}): {run.floors[-1].reason}." for name, run in runs.items()]
        body += [f"Questions answered (on), at the end: {points_line(runs['on'].points, _bound())}.", ""]
    body += ["Reading:", *reading(runs_by_seed, shipped), why_line(runs_by_seed, shipped, _bound())]
    if not args.quick and not args.sample:
        body.append(NOTES)
    text = "\n".join(body)
    write_section(SECTION, text)
    return 0


def _bound() -> float:
    from seams import default_model

    return float(default_model().bound)


if __name__ == "__main__":
    raise SystemExit(main())
