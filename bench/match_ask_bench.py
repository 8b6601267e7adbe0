"""The three answers on everyday routines and on NL2Bash paraphrases: what is replayed directly, what is asked about
(and whether the right procedure is among the candidates), what is refused. Rewrites the `## Procedure matching: the
third answer (needs-confirmation)` section of bench/RESULTS.md.

    # a few minutes on 2 cores (embeds ~7,700 texts; --embedding-cache keeps them between runs)
    SHERPA_SKILLS_MATCHING_DATA=../shared/matching SHERPA_SKILLS_LEARNING_DATA=../shared/learning \\
        python bench/match_ask_bench.py [--embedding-cache /tmp/e.pkl] [--no-write] [--baseline COMMIT]

Routines (routines_dev.json): each of the 15 routines captured three times (one success is not proof) through
`SkillStore.capture`, among the first 300 NL2Bash dev commands (stored as in bench/match_bench.py), so the store holds
315 procedures. Each routine is asked for again close / medium / far; 15 near misses and 10 unrelated asks must
never replay. Then, per routine, one wording is confirmed (`SkillStore.confirm`, as `learn replay QUERY --procedure
ID` does) and another is asked: medium confirmed → far asked, and far confirmed → medium asked, each on a fresh copy.

NL2Bash: the store and queries of bench/match_bench.py (2,394 procedures), scored per half of the split (a command's
paraphrases stay in one half; the relevance model's halves are in the calibration section). Coverage: the right
procedure replayed or among the offered candidates; negatives asked: a negative query answered by anything but
no-match.

Warm match cost: `match` p50 over the routines' queries, this tree against `--baseline` (default: the commit this
branch started from), each in its own child process on its own store, alternating, in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import match_bench as mb  # noqa: E402
from _results import machine, median, write_section  # noqa: E402

SECTION = "Procedure matching: the third answer (needs-confirmation)"
LEARNING_ENV = "SHERPA_SKILLS_LEARNING_DATA"
OTHERS = 300
BASELINE = "041a5e8"
WHY = """
Why the misses (what would be needed):
- *Another wording after one was confirmed replays directly: 0 of 15.* An alias makes only the same wording (key words
  equal) sure; a close one brings the procedure among the candidates (5–14 of 15 offered above) but is not replayed.
  Scoring a task against the alias as if it were the description (the closer cosine counts) replayed a near miss in
  an earlier run of this benchmark, so it was taken out: safety first. Reaching 6 of 15 needs a relevance model that
  knows alias evidence (fitted on confirmed pairs, which no data set here holds).
- *NL2Bash direct hit@1 ≥ 25 % with wrong ≤ 1 %.* The direct decision is the shipped relevance model (floor 0.704),
  unchanged but for the folded-wording rule (+0.6 points of hit@1 on dev). Its wrong replays (1.6–1.7 %) are not
  near-ties that a margin could turn into questions: a margin up to 0.5 leaves them (same candidates re-decided), so
  the target needs a better model of the near-twin `find` commands, not this issue's mechanism.
- *NL2Bash coverage 70 % at ≤ 25 % of negatives asked.* Most negatives here are near twins of a stored command, so
  asking about them costs as much as asking about paraphrases: on dev, the ask floor that asks 25 % of negatives
  covers about 65 %, and 70 % coverage asks about 30 %. The ask settings (ask floor 0.1, cosine 0.35 clear by 0.1)
  were chosen on a coarse grid over the whole NL2Bash dev split and routines_dev together, not per half: the
  half-wise figures above are not held out for them.
"""


def routines_store(home: Path, data: dict[str, Any], split: dict[str, Any]) -> tuple[Any, dict[str, str]]:
    """A SkillStore: OTHERS NL2Bash procedures, then every routine captured three times."""
    from sherpa_skills.skills.api import SkillStore
    from sherpa_skills.skills.store.models import CapturedProcedure, ProcedureStep

    skills = SkillStore(home)
    for i, (command, description) in enumerate(split["stored"][:OTHERS]):
        skills.store.add_procedure(
            CapturedProcedure(
                id=f"n{i:04d}",
                task_type=mb.program_of(command),
                description=description,
                steps=[ProcedureStep(command=command)],
                success_count=2,
                source="manual",
            )
        )
    skills.matcher.embedder = mb.embedder()
    skills.matcher.refresh()
    ids = {}
    for r in data["procedures"]:
        for _ in range(3):
            captured = skills.capture(r["task"], r["steps"], description=r["description"])
        assert captured.procedure is not None
        ids[r["task"]] = captured.procedure.id
    return skills, ids


def answer(decision: Any, gold: str | None) -> str:
    """replayed (right) | wrong | offered (right among the candidates) | asked (not among them) | none."""
    if decision.decision == "match":
        return "replayed" if decision.procedure_id == gold else "wrong"
    if decision.decision == "needs-confirmation":
        return "offered" if any(c.procedure_id == gold for c in decision.offered) else "asked"
    return "none"


def routines(data: dict[str, Any], split: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"kinds": {}, "aliases": {}}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        skills, ids = routines_store(home, data, split)
        out["store"] = skills.store.count()
        asked: list[tuple[str, str | None, str]] = [
            (r[kind], ids[r["task"]], kind) for r in data["procedures"] for kind in ("close", "medium", "far")
        ]
        asked += [(q, None, "near miss") for q in data["near_misses"]]
        asked += [(q, None, "unrelated") for q in data["unrelated"]]
        for query, gold, kind in asked:
            out["kinds"].setdefault(kind, []).append(answer(skills.match(query), gold))
        skills.matcher.embedder = mb.embedder().inner
        times = []
        for query, _, _ in asked * 2:
            t0 = time.perf_counter()
            skills.match(query)
            times.append((time.perf_counter() - t0) * 1000)
        out["p50_ms"] = median(times)
        skills.matcher.embedder = mb.embedder()
        skills.close()
        for confirmed, then in (("medium", "far"), ("far", "medium")):
            copy = Path(tmp) / f"copy-{confirmed}"
            shutil.copytree(home, copy)
            from sherpa_skills.skills.api import SkillStore

            fresh = SkillStore(copy)
            fresh.matcher.embedder = mb.embedder()
            for r in data["procedures"]:
                fresh.confirm(r[confirmed], ids[r["task"]])
            results = [answer(fresh.match(r[then]), ids[r["task"]]) for r in data["procedures"]]
            near = [answer(fresh.match(q), None) for q in data["near_misses"]]
            out["aliases"][f"{confirmed} confirmed, {then} asked"] = {"then": results, "near": near}
            fresh.close()
    return out


def nl2bash(split: dict[str, Any]) -> dict[str, Any]:
    import hashlib

    with tempfile.TemporaryDirectory() as tmp:
        matcher, ids, _ = mb.build_store(Path(tmp), split["stored"])
        queries = [(q, ids[g], False, ids[g]) for q, g in split["positives"]]
        queries += [(q, None, same, q) for q, same, _ in split["negatives"]]
        halves: dict[int, dict[str, list[str]]] = {0: {"pos": [], "neg": []}, 1: {"pos": [], "neg": []}}
        for query, gold, same, group in queries:
            if gold is None and same:
                continue  # word for word another stored description: no matcher that reads only the task can refuse
            fold = int(hashlib.sha256(group.encode()).hexdigest(), 16) % 2
            halves[fold]["pos" if gold else "neg"].append(answer(matcher.match(query), gold))
    return halves


def warm_child(code_root: str, data_path: str, cache: str | None, out: str) -> None:
    """In a child process: build the routines store with the code at `code_root` and time warm matches."""
    env = {**os.environ, "PYTHONPATH": code_root, "SHERPA_SKILLS_ASK_CHILD": "1"}
    args = [sys.executable, str(HERE / "match_ask_bench.py"), "--child", out, "--learning", data_path]
    if cache:
        args += ["--embedding-cache", cache]
    subprocess.run(args, env=env, check=True, cwd=code_root, timeout=1800)


def child(out: Path, data: dict[str, Any], split: dict[str, Any]) -> None:
    queries = [r[k] for r in data["procedures"] for k in ("close", "medium", "far")]
    queries += data["near_misses"] + data["unrelated"]
    with tempfile.TemporaryDirectory() as tmp:
        skills, _ = routines_store(Path(tmp) / "home", data, split)
        skills.matcher.embedder = mb.embedder().inner
        for q in queries:
            skills.match(q)
        times = []
        for q in queries * 3:
            t0 = time.perf_counter()
            skills.match(q)
            times.append((time.perf_counter() - t0) * 1000)
    out.write_text(json.dumps({"p50": median(times)}))


def _pct(n: int, d: int) -> str:
    return f"{100 * n / max(d, 1):.1f} %"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedding-cache", type=Path)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--learning", help=argparse.SUPPRESS)
    args = parser.parse_args()
    learning = args.learning or os.environ.get(LEARNING_ENV)
    matching = os.environ.get(mb.ENV)
    if not learning or not matching:
        print(f"skipped: set {LEARNING_ENV} and {mb.ENV} (the shared data folders)")
        return 0
    data = json.loads((Path(learning) / "routines_dev.json").read_text(encoding="utf-8"))
    split = mb.load_split(Path(matching) / "nl2bash-dev.jsonl")
    if args.embedding_cache and args.embedding_cache.exists():
        mb.embedder().cache.update(pickle.loads(args.embedding_cache.read_bytes()))
    if args.child:
        child(args.child, data, split)
        return 0
    started = machine()
    r = routines(data, split)
    halves = nl2bash(split)
    if args.embedding_cache:
        args.embedding_cache.write_bytes(pickle.dumps(mb.embedder().cache))
    # Warm match cost against the baseline, alternating, each in its own process and store.
    base_dir = Path(tempfile.mkdtemp())
    subprocess.run(
        f"git -C {HERE.parent} archive {args.baseline} | tar -x -C {base_dir}", shell=True, check=True, timeout=300
    )
    shutil.copy(HERE / "match_ask_bench.py", base_dir / "bench" / "match_ask_bench.py")
    cost: dict[str, list[float]] = {"before": [], "after": []}
    cache = str(args.embedding_cache) if args.embedding_cache else None
    for _ in range(2):
        for name, root in (("before", str(base_dir)), ("after", str(HERE.parent))):
            out = base_dir / f"{name}.json"
            warm_child(root, learning, cache, str(out))
            cost[name].append(json.loads(out.read_text())["p50"])
    shutil.rmtree(base_dir, ignore_errors=True)
    before, after = median(cost["before"]), median(cost["after"])

    k = r["kinds"]
    direct_close = k["close"].count("replayed")
    others = k["medium"] + k["far"]
    found_others = sum(a in ("replayed", "offered") for a in others)
    wrong = sum(a == "wrong" for v in k.values() for a in v)
    near_replayed = sum(a in ("replayed", "wrong") for a in k["near miss"])
    near_asked = sum(a != "none" for a in k["near miss"])
    unrelated_replayed = sum(a in ("replayed", "wrong") for a in k["unrelated"])
    unrelated_asked = sum(a != "none" for a in k["unrelated"])
    rows = [
        f"| {kind} | {len(v)} | {v.count('replayed')} | {v.count('offered')} | {v.count('asked')} | "
        f"{v.count('wrong')} | {v.count('none')} |"
        for kind, v in k.items()
    ]
    alias_rows = []
    best_alias = 0
    for name, res in r["aliases"].items():
        direct = res["then"].count("replayed")
        best_alias = max(best_alias, direct) if name.startswith("medium") else best_alias
        alias_rows.append(
            f"| {name} | {direct} of 15 | {res['then'].count('offered')} | {res['then'].count('wrong')} | "
            f"{sum(a in ('replayed', 'wrong') for a in res['near'])} |"
        )
    medium_then_far = r["aliases"]["medium confirmed, far asked"]["then"].count("replayed")
    nl_rows = []
    nl_fig = {}
    for fold, h in halves.items():
        pos, neg = h["pos"], h["neg"]
        hit, wrong_nl = pos.count("replayed"), pos.count("wrong")
        cov = sum(a in ("replayed", "offered") for a in pos)
        false = sum(a in ("replayed", "wrong") for a in neg)
        asked_neg = sum(a != "none" for a in neg)
        nl_fig[fold] = (hit / len(pos), wrong_nl / len(pos), false / len(neg), cov / len(pos), asked_neg / len(neg))
        nl_rows.append(
            f"| half {fold} | {len(pos)} / {len(neg)} | {_pct(hit, len(pos))} | {_pct(wrong_nl, len(pos))} | "
            f"{_pct(false, len(neg))} | {_pct(cov, len(pos))} | {_pct(asked_neg, len(neg))} |"
        )

    def met(ok: bool) -> str:
        return "met" if ok else "**missed**"

    worst_hit = min(f[0] for f in nl_fig.values())
    worst_wrong = max(f[1] for f in nl_fig.values())
    worst_false = max(f[2] for f in nl_fig.values())
    worst_cov = min(f[3] for f in nl_fig.values())
    worst_asked = max(f[4] for f in nl_fig.values())
    body = "\n".join(
        [
            f"Machine at start: {started}. At end: {machine()}.",
            "Command: `SHERPA_SKILLS_MATCHING_DATA=../shared/matching SHERPA_SKILLS_LEARNING_DATA=../shared/learning "
            "python bench/match_ask_bench.py --embedding-cache /tmp/e.pkl`.",
            "",
            f"Everyday routines (routines_dev.json) in a store of {r['store']} procedures: 15 routines, each captured "
            f"three times, among {OTHERS} NL2Bash commands. *replayed*: the right routine, directly; *offered*: "
            "needs-confirmation with the right one among the candidates; *asked*: needs-confirmation without it.",
            "",
            "| asked | n | replayed | offered | asked | wrong replay | no-match |",
            "|---|---|---|---|---|---|---|",
            *rows,
            "",
            "After one wording per routine was confirmed (an alias), another wording asked (each on a fresh copy of "
            "the store):",
            "",
            "| | replayed directly | offered | wrong | near misses replayed |",
            "|---|---|---|---|---|",
            *alias_rows,
            "",
            "NL2Bash dev (2,394 procedures), per half of the split; negatives word for word another stored "
            "description are left out (see the matching section). *Coverage*: the right procedure replayed or "
            "offered; *negatives asked*: answered with anything but no-match.",
            "",
            "| half | positives / negatives | direct hit@1 | wrong | false replay | coverage | negatives asked |",
            "|---|---|---|---|---|---|---|",
            *nl_rows,
            "",
            f"Warm `match` p50 over the routines' 70 queries (store of {r['store']}), each in its own process, "
            f"alternating twice: before ({args.baseline}) {before:.1f} ms, after {after:.1f} ms, "
            f"ratio {after / before:.2f}×.",
            "",
            "Targets:",
            f"- near-verbatim replayed directly ≥ 14 of 15: {met(direct_close >= 14)} ({direct_close});",
            f"- other wordings replayed or offered ≥ 20 of 30: {met(found_others >= 20)} ({found_others});",
            f"- wrong procedures 0: {met(wrong == 0)} ({wrong}); near misses or unrelated replayed 0: "
            f"{met(near_replayed + unrelated_replayed == 0)} ({near_replayed} + {unrelated_replayed});",
            f"- near misses asked ≤ 10 of 15: {met(near_asked <= 10)} ({near_asked}); unrelated asked ≤ 1 of 10: "
            f"{met(unrelated_asked <= 1)} ({unrelated_asked});",
            f"- after one confirmed wording, another replays directly ≥ 6 of 15: {met(medium_then_far >= 6)} "
            f"({medium_then_far}, medium confirmed then far asked);",
            f"- NL2Bash direct hit@1 ≥ 25 % with wrong ≤ 1 % and false replay ≤ 3 % (worst half): "
            f"{met(worst_hit >= 0.25 and worst_wrong <= 0.01 and worst_false <= 0.03)} "
            f"(hit@1 {100 * worst_hit:.1f} %, wrong {100 * worst_wrong:.1f} %, false {100 * worst_false:.1f} %);",
            f"- NL2Bash coverage ≥ 70 % asking ≤ 25 % of negatives (worst half): "
            f"{met(worst_cov >= 0.70 and worst_asked <= 0.25)} (coverage {100 * worst_cov:.1f} %, "
            f"asked {100 * worst_asked:.1f} %);",
            f"- warm match ≤ 1.5× today's: {met(after / before <= 1.5)} ({after / before:.2f}×).",
        ]
    )
    body += "\n" + WHY
    print(body)
    if not args.no_write:
        write_section(SECTION, body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
