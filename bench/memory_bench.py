"""Shared memory: hybrid search latency over 100k artifacts (SQLite FTS5 truth + chromadb companion with MiniLM).

Builds a synthetic memory of N artifacts written by 20 agents (60 % shared, 40 % private notes; kinds and
metadata varied), bulk-loaded into the truth with one executemany (every text checked and redacted first),
then indexed by `SharedMemory.reindex()`: every artifact embedded with the int8 MiniLM on onnxruntime and
written to an embedded chromadb. Then times `SharedMemory.search` as a random agent, end to end (checks,
FTS5 BM25, query embedding, chromadb HNSW query, visibility re-check in SQLite, score combination),
in hybrid mode and in lexical-only mode, for queries that share words with their targets and for paraphrases.

Then, on the same store, times writes with every hygiene check (`SharedMemory.remember`: exact dedup, near-duplicate
query in the companion, tension rules over FTS5 candidates, indexing), for exact repeats, new facts with values
and new notes; written to a second section, "Shared memory hygiene".

    python bench/memory_bench.py            # 100k artifacts, 20-60 minutes on 2 busy cores; rewrites two sections
    python bench/memory_bench.py --quick    # 300 artifacts, 5 queries, hashing embedder; prints only
    python bench/memory_bench.py --embedder hashing --store ~/.cache/sherpa-memory-100k --baseline main
                                            # keeps the built store for the next run; times main's code and this
                                            # checkout on fresh copies of it, one after the other (before/after)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from time import perf_counter
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import arguments, parse, write_section_text  # noqa: E402  (after the sys.path line above)
from harness import machine as shared_machine  # noqa: E402

sys.path.insert(
    0, os.environ.get("SHERPA_BENCH_CODE") or str(HERE.parent)
)  # the code timed: this checkout, or a baseline
RESULTS = HERE / "RESULTS.md"
SECTION = "## Shared memory"
HYGIENE_SECTION = "## Shared memory hygiene"
SPREAD_DAYS = 60  # artifacts' ages are spread over this many days, so the decay tiers are all populated
MAX_LAG_S = 1.0  # sherpa_skills.memory._indexer.MAX_LAG, for the text (the baseline has no such module)

SERVICES = [
    "payments",
    "checkout",
    "search",
    "billing",
    "auth",
    "inventory",
    "shipping",
    "notifications",
    "reporting",
    "recommendations",
    "catalog",
    "gateway",
    "ledger",
    "analytics",
    "profile",
    "pricing",
]
COMPONENTS = [
    "database",
    "cache",
    "queue consumer",
    "web server",
    "load balancer",
    "cron job",
    "API client",
    "scheduler",
    "connection pool",
    "TLS certificate",
    "DNS record",
    "disk",
    "container",
    "feature flag",
    "migration",
    "index",
]
PROBLEMS = [
    "times out under load",
    "runs out of memory",
    "returns stale data",
    "leaks file descriptors",
    "fails after the deploy",
    "slows down every night",
    "drops messages",
    "rejects valid tokens",
    "crashes on startup",
    "fills the disk with logs",
    "retries forever",
    "deadlocks on writes",
]
CAUSES = [
    "a missing index",
    "an expired certificate",
    "a bad config value",
    "a race between two workers",
    "a too small pool size",
    "clock drift between hosts",
    "an unbounded retry loop",
    "a schema change",
    "a noisy neighbour",
    "a DNS change",
    "a leaked connection",
    "a cold cache",
]
FIXES = [
    "adding the index",
    "renewing the certificate",
    "rolling back the config",
    "adding a lock",
    "raising the pool size",
    "syncing clocks with chrony",
    "capping retries with backoff",
    "running the migration again",
    "moving to a dedicated host",
    "lowering the TTL",
    "closing connections in finally",
    "warming the cache first",
]
KINDS = ["note", "finding", "plan", "result", "review"]
AGENTS = [f"agent-{i:02d}" for i in range(20)]

# (query, what it should find): word queries share terms with the texts; paraphrases mostly do not.
WORD_QUERIES = [f"{s} {c} {p.split()[0]}" for s in SERVICES[:8] for c in COMPONENTS[:6] for p in PROBLEMS[:2]]
PARAPHRASES = [
    "the storage layer for card charges stops answering when traffic spikes",
    "memory exhaustion in the purchase flow",
    "cached results are out of date for product lookups",
    "login tokens refused although they are fine",
    "nightly slowness in the reports",
    "the message broker consumer loses events",
    "service dies as soon as it boots",
    "log files eat all the free space",
    "two workers write at the same time and lock each other",
    "the certificate ran out and https broke",
    "time is out of sync between machines",
    "endless retries hammer the upstream",
]


def artifact_text(rng: random.Random, i: int) -> tuple[str, str, str]:
    service, component = rng.choice(SERVICES), rng.choice(COMPONENTS)
    problem, cause, fix = rng.choice(PROBLEMS), rng.choice(CAUSES), rng.choice(FIXES)
    form = i % 4
    if form == 0:
        text = f"The {service} {component} {problem}; root cause was {cause}, fixed by {fix}."
    elif form == 1:
        text = f"Incident {i}: {service} {component} {problem}. Suspect {cause}. Next step: try {fix}."
    elif form == 2:
        text = f"Plan for {service}: the {component} {problem}, so we will investigate {cause} before {fix}."
    else:
        text = f"Review note on {service} ({component}): it {problem}; {fix} helped, {cause} is ruled out."
    return text, service, component


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def timed_searches(
    memory: Any, queries: list[str], rng: random.Random, mode: str, limit: int
) -> tuple[list[float], list[int], int]:
    times, sizes, degraded = [], [], 0
    for q in queries:
        agent = rng.choice(AGENTS)
        t0 = perf_counter()
        result = memory.search(q, agent=agent, limit=limit, mode=mode)
        times.append((perf_counter() - t0) * 1000)
        sizes.append(len(result.hits))
        degraded += result.degraded is not None
    return times, sizes, degraded


def build(home: Path, n: int, embedder_name: str) -> dict[str, Any]:
    """Fill `home` with the synthetic memory (truth, then the companion by `reindex`);
    what it took, kept in bench.json."""
    from seams import Companion, SharedMemory

    embedder = make_embedder(embedder_name)
    rng = random.Random(7)
    home.mkdir(parents=True, exist_ok=True)
    memory = SharedMemory(home, companion=Companion(home / "companion", embedder=embedder))
    print(f"preparing {n:,} artifacts (checks + redaction) ...", flush=True)
    t0 = perf_counter()
    prepared = []
    now = time.time()
    for i in range(n):
        text, service, component = artifact_text(rng, i)
        agent = AGENTS[i % len(AGENTS)]
        prepared.append(
            memory.store.prepare(
                text,
                agent=agent,
                scope="shared" if rng.random() < 0.6 else "private",
                kind=KINDS[i % len(KINDS)],
                tags=[service],
                metadata={"service": service, "component": component, "severity": rng.randint(1, 4)},
                run_id=f"run-{i // 50:05d}",
                created=now - (n - i) * SPREAD_DAYS * 86400 / n,
                abstraction="pattern" if i % 5 == 0 else "episode",
            )
        )
    samples = [(a.text, a.agent, a.scope, a.kind) for a in rng.sample(prepared, min(1000, len(prepared)))]
    prepare_s = perf_counter() - t0
    print(f"  {prepare_s:.1f} s; bulk insert ...", flush=True)
    t0 = perf_counter()
    memory.write_many(prepared, index=False)
    insert_s = perf_counter() - t0
    del prepared
    print(f"  {insert_s:.1f} s; embedding and indexing every artifact ({embedder.name}) ...", flush=True)
    t0 = perf_counter()
    report = memory.reindex()
    index_s = perf_counter() - t0
    stored = memory.store.count()  # texts repeated by the generator were merged as exact duplicates
    assert report["artifacts"] == stored and report["pending"] == 0
    memory.close()
    info = {
        "n": n,
        "embedder": embedder.name,
        "prepare_s": prepare_s,
        "insert_s": insert_s,
        "index_s": index_s,
        "stored": stored,
        "samples": samples,
        "built": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "load": os.getloadavg(),
    }
    (home / "bench.json").write_text(json.dumps(info), encoding="utf-8")
    return info


def make_embedder(name: str) -> Any:
    from seams import HashingEmbedder, MiniLMEmbedder

    return MiniLMEmbedder() if name in ("minilm", MiniLMEmbedder.name) else HashingEmbedder(384)


def measure(home: Path, per_set: int, limit: int, seed: int) -> dict[str, Any]:
    """Time searches, then writes, on the store in `home` (a copy:
    the writes change it), with the code importable here."""
    from seams import Companion, SharedMemory, configure

    import sherpa_skills

    configure(level="error")
    info = json.loads((home / "bench.json").read_text(encoding="utf-8"))
    embedder = make_embedder(info["embedder"])
    rng = random.Random(seed)
    load_start = os.getloadavg()
    memory = SharedMemory(home, companion=Companion(home / "companion", embedder=embedder))
    word_queries = [rng.choice(WORD_QUERIES) for _ in range(per_set)]
    paraphrases = [rng.choice(PARAPHRASES) for _ in range(per_set)]
    timed_searches(memory, word_queries[:5] + paraphrases[:5], rng, "hybrid", limit)  # warm-up
    timed_searches(memory, word_queries[:5], rng, "lexical", limit)

    # The pieces, for the reader: one query embedding, one chromadb query.
    embed_ms = []
    for q in paraphrases[:50]:
        t0 = perf_counter()
        embedder.embed([q])
        embed_ms.append((perf_counter() - t0) * 1000)
    chroma_ms, filtered_ms = [], []
    companion = memory.companion()
    wide = 4 * max(4 * limit, 50)
    for q in paraphrases[:50]:
        t0 = perf_counter()
        companion.query(memory.collection, q, n=wide)
        chroma_ms.append((perf_counter() - t0) * 1000)
    for q in paraphrases[:20]:
        t0 = perf_counter()
        companion.query(
            memory.collection, q, n=max(4 * limit, 50), where={"$or": [{"scope": "shared"}, {"agent": "agent-03"}]}
        )
        filtered_ms.append((perf_counter() - t0) * 1000)

    # Count the re-asks with the filter inside FTS5 / chromadb (the slow path), for the record.
    reasked = {"fts5": 0, "chromadb": 0}
    joined, query = memory.store._lexical_joined, companion.query

    def counted_joined(*a: Any, **k: Any) -> Any:
        reasked["fts5"] += 1
        return joined(*a, **k)

    def counted_query(*a: Any, **k: Any) -> Any:
        reasked["chromadb"] += k.get("where") is not None
        return query(*a, **k)

    memory.store._lexical_joined, companion.query = counted_joined, counted_query
    searches = []
    for label, mode, queries in [
        ("hybrid, word queries", "hybrid", word_queries),
        ("hybrid, paraphrases", "hybrid", paraphrases),
        ("lexical only, word queries", "lexical", word_queries),
        ("lexical only, paraphrases", "lexical", paraphrases),
    ]:
        print(f"  timing {label} ...", flush=True)
        times, sizes, degraded = timed_searches(memory, queries, rng, mode, limit)
        assert degraded == 0
        searches.append((label, times, sizes))
    memory.store._lexical_joined, companion.query = joined, query
    stats = memory.store.stats()
    print("  timing writes with hygiene checks ...", flush=True)
    writes = timed_writes(memory, [tuple(x) for x in info["samples"]], rng, per_set)
    t0 = perf_counter()
    memory.close()  # indexes what the writes left for the companion (if this code defers it)
    close_ms = (perf_counter() - t0) * 1000
    with SharedMemory(home, companion=Companion(home / "companion", embedder=embedder)) as again:
        after = again.store.stats()
        in_companion = again.companion().count(again.collection)
    assert after["pending"] == 0 and in_companion == after["artifacts"], "a write is missing from the companion"
    return {
        "code": str(Path(sherpa_skills.__file__).parent.parent),
        "searches": searches,
        "writes": writes,
        "embed_ms": embed_ms,
        "chroma_ms": chroma_ms,
        "filtered_ms": filtered_ms,
        "reasked": reasked,
        "tiers": stats["per_tier"],
        "after": after,
        "close_ms": close_ms,
        "load": [load_start, os.getloadavg()],
    }


def export_code(ref: str, where: Path) -> str:
    """The package as committed at `ref`, unpacked in `where`; returns the commit's short hash."""
    root = HERE.parent
    commit = subprocess.run(
        ["git", "rev-parse", "--short", ref], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()
    archive = subprocess.run(
        ["git", "archive", commit, "sherpa_skills"], cwd=root, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
    return commit


def measure_in_child(store: Path, code: Path | None, args: argparse.Namespace, seed: int) -> dict[str, Any]:
    """`measure` in a fresh interpreter on a fresh copy of the store,
    importing the package from `code` (default: here)."""
    with tempfile.TemporaryDirectory(prefix="sherpa-memory-bench-run-") as tmp:
        home = Path(tmp) / "home"
        shutil.copytree(store, home)
        out = Path(tmp) / "result.json"
        env = {**os.environ, "SHERPA_BENCH_CODE": str(code or HERE.parent)}
        subprocess.run(
            [
                sys.executable,
                str(Path(__file__).resolve()),
                "--measure",
                str(home),
                "--out",
                str(out),
                "--queries",
                str(args.queries_n),
                "--limit",
                str(args.limit),
                "--seed",
                str(seed),
            ],
            env=env,
            check=True,
        )
        return json.loads(out.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = arguments(description=__doc__.split("\n\n")[0], quick="300 artifacts, 5 queries, the hashing embedder")
    parser.add_argument(
        "--artifacts", type=int, default=None, help="how many artifacts (default 100000, 300 with --quick)"
    )
    parser.add_argument(
        "--queries", type=int, default=None, help="timed searches per mode and query set (default 200, 5 with --quick)"
    )
    parser.add_argument("--limit", type=int, default=10, help="hits asked per search")
    parser.add_argument(
        "--embedder",
        choices=("minilm", "hashing"),
        default="minilm",
        help="hashing (dim 384, MiniLM's) builds the companion in minutes where MiniLM takes an hour or more "
        "on a busy machine; the section says which was used",
    )
    parser.add_argument(
        "--store",
        type=Path,
        default=None,
        help="keep the built store in this folder and reuse it next time (building takes 15-60 minutes); "
        "every run times a fresh copy of it",
    )
    parser.add_argument(
        "--baseline",
        default=None,
        metavar="REF",
        help="also time the package as committed at this git ref, on another copy of the same store, in "
        "the same run (before/after)",
    )
    parser.add_argument("--seed", type=int, default=11, help=argparse.SUPPRESS)
    parser.add_argument("--measure", type=Path, default=None, help=argparse.SUPPRESS)  # internal: the child's side
    parser.add_argument("--out", type=Path, default=None, help=argparse.SUPPRESS)
    args = parse(parser, argv)
    n = args.artifacts or (300 if args.quick else 100_000)
    args.queries_n = per_set = args.queries or (5 if args.quick else 200)
    if args.quick:
        args.embedder = "hashing"
    if args.measure is not None:
        args.out.write_text(json.dumps(measure(args.measure, per_set, args.limit, args.seed)), encoding="utf-8")
        return 0
    command = shlex.join(["python", "bench/memory_bench.py", *(argv if argv is not None else sys.argv[1:])])
    wall0 = perf_counter()
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="sherpa-memory-bench-") as tmpdir:
        store = args.store.resolve() if args.store else Path(tmpdir) / "store"
        wanted = make_embedder(args.embedder).name
        info = (
            json.loads((store / "bench.json").read_text(encoding="utf-8")) if (store / "bench.json").is_file() else None
        )
        if info is not None and (info["n"], info["embedder"]) != (n, wanted):
            print(
                f"sherpa-skills bench: {store} holds {info['n']:,} artifacts indexed with "
                f"{info['embedder']}, not {n:,} with {wanted}; give another --store",
                file=sys.stderr,
            )
            return 2
        reused = info is not None
        if info is None:
            if store.exists() and any(store.iterdir()):
                print(
                    f"sherpa-skills bench: {store} is not empty and holds no bench.json; give an empty or new folder",
                    file=sys.stderr,
                )
                return 2
            info = build(store, n, args.embedder)
        db_mb = sum(p.stat().st_size for p in store.glob("store.db*")) / 1e6
        companion_mb = sum(p.stat().st_size for p in (store / "companion").rglob("*") if p.is_file()) / 1e6
        runs: list[tuple[str, dict[str, Any]]] = []
        if args.baseline:
            base = Path(tmpdir) / "baseline"
            base.mkdir()
            commit = export_code(args.baseline, base)
            print(f"timing the baseline ({args.baseline} = {commit}) ...", flush=True)
            runs.append((f"before ({args.baseline}, {commit})", measure_in_child(store, base, args, args.seed)))
        print("timing this checkout ...", flush=True)
        runs.append(
            (
                "after (this checkout)" if args.baseline else "this checkout",
                measure_in_child(store, None, args, args.seed),
            )
        )
    minilm_ms: list[float] = []
    if args.embedder == "hashing":
        minilm = make_embedder("minilm")
        minilm.embed(["warm up"])
        for q in PARAPHRASES * 5:
            t0 = perf_counter()
            minilm.embed([q])
            minilm_ms.append((perf_counter() - t0) * 1000)
    wall = perf_counter() - wall0
    load_end = os.getloadavg()
    label, result = runs[-1]
    section, hygiene_text = report(
        args, command, info, reused, db_mb, companion_mb, runs, minilm_ms, wall, load_start, load_end
    )
    print()
    print(section)
    print(hygiene_text)
    if not args.quick and not args.no_write:
        if args.embedder == "minilm":
            write_section_text(section)
        else:  # the MiniLM figures of "Shared memory" stay; this run's search table goes with the hygiene section
            hygiene_text = (
                hygiene_text.rstrip("\n")
                + '\n\nThis run\'s searches (see the first bullets of "Shared memory" for how they work):\n\n'
                + "\n".join(
                    line
                    for line in section.splitlines()
                    if line.startswith(("- Machine", "- Command", "- Companion", "|", "Inside", "- Truth"))
                    or line == ""
                )
                .replace("\n\n\n", "\n\n")
                .strip("\n")
                + "\n"
            )
        write_section_text(hygiene_text)
        print(f"wrote {RESULTS.relative_to(HERE.parent)}")
    return 0


def p50(values: list[float]) -> float:
    return percentile(values, 0.5)


def report(
    args: argparse.Namespace,
    command: str,
    info: dict[str, Any],
    reused: bool,
    db_mb: float,
    companion_mb: float,
    runs: list[tuple[str, dict[str, Any]]],
    minilm_ms: list[float],
    wall: float,
    load_start: tuple[float, ...],
    load_end: tuple[float, ...],
) -> tuple[str, str]:
    n, stored, limit, per_set = info["n"], info["stored"], args.limit, args.queries_n
    _, result = runs[-1]
    rows, write_rows, reasked = result["searches"], result["writes"], result["reasked"]
    embed_ms, chroma_ms, filtered_ms = result["embed_ms"], result["chroma_ms"], result["filtered_ms"]
    hybrid_all = rows[0][1] + rows[1][1]
    lexical_all = rows[2][1] + rows[3][1]
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    fmt = lambda load: "/".join(f"{x:.1f}" for x in load)  # noqa: E731
    minilm = args.embedder == "minilm"
    lines = [
        SECTION,
        "",
        f"- Date: {stamp}",
        f"- Machine: {shared_machine()}",
        f"- Command: `{command}` (whole run {wall / 60:.1f} min); load average (1/5/15 min) "
        f"{fmt(load_start)} at the start, {fmt(load_end)} at the end "
        + (
            f"(other work shared the {os.cpu_count()} cores: the figures are upper bounds for a quiet machine)"
            if max(load_start[0], load_end[0], load_end[1]) > 1.0
            else ""
        ),
        f"- Data: {n:,} synthetic artifacts (one-sentence incident notes, "
        "plans and reviews over 16 services × 16 components, "
        "~100 characters each) by 20 agents, 60 % shared and 40 % private, 5 kinds, metadata {service, "
        "component, severity}.",
        f"- Truth: checked and redacted in {info['prepare_s']:.1f} s, "
        "bulk-inserted with one `executemany` (FTS5 filled by its "
        f"triggers) in {info['insert_s']:.1f} s; store.db {db_mb:.0f} MB; "
        f"{n - stored:,} generated texts that repeated an earlier "
        f"one were merged as exact duplicates, {stored:,} artifacts stored"
        + (
            f" (built {info['built']} at load {fmt(info['load'])}, kept with `--store` and reused: "
            "each timing ran on a fresh copy)."
            if reused
            else "."
        ),
        (
            f"- Companion: every artifact embedded with MiniLM (`{info['embedder']}`, onnxruntime) "
            f"and written to an embedded chromadb by `SharedMemory.reindex()`: {info['index_s']:.0f} s "
            if minilm
            else "- Companion: every artifact embedded with the hashing embedder at MiniLM's 384 dimensions "
            "(`--embedder hashing`: "
            f"the HNSW index has MiniLM's size and shape, but every embedding costs microseconds instead of MiniLM's "
            f"{p50(minilm_ms):.1f} ms p50 measured in this run — add that once per search and once per new write) and "
            f"written to an embedded chromadb by `SharedMemory.reindex()`: {info['index_s']:.0f} s "
        )
        + f"({stored / info['index_s']:,.0f} artifacts/s, embedding included), {companion_mb:.0f} MB. "
        "Nothing was embedded any other way.",
        f"- Timed: `SharedMemory.search(query, agent=<random agent>, limit={limit})` end to end, "
        f"{per_set} searches per row after "
        f"warm-up. A hybrid search ranks the {4 * max(4 * limit, 50)} best FTS5 matches and the "
        f"{4 * max(4 * limit, 50)} nearest vectors without the visibility filter, keeps what the agent may see "
        f"({max(4 * limit, 50)} lexical candidates at most) "
        "and re-asks with the filter inside FTS5 / chromadb only when "
        "too few survive (each agent sees about 62 % of the artifacts; "
        f"in the {4 * per_set} timed searches FTS5 was re-asked "
        f"{reasked['fts5']} times, chromadb {reasked['chromadb']} times). "
        "Word queries share words with many artifacts (e.g. "
        f'"payments database times"); paraphrases share few (e.g. "{PARAPHRASES[0]}").',
        "",
        "| search | p50 ms | p95 ms | max ms | mean hits |",
        "|---|---:|---:|---:|---:|",
        f"| **hybrid, all queries** | **{p50(hybrid_all):.1f}** | **{percentile(hybrid_all, 0.95):.1f}** | "
        f"{max(hybrid_all):.1f} | — |",
    ]
    for label, times, sizes in rows:
        lines.append(
            f"| {label} | {p50(times):.1f} | {percentile(times, 0.95):.1f} | {max(times):.1f} | "
            f"{statistics.mean(sizes):.1f} |"
        )
    lines += [
        f"| **lexical only, all queries** | **{p50(lexical_all):.1f}** | **{percentile(lexical_all, 0.95):.1f}** | "
        f"{max(lexical_all):.1f} | — |",
        "",
        f"Inside a hybrid search: embedding the query p50 {p50(embed_ms):.1f} ms; the chromadb query "
        f"({4 * max(4 * limit, 50)} nearest, unfiltered, query embedding included) p50 {p50(chroma_ms):.1f} ms, p95 "
        f"{percentile(chroma_ms, 0.95):.1f} ms. For comparison, the same query with the visibility filter inside "
        f"chromadb (`$or` on scope/agent metadata, {max(4 * limit, 50)} nearest): p50 {p50(filtered_ms):.1f} ms "
        f"— why the filter is applied in SQLite afterwards.",
        "",
    ]
    all_writes = [t for _, times, _ in write_rows for t in times]
    tiers, after = result["tiers"], result["after"]
    hygiene = [
        HYGIENE_SECTION,
        "",
        f"- Date: {stamp}; "
        + (
            'machine, command and load as in "Shared memory" above (the same run'
            if minilm
            else "machine, command, load and this run's search figures at the end of this section ("
        )
        + f"the same {n:,}-artifact store; ages spread over {SPREAD_DAYS} days, "
        "every fifth artifact a `pattern`, the rest episodes).",
        f"- Tiers before the writes: {tiers['hot']:,} hot, {tiers['warm']:,} warm, {tiers['cold']:,} cold — "
        "so the search timings "
        "include the decay weighting (one extra SQLite lookup of the candidates' last access) "
        "and the `touch` of the hits (one UPDATE).",
        "- Timed: `SharedMemory.remember(text, agent=..., scope=..., abstraction=...)` end to end, "
        f"{per_set} writes per row, back "
        "to back: checks and redaction, exact dedup (an indexed hash lookup), "
        "the near-duplicate query (embedding + chromadb "
        "10 nearest + visibility in SQLite), the INSERT (FTS5 trigger, "
        "committed before the call returns), the tension rules "
        "over the 20 best FTS5 candidates of the same scope, and handing the artifact to the companion: "
        "since this change a "
        f"thread indexes it once writes pause (at most {MAX_LAG_S:.0f} s later, "
        "a burst in one chromadb upsert); before, the "
        f"write upserted it itself. After the writes the memory is closed (what is still held is indexed then: "
        f"{result['close_ms']:.0f} ms) and reopened: {after['pending']} pending, companion and truth agree.",
        "",
        "| write | p50 ms | p95 ms | max ms | outcome |",
        "|---|---:|---:|---:|---|",
        f"| **all writes** | **{p50(all_writes):.1f}** | **{percentile(all_writes, 0.95):.1f}** | "
        f"{max(all_writes):.1f} | — |",
    ]
    for label, times, outcome in write_rows:
        hygiene.append(f"| {label} | {p50(times):.1f} | {percentile(times, 0.95):.1f} | {max(times):.1f} | {outcome} |")
    hygiene += [
        "",
        f"After the writes: {after['artifacts']:,} artifacts, {after['duplicates_merged']:,} duplicate writes merged, "
        f"{after['open_tensions']:,} open tensions.",
        "",
    ]
    # The targets at 100k, judged on this run's figures; with the hashing embedder, MiniLM's measured embedding
    # is added once per new write (exact repeats embed nothing) and once per hybrid search.
    extra = p50(minilm_ms) if minilm_ms else 0.0
    new_writes = [t + extra for label, times, _ in write_rows if not label.startswith("exact") for t in times]
    repeats = [t for label, times, _ in write_rows if label.startswith("exact") for t in times]
    write_p50, search_p50 = p50(repeats + new_writes), p50(hybrid_all) + extra
    verdict = lambda value, target: "met" if value <= target else "**missed**"  # noqa: E731
    hygiene += [
        f"Targets (the issue's, at 100k artifacts; {n:,} here): write ≤ 30 ms p50 — {write_p50:.1f} ms"
        + (f" with MiniLM's {extra:.1f} ms embedding added to each new write" if extra else "")
        + f": {verdict(write_p50, 30)}; hybrid search ≤ 50 ms p50 — {search_p50:.1f} ms"
        + (" with MiniLM's embedding of the query added" if extra else "")
        + f": {verdict(search_p50, 50)}"
        + f" (load {fmt(load_start)} → {fmt(load_end)}"
        + ("; on a busy machine: a quiet one would be faster)." if max(load_start[0], load_end[0]) > 2.0 else ")."),
        "",
    ]
    if len(runs) > 1:
        hygiene += [
            f"Before and after, in this run: each version timed in its own process on its own fresh copy of the store, "
            f"same queries and writes (seed {args.seed}), one after the other (load at the start/end of each: "
            + "; ".join(f"{label} {fmt(r['load'][0])} → {fmt(r['load'][1])}" for label, r in runs)
            + ").",
            "",
            "| p50 ms (p95) | " + " | ".join(label for label, _ in runs) + " | ratio |",
            "|---|" + "---:|" * (len(runs) + 1),
        ]

        def cells(pick: Any) -> str:
            values = [pick(r) for _, r in runs]
            return (
                " | ".join(f"{p50(v):.1f} ({percentile(v, 0.95):.1f})" for v in values)
                + f" | {p50(values[0]) / p50(values[-1]):.2f}× |"
            )

        hygiene.append("| **all writes** | " + cells(lambda r: [t for _, ts, _ in r["writes"] for t in ts]))
        for i, (label, _, _) in enumerate(write_rows):
            hygiene.append(f"| {label} | " + cells(lambda r, i=i: r["writes"][i][1]))
        hygiene.append(
            "| **hybrid search, all queries** | " + cells(lambda r: r["searches"][0][1] + r["searches"][1][1])
        )
        hygiene.append("| lexical search, all queries | " + cells(lambda r: r["searches"][2][1] + r["searches"][3][1]))
        hygiene.append("")
    return "\n".join(lines), "\n".join(hygiene)


def timed_writes(
    memory: Any, samples: list[tuple[str, str, str, str]], rng: random.Random, per_row: int
) -> list[tuple[str, list[float], str]]:
    """Exact repeats of stored artifacts, new facts that restate a value (tension candidates), and new notes."""
    rows = []
    repeats, duplicates = [], 0
    for text, agent, scope, kind in rng.sample(samples, min(per_row, len(samples))):
        t0 = perf_counter()
        written = memory.remember(text, agent=agent, scope=scope, kind=kind)
        repeats.append((perf_counter() - t0) * 1000)
        duplicates += written.duplicate
    rows.append(("exact repeats of stored artifacts", repeats, f"{duplicates}/{len(repeats)} merged"))
    facts, tensions, near = [], 0, 0
    for _ in range(per_row):
        service, component = rng.choice(SERVICES), rng.choice(COMPONENTS)
        text = f"The {service} {component} pool size is {rng.randint(2, 400)}"
        t0 = perf_counter()
        written = memory.remember(text, agent=rng.choice(AGENTS), scope="shared", kind="note", abstraction="pattern")
        facts.append((perf_counter() - t0) * 1000)
        tensions += bool(written.tensions)
        near += bool(written.near)
    rows.append(
        ("new facts with a value (`pattern`)", facts, f"{tensions} raised a tension, {near} flagged near-duplicate")
    )
    notes, near = [], 0
    for i in range(per_row):
        text, _, _ = artifact_text(rng, 10_000_000 + i)
        t0 = perf_counter()
        written = memory.remember(
            text, agent=rng.choice(AGENTS), scope="shared" if i % 2 else "private", kind=KINDS[i % len(KINDS)]
        )
        notes.append((perf_counter() - t0) * 1000)
        near += bool(written.near)
    rows.append(("new notes (`episode`)", notes, f"{near} flagged near-duplicate"))
    return rows


if __name__ == "__main__":
    sys.exit(main())
