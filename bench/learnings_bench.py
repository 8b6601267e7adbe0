"""Defensive learnings found by meaning: how the floor was calibrated, and what the lookup adds to every plan.
Rewrites the `## Learnings for the planner` section of bench/RESULTS.md.

    SHERPA_SKILLS_MATCHING_DATA=../shared/matching python bench/learnings_bench.py             # a few minutes
    SHERPA_SKILLS_MATCHING_DATA=../shared/matching python bench/learnings_bench.py --no-write  # print only
    python bench/learnings_bench.py --sizes 100,1000 --no-write                                # latency only

(A few minutes on 2 cores; latency only needs no dataset.)

Needs the MiniLM embedder (its packages are dependencies); the calibration texts' vectors are cached in a temporary
file (`--cache`), so a rerun only scores.

Calibration (NL2Bash dev): a command with two or more descriptions is a learning kept with its first description as
its `about`, and each other description is a task that must find it among the five shown (recall); half of the
commands with one description are learnings too, and the other half's descriptions are tasks with no learning of
their own. The same learnings are scored again without their about (a shell history records none). A shown learning
whose command runs none of the programs of the task's own command is noise ("false": the share of tasks shown at least
one). The relevance of every (task, learning) pair is computed as `FailureFinder` computes it (the exact MiniLM cosine
of the closest view + TERMS_WEIGHT * IDF key-term coverage), for a sweep of weights and floors. The chosen pair has the
highest recall (both stores summed) among those that show an unrelated learning at most once in five plans
(noise <= TARGET_NOISE per task) in both stores: a stray learning costs a line of the prompt, a missed one lets the
planner repeat a known failure.

Latency: `FailureFinder.find` on a warm finder (what `plan_context` calls on every plan) with N learnings in a real
store and companion, against the previous lexical pick (IDF-weighted shared words, no embedding) in the same run.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from harness import arguments, machine, parse, percentile, write_section  # noqa: E402

SECTION = "Learnings for the planner"
ENV = "SHERPA_SKILLS_MATCHING_DATA"
TARGET_NOISE = 0.2
WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.5)
FLOORS = tuple(round(0.4 + 0.025 * i, 3) for i in range(21))
SHOWN = 5


def program_of(command: str) -> frozenset[str]:
    """The programs a command runs (each pipeline stage's, and what `xargs` runs): a learning is about the task when
    the task's own command runs its program too."""
    from seams import stages

    found = set()
    for stage in stages(command) or ():
        found.add(stage.program.rsplit("/", 1)[-1].lower())
        if stage.program == "xargs":
            found |= {w.rsplit("/", 1)[-1].lower() for w in stage.words[:3] if not w.startswith("-")}
    if not found and command.split():
        found.add(command.split()[0].rsplit("/", 1)[-1].lower())
    return frozenset(found)


# ---------------------------------------------------------------------------------------------- calibration


def load(
    path: Path, limit: int | None = None
) -> tuple[list[tuple[str, str, str]], list[tuple[str, int | None, frozenset[str]]]]:
    """Learnings (task type, about, command) and tasks (description, index of its command's learning or None, program).

    A command with two or more descriptions is a learning `about` its first one, and each other description is a task
    that must find it (a paraphrase). Of the commands with one description, half (by a hash) are learnings too
    (distractors) and the other half's descriptions are tasks with no learning of their own."""
    from seams import suggest_task_type

    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()][:limit]
    learnings: list[tuple[str, str, str]] = []
    tasks: list[tuple[str, int | None, frozenset[str]]] = []
    for row in rows:
        command, descriptions = row["command"], row["descriptions"]
        if len(descriptions) >= 2:
            learnings.append((suggest_task_type([command]), descriptions[0], command))
            tasks += [(d, len(learnings) - 1, program_of(command)) for d in descriptions[1:]]
        elif int(hashlib.sha256(("learnings-bench:" + command).encode()).hexdigest(), 16) % 2 == 0:
            learnings.append((suggest_task_type([command]), descriptions[0], command))
        else:
            tasks.append((descriptions[0], None, program_of(command)))
    return learnings, tasks


def embed_all(texts: list[str], cache: Path) -> Any:
    """MiniLM vectors, cached by text in `cache` (an .npz): a rerun on a busy machine does not embed again."""
    import numpy as np
    from seams import MiniLMEmbedder

    known: dict[str, Any] = {}
    if cache.is_file():
        with np.load(cache, allow_pickle=False) as data:
            known = dict(zip(data["texts"].tolist(), data["vectors"], strict=True))
    todo = [t for t in dict.fromkeys(texts) if t not in known]
    embedder = MiniLMEmbedder()
    for start in range(0, len(todo), 256):
        chunk = todo[start : start + 256]
        known.update(zip(chunk, np.asarray(embedder.embed(chunk), dtype=np.float32), strict=True))
    if todo:
        np.savez(cache, texts=np.asarray(list(known)), vectors=np.asarray(list(known.values()), dtype=np.float32))
    return np.asarray([known[t] for t in texts], dtype=np.float32)


def sweep_of(
    learnings: list[tuple[str, str, str]], tasks: list[tuple[str, int | None, frozenset[str]]], cache: Path
) -> dict[Any, Any]:
    """recall, false and noise for every (terms weight, floor), scoring every (task, learning)
    pair as the finder does."""
    import numpy as np
    from seams import TermIndex, learning_texts, learning_words

    queries = embed_all([q for q, _, _ in tasks], cache)
    cos = np.zeros((len(tasks), len(learnings)), dtype=np.float32)
    for texts in learning_texts(learnings):  # a learning is as close as the closest of its texts
        vectors = embed_all(texts, cache)
        cos = np.maximum(cos, np.clip(queries @ vectors.T, 0.0, 1.0))
    index = TermIndex((str(i), learning_words(*x)) for i, x in enumerate(learnings))
    programs = [program_of(c) for _, _, c in learnings]
    cover = np.zeros_like(cos)
    for qi, (query, _, _) in enumerate(tasks):
        weights = index.weights(query)
        total = sum(weights.values()) or 1.0
        for term, w in weights.items():
            if term in index.postings:
                cover[qi, index.postings[term]] += w / total
    sweep: dict[tuple[float, float], dict[str, float]] = {}
    positives = [qi for qi, (_, gold, _) in enumerate(tasks) if gold is not None]
    for weight in WEIGHTS:
        score = cos + weight * cover
        top = np.argsort(-score, axis=1)[:, :SHOWN]
        top_scores = np.take_along_axis(score, top, axis=1)
        for floor in FLOORS:
            shown = top_scores >= floor
            hit = sum(bool(((top[qi] == tasks[qi][1]) & shown[qi]).any()) for qi in positives) / len(positives)
            other = [
                np.asarray([not (programs[j] & tasks[qi][2]) for j in top[qi]]) & shown[qi] for qi in range(len(tasks))
            ]
            sweep[(weight, floor)] = {
                "recall": hit,
                "false": sum(bool(o.any()) for o in other) / len(tasks),
                "noise": sum(int(o.sum()) for o in other) / len(tasks),
            }
    return sweep


def calibrate(path: Path, cache: Path, rows: int | None = None) -> dict[str, Any]:
    """Two stores of the same learnings: with what each command was for (`about`, as Claude Code logs and runs give it),
    and with the command alone (as a shell history gives it). The chosen pair keeps noise <= TARGET_NOISE on both."""
    learnings, tasks = load(path, rows)
    t0 = time.perf_counter()
    about = sweep_of(learnings, tasks, cache)
    bare = sweep_of([(t, "", c) for t, _, c in learnings], tasks, cache)
    ok = [k for k in about if about[k]["noise"] <= TARGET_NOISE and bare[k]["noise"] <= TARGET_NOISE]
    best = max(ok, key=lambda k: (about[k]["recall"] + bare[k]["recall"], -k[1])) if ok else None
    best_cosine = max(
        (k for k in ok if k[0] == 0.0), key=lambda k: (about[k]["recall"] + bare[k]["recall"], -k[1]), default=None
    )
    return {
        "learnings": len(learnings),
        "tasks": len(tasks),
        "positives": sum(g is not None for _, g, _ in tasks),
        "seconds": time.perf_counter() - t0,
        "about": about,
        "bare": bare,
        "best": best,
        "best_cosine": best_cosine,
    }


# ---------------------------------------------------------------------------------------------- latency

_PROGRAMS = [
    "npm run build",
    "npm test",
    "cargo build --release",
    "make -j4",
    "docker compose up -d",
    "kubectl apply -f",
    "terraform apply",
    "pytest -x",
    "git push origin",
    "rsync -a",
    "tar -czf",
    "psql -c",
    "pip install",
    "go test ./...",
    "ansible-playbook",
    "helm upgrade --install",
    "aws s3 cp",
    "scp",
    "ssh deploy@",
    "systemctl restart",
]
_ERRORS = [
    "Permission denied",
    "No such file or directory",
    "connection refused",
    "exit status 1",
    "timed out",
    "Type error: Property 'x' does not exist",
    "port is already allocated",
    "rejected non-fast-forward",
]
_TASKS = [
    "build the frontend",
    "deploy the api to production",
    "run the unit tests",
    "back up the photos",
    "restart the web service",
    "push my changes",
    "write a haiku about autumn",
    "apply the infrastructure changes",
]


_ABOUTS = [
    "Build the frontend for production",
    "Deploy the api",
    "Run the unit tests",
    "Back up the database",
    "Restart the web service",
    "Push the release",
    "Apply the infrastructure plan",
    "Sync the static site",
]


def synthetic(n: int) -> list[tuple[str, str, str, str]]:
    """n distinct (task type, about, command, error): 20 programs x varied arguments x 8 errors; every other one knows
    what it was for (as a Claude Code log tells), the rest are bare commands (as a shell history gives them)."""
    from seams import suggest_task_type

    out = []
    for i in range(n):
        base = _PROGRAMS[i % len(_PROGRAMS)]
        command = f"{base} target-{i // len(_PROGRAMS) % 97} item{i // (len(_PROGRAMS) * 97)}"
        about = f"{_ABOUTS[i % len(_ABOUTS)]} (target {i % 97})" if i % 2 else ""
        out.append((suggest_task_type([command]), about, command, _ERRORS[i % len(_ERRORS)]))
    return out


def lexical_baseline(store: Any, task: str, task_type: str | None) -> int:
    """The previous pick: IDF-weighted shared words over the 2,000 newest learnings, floor 0.3 (no meaning)."""
    from seams import learning_words, task_type_words, words

    pool = store.learnings(limit=2000)
    task_words = set(words(task)) | task_type_words(task_type)
    bags = [learning_words(x.task_type, x.about, x.command) for x in pool]
    df: dict[str, int] = {}
    for bag in bags:
        for w in bag & task_words:
            df[w] = df.get(w, 0) + 1
    idf = {w: math.log(1 + len(pool) / (1 + df.get(w, 0))) for w in task_words}
    total = sum(idf.values()) or 1.0
    return sum(1 for x, bag in zip(pool, bags, strict=True) if sum(idf[w] for w in bag & task_words) / total >= 0.3)


def latency(sizes: list[int], rounds: int) -> list[dict[str, Any]]:
    from seams import CapturedLearning, FailureFinder, ProcedureDatabase

    rows = []
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            store = ProcedureDatabase(path=Path(tmp) / "store.db")
            for task_type, about, command, error in synthetic(n):
                store.add_learning(
                    CapturedLearning(task_type=task_type, about=about, command=command, error=error, source="bench")
                )
            finder = FailureFinder(store)
            t0 = time.perf_counter()
            finder.reindex()
            index_s = time.perf_counter() - t0
            finder.find("warm up", None)
            ours: list[float] = []
            base: list[float] = []
            shown = []
            for _ in range(rounds):
                for task in _TASKS:
                    t0 = time.perf_counter()
                    found = finder.find(task, None)
                    ours.append((time.perf_counter() - t0) * 1000)
                    shown.append(len(found.found))
                    t0 = time.perf_counter()
                    lexical_baseline(store, task, None)
                    base.append((time.perf_counter() - t0) * 1000)
            rows.append(
                {
                    "n": n,
                    "index_s": index_s,
                    "p50": statistics.median(ours),
                    "p95": percentile(ours, 95),
                    "base_p50": statistics.median(base),
                    "shown": statistics.mean(shown),
                }
            )
            store.close()
    return rows


# ---------------------------------------------------------------------------------------------- report


def report(cal: dict[str, Any] | None, lat: list[dict[str, Any]], command: str) -> str:
    from seams import FLOOR, TERMS_WEIGHT

    lines = [f"Machine: {machine()}.", f"Command: `{command}`.", ""]
    if cal is None:
        lines += [f"Calibration skipped: {ENV} is not set (the NL2Bash dev split).", ""]
    else:
        about, bare = cal["about"], cal["bare"]
        lines += [
            f"Calibration on NL2Bash dev ({cal['seconds']:.0f} s): {cal['learnings']} learnings, "
            "one per command, under the "
            f"task type mining gives it; {cal['tasks']} tasks, {cal['positives']} of them paraphrases of a learning's "
            "command (another annotator's description), the rest describing commands that are not "
            "learnings. Two stores: "
            f"learnings *with about* (the command's first description, as a Claude Code log or a run records what a "
            f"command was for) and *command only* (a shell history). recall = the paraphrased command's learning among "
            f"the {SHOWN} shown; false = tasks shown at least one learning whose command runs none of the "
            f"programs of the task's own command (strict: NL2Bash is all file work, where another program is often "
            f"still related); noise = such learnings per task.",
            "",
            "| terms weight | floor | recall (about) | false (about) | noise (about) | recall (command only) "
            "| false (command only) | noise (command only) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for weight in WEIGHTS:
            for floor in sorted(set(FLOORS[4::2]) | ({FLOOR} if weight == TERMS_WEIGHT else set())):
                a, b = about[(weight, floor)], bare[(weight, floor)]
                mark = " **(shipped)**" if (weight, floor) == (TERMS_WEIGHT, FLOOR) else ""
                lines.append(
                    f"| {weight:g} | {floor:g}{mark} | {a['recall']:.1%} | {a['false']:.1%} | {a['noise']:.2f} | "
                    f"{b['recall']:.1%} | {b['false']:.1%} | {b['noise']:.2f} |"
                )
        lines.append("")
        for name, key in (("Best", cal["best"]), ("Baseline, cosine alone (weight 0), best", cal["best_cosine"])):
            if key:
                lines.append(
                    f"{name} with noise <= {TARGET_NOISE:g} on both: weight {key[0]:g}, floor {key[1]:g}: recall "
                    f"{about[key]['recall']:.1%} with about, {bare[key]['recall']:.1%} command only; false "
                    f"{about[key]['false']:.1%} / {bare[key]['false']:.1%}; "
                    f"noise {about[key]['noise']:.2f} / {bare[key]['noise']:.2f}."
                )
        shipped = (TERMS_WEIGHT, FLOOR)
        if shipped in about:
            lines.append(
                f"Shipped (`skills/match/failures.py`): weight {TERMS_WEIGHT:g}, floor {FLOOR:g}: "
                f"recall {about[shipped]['recall']:.1%} "
                f"/ {bare[shipped]['recall']:.1%}, false {about[shipped]['false']:.1%} / {bare[shipped]['false']:.1%}."
            )
        lines.append("")
    if lat:
        lines += [
            "Added latency per plan: `FailureFinder.find` warm (query embedded by MiniLM, companion neighbours, exact "
            "cosines), against the previous lexical pick (shared words, no meaning) in the same run; 8 tasks x rounds.",
            "",
            "| learnings | find p50 ms | find p95 ms | lexical p50 ms | ratio | shown per task | reindex s |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in lat:
            lines.append(
                f"| {r['n']:,} | {r['p50']:.1f} | {r['p95']:.1f} | {r['base_p50']:.1f} | "
                f"{r['p50'] / max(r['base_p50'], 1e-6):.1f}x | {r['shown']:.1f} | {r['index_s']:.1f} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = arguments(description=__doc__.splitlines()[0], quick="sizes 20,50, one round, calibration on 40 commands")
    parser.add_argument("--sizes", default="100,1000,5000")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-latency", action="store_true")
    parser.add_argument(
        "--cache",
        default=str(Path(tempfile.gettempdir()) / "sherpa-learnings-bench-vectors.npz"),
        help="MiniLM vectors of the calibration texts, kept between runs",
    )
    args = parse(parser)
    if args.quick:
        args.sizes, args.rounds = "20,50", 1
    data = os.environ.get(ENV)
    cal = None
    if data and (Path(data) / "nl2bash-dev.jsonl").is_file():
        cal = calibrate(Path(data) / "nl2bash-dev.jsonl", Path(args.cache), 40 if args.quick else None)
    else:
        print(f"calibration skipped: {ENV} is not set to the folder holding nl2bash-dev.jsonl", file=sys.stderr)
    lat = [] if args.no_latency else latency([int(x) for x in args.sizes.split(",") if x], args.rounds)
    command = "python bench/learnings_bench.py " + " ".join(a for a in sys.argv[1:] if a != "--no-write")
    text = report(cal, lat, command.strip())
    print(text)
    if not args.no_write:
        write_section(SECTION, text)


if __name__ == "__main__":
    main()
