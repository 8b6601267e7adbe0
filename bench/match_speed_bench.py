"""Speed of procedure matching, this code against a baseline commit measured in the same run: a fresh process
running `sherpa-skills learn replay QUERY --json`, `learn reindex` throughput, and warm `match` latency at 10,000
procedures. Rewrites the `### Matching speed` part of bench/RESULTS.md (inside the matching section).

    SHERPA_SKILLS_MATCHING_DATA=../shared/matching python bench/match_speed_bench.py --baseline 724c024
    ... --no-write --fresh 3 --reindex 300     # a quicker look

Both versions run in subprocesses with PYTHONPATH pointing at their code (the baseline is `git archive`d into a
temporary folder), alternately, so the load of other work on the machine falls on both alike. Stores: the NL2Bash dev
commands as match_bench.py stores them (2,394), padded with synthetic copies of them ("variant k", "copy i") to 10,000.
Building those indexes embeds nothing (see bench/_match_speed_child.py): the stored texts are embedded once by MiniLM
here, copies get their original's vector plus fixed noise; every query is embedded by MiniLM inside the timed call.
Reindex throughput embeds for real: `learn reindex --json` on a store of the first `--reindex` commands.
"""

from __future__ import annotations

import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from harness import RESULTS, arguments, machine, parse  # noqa: E402
from match_bench import ENV, TARGET_FRESH_S, TARGET_P50_MS, TARGET_REINDEX, load_split, program_of  # noqa: E402

SECTION = "Procedure matching (NL2Bash dev)"
PART = "### Matching speed"
CHILD = HERE / "_match_speed_child.py"


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(argv: list[str], code: Path, timeout: float = 3600) -> tuple[float, float, str]:
    """(wall s, CPU s, stdout) of a child running `code`'s sherpa_skills."""
    env = {**os.environ, "PYTHONPATH": str(code), "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1"}
    cpu0, t0 = _cpu_children(), time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=code, timeout=timeout)
    wall, cpu = time.perf_counter() - t0, _cpu_children() - cpu0
    if done.returncode not in (0, 1):
        raise SystemExit(f"{shlex.join(argv)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return wall, cpu, done.stdout


def last_json(text: str) -> dict[str, Any]:
    return json.loads(next(line for line in reversed(text.strip().splitlines()) if line.startswith("{")))


def baseline_tree(rev: str, into: Path) -> Path:
    """The baseline's package and data folders, as `git archive` gives them."""
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "archive", rev, "sherpa_skills", "statemachines", "policies"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def current_tree(into: Path) -> Path:
    """A copy of this tree's package and data folders, so edits during the run do not change what is measured."""
    import shutil

    for name in ("sherpa_skills", "statemachines", "policies"):
        shutil.copytree(ROOT / name, into / name, ignore=shutil.ignore_patterns("__pycache__"))
    return into


def base_vectors(split: dict[str, Any], out: Path) -> float:
    """MiniLM vectors of the stored procedures' index texts, computed once; returns texts per second."""
    import numpy as np
    from seams import MiniLMEmbedder, index_text

    texts = [index_text(program_of(c), d, [], [c]) for c, d in split["stored"]]
    embedder = MiniLMEmbedder()
    embedder.embed(texts[:64])
    t0 = time.perf_counter()
    vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    rate = len(texts) / (time.perf_counter() - t0)
    np.save(out, vectors)
    return rate


def main() -> int:
    parser = arguments(
        description=__doc__.splitlines()[0],
        quick="200 NL2Bash procedures, random vectors, 10 queries, 1 fresh replay, 50 reindexed; this tree both sides",
    )
    parser.add_argument("--baseline", default="724c024", help="the commit to compare with (default: before this work)")
    parser.add_argument("--size", type=int, default=10_000, help="procedures in the large store")
    parser.add_argument("--fresh", type=int, default=5, help="fresh-process replays timed per version and store")
    parser.add_argument("--queries", type=int, default=200, help="warm matches timed per version and store")
    parser.add_argument("--reindex", type=int, default=600, help="procedures in the store `learn reindex` rebuilds")
    parser.add_argument(
        "--random-vectors",
        action="store_true",
        help="stores' vectors drawn at random (seeded) instead of MiniLM's: no embedding before timing starts",
    )
    parser.add_argument(
        "--skip", default="", help="comma-separated parts not to measure: warm, fresh, fresh-large, reindex"
    )
    args = parse(parser)
    if args.quick:
        args.fresh, args.queries, args.reindex, args.random_vectors = 1, 10, 50, True
        args.skip = ",".join(filter(None, [args.skip, "fresh-large"]))
    command = shlex.join(["python", "bench/match_speed_bench.py", *sys.argv[1:]])
    data = os.environ.get(ENV)
    if not data or not (Path(data) / "nl2bash-dev.jsonl").is_file():
        print(f"skipped: set {ENV} to the folder holding nl2bash-dev.jsonl (../shared/matching)")
        return 0
    os.environ[ENV] = str(Path(data).resolve())  # the children run in other folders: a relative path would not hold
    split = load_split(Path(data) / "nl2bash-dev.jsonl")
    stored = len(split["stored"])
    if args.quick:
        stored = args.size = 200  # the first 200 NL2Bash procedures, no padded store
    queries = [q for q, _ in split["positives"]][: args.queries]
    py = sys.executable
    load_start = machine()
    with tempfile.TemporaryDirectory(prefix="match-speed-") as tmp:
        work = Path(tmp)
        # --quick: this tree on both sides (the default baseline, 724c024, predates the package's skills/ layout that
        # the child imports through bench/seams.py, so its child no longer starts; name a newer --baseline).
        before = current_tree(work / "before") if args.quick else baseline_tree(args.baseline, work / "before")
        versions = {"before": before, "after": current_tree(work / "after")}
        (work / "queries.json").write_text(json.dumps(queries))
        vectors = work / "vectors.npy"
        skip = set(filter(None, args.skip.split(",")))
        if args.random_vectors:
            import numpy as np

            rng = np.random.default_rng(11)
            drawn = rng.normal(size=(stored, 384)).astype(np.float32)
            np.save(vectors, drawn / np.linalg.norm(drawn, axis=1, keepdims=True))
            embed_rate = float("nan")
        else:
            embed_rate = base_vectors(split, vectors)
            print(f"embedded {stored} stored texts in-process: {embed_rate:.0f}/s", flush=True)
        sizes = (stored,) if ("fresh-large" in skip and "warm" in skip) or args.size == stored else (stored, args.size)
        results: dict[str, dict[str, Any]] = {v: {} for v in versions}
        for version, code in versions.items():
            for size in sizes if not {"warm", "fresh"} <= skip else ():
                _, _, out = run(
                    [py, str(CHILD), "setup", str(work / version / f"home-{size}"), str(size), str(vectors)], code
                )
                results[version][f"setup_{size}"] = last_json(out)
            run([py, str(CHILD), "store", str(work / version / "home-reindex"), str(args.reindex)], code)
            print(f"{version}: stores ready", flush=True)
        for size in sizes if "warm" not in skip else ():  # warm, alternately
            for version, code in versions.items():
                _, _, out = run(
                    [py, str(CHILD), "warm", str(work / version / f"home-{size}"), str(work / "queries.json")], code
                )
                results[version][f"warm_{size}"] = last_json(out)
                print(version, size, results[version][f"warm_{size}"], flush=True)
        for size in [
            z for z in sizes if "fresh" not in skip and (z == stored or "fresh-large" not in skip)
        ]:  # alternately;
            # the first run of each is dropped (page cache, .pyc files)
            for i in range(args.fresh + 1):
                for version, code in versions.items():
                    wall, cpu, out = run(
                        [
                            py,
                            "-m",
                            "sherpa_skills",
                            "learn",
                            "replay",
                            queries[i % len(queries)],
                            "--json",
                            "--home",
                            str(work / version / f"home-{size}"),
                        ],
                        code,
                    )
                    payload = json.loads(out)
                    if i:
                        results[version].setdefault(f"fresh_{size}", []).append((wall, cpu, payload.get("status")))
            print("fresh", size, {v: results[v][f"fresh_{size}"] for v in versions}, flush=True)
        for version, code in versions.items() if "reindex" not in skip else ():  # real embedding, one after the other
            wall, cpu, out = run(
                [
                    py,
                    "-m",
                    "sherpa_skills",
                    "learn",
                    "reindex",
                    "--json",
                    "--home",
                    str(work / version / "home-reindex"),
                ],
                code,
            )
            got = json.loads(out[out.index("{") :])  # the baseline's `learn reindex --json` printed log lines first
            results[version]["reindex"] = {
                "per_second": got["reindexed"] / wall,
                "inner": got["per_second"],
                "wall": wall,
                "cpu": cpu,
                "n": got["reindexed"],
            }
            print(version, "reindex", results[version]["reindex"], flush=True)
    load_end = machine()

    def med(xs: list[float]) -> float:
        return statistics.median(xs)

    b, a = results["before"], results["after"]
    lines = [
        PART,
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. At start: {load_start}. At end: {load_end}.",
        f"Command: `SHERPA_SKILLS_MATCHING_DATA=../shared/matching {command}`; *before* is commit {args.baseline}, "
        "*after* this tree (a copy), run alternately in the same run.",
        f"Stores: the {stored} NL2Bash procedures of the table above, and {args.size:,} = those plus synthetic copies "
        '("variant k" of a command, "copy i" of its description; vectors: the original\'s plus fixed noise).',
        "",
        "| figure | before | after | ratio | target |",
        "|---|---:|---:|---:|---|",
    ]
    verdicts = []
    for size in [z for z in sizes if f"fresh_{z}" in a]:
        fb, fa = b[f"fresh_{size}"], a[f"fresh_{size}"]
        wb, wa = med([w for w, _, _ in fb]), med([w for w, _, _ in fa])
        cb, ca = med([c for _, c, _ in fb]), med([c for _, c, _ in fa])
        target = f"≤ {TARGET_FRESH_S:g} s" if size == stored else "—"
        lines.append(
            f"| fresh `learn replay QUERY --json`, {size:,} procedures: wall s (median of {len(fa)}) "
            f"| {wb:.2f} | {wa:.2f} | {wb / wa:.1f}× | {target} |"
        )
        lines.append(f"| the same, CPU s | {cb:.2f} | {ca:.2f} | {cb / ca:.1f}× | — |")
        if size == stored:
            verdicts.append(
                f"fresh process ≤ {TARGET_FRESH_S:g} s: {'met' if wa <= TARGET_FRESH_S else '**missed**'} "
                f"(wall {wa:.2f} s, CPU {ca:.2f} s)"
            )
    for size in [z for z in sizes if f"warm_{z}" in a]:
        pb, pa = b[f"warm_{size}"], a[f"warm_{size}"]
        target = f"≤ {TARGET_P50_MS:g} ms" if size == args.size else "—"
        lines.append(
            f"| warm `match` p50 ms, {size:,} procedures ({pa['n']} queries) | {pb['p50']:.1f} | {pa['p50']:.1f} "
            f"| {pb['p50'] / pa['p50']:.1f}× | {target} |"
        )
        lines.append(
            f"| warm `match` p95 ms, {size:,} procedures | {pb['p95']:.1f} | {pa['p95']:.1f} | "
            f"{pb['p95'] / pa['p95']:.1f}× | — |"
        )
        lines.append(
            f"| first `match` in a process, {size:,} procedures (s) | {pb['first_s']:.2f} | {pa['first_s']:.2f} "
            f"| {pb['first_s'] / pa['first_s']:.1f}× | — |"
        )
        if size == args.size:
            verdicts.append(
                f"warm p50 ≤ {TARGET_P50_MS:g} ms at {args.size:,}: "
                f"{'met' if pa['p50'] <= TARGET_P50_MS else '**missed**'} ({pa['p50']:.1f} ms)"
            )
    rb, ra = b.get("reindex"), a.get("reindex")
    if rb and ra:
        lines.append(
            f"| `learn reindex` of {ra['n']} procedures, procedures/s (wall, process start included) "
            f"| {rb['per_second']:.0f} "
            f"| {ra['per_second']:.0f} | {ra['per_second'] / rb['per_second']:.1f}× | ≥ {TARGET_REINDEX:g}/s |"
        )
        lines.append(
            "| the same, as `learn reindex --json` reports it (embedding and writing) "
            f"| {rb['inner']:.0f} | {ra['inner']:.0f} | {ra['inner'] / rb['inner']:.1f}× | — |"
        )
        verdicts.append(
            f"reindex ≥ {TARGET_REINDEX:g}/s: {'met' if ra['inner'] >= TARGET_REINDEX else '**missed**'} "
            f"({ra['inner']:.0f}/s)"
        )
    if args.random_vectors:
        lines += [
            "",
            "Stores' vectors were drawn at random (`--random-vectors`): timing only, "
            "the candidates are not meaningful.",
        ]
    else:
        lines += [
            "",
            f"MiniLM alone, in-process, on the {stored} stored texts (batches of 32, sorted by length): "
            f"{embed_rate:.0f} texts/s.",
        ]
    lines += ["", "Targets (after): " + "; ".join(verdicts) + "."]
    load = float(load_start.split("load average ")[1].split()[0]) if "load average " in load_start else 0.0
    if load >= 1.0:
        lines += [
            "",
            f"**Noisy run**: load average {load:.2f} on {os.cpu_count()} cores when timing started; wall times are "
            "inflated by other work, the ratios (both versions alternating under the same load) "
            "and the CPU rows much less.",
        ]
    body = "\n".join(lines) + "\n"
    print(body)
    if not args.no_write:
        write_part(body)
        print("wrote bench/RESULTS.md")
    return 0


def write_part(part: str) -> None:
    """Replace the `### Matching speed` part at the end of the matching section (or add it there)."""
    text = RESULTS.read_text(encoding="utf-8")
    heading = f"## {SECTION}"
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    end = len(text) if end < 0 else end + 1
    section = text[start:end]
    if PART in section:
        section = section[: section.index(PART)]
    section = section.rstrip("\n") + "\n\n" + part.rstrip("\n") + "\n\n"
    RESULTS.write_text(text[:start] + section + text[end:].lstrip("\n"), encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
