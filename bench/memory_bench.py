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

    python bench/memory_bench.py            # 100k artifacts, 20-40 minutes on 2 busy cores; rewrites two sections of bench/RESULTS.md
    python bench/memory_bench.py --quick    # 10k artifacts, fewer queries; prints, does not write RESULTS.md
"""

from __future__ import annotations

import argparse
import os
import random
import shlex
import statistics
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
from _results import machine as shared_machine, write_section_text  # noqa: E402

RESULTS = HERE / "RESULTS.md"
SECTION = "## Shared memory"
HYGIENE_SECTION = "## Shared memory hygiene"
SPREAD_DAYS = 60  # artifacts' ages are spread over this many days, so the decay tiers are all populated
sys.path.insert(0, str(HERE.parent))

SERVICES = ["payments", "checkout", "search", "billing", "auth", "inventory", "shipping", "notifications", "reporting",
            "recommendations", "catalog", "gateway", "ledger", "analytics", "profile", "pricing"]
COMPONENTS = ["database", "cache", "queue consumer", "web server", "load balancer", "cron job", "API client", "scheduler",
              "connection pool", "TLS certificate", "DNS record", "disk", "container", "feature flag", "migration", "index"]
PROBLEMS = ["times out under load", "runs out of memory", "returns stale data", "leaks file descriptors",
            "fails after the deploy", "slows down every night", "drops messages", "rejects valid tokens",
            "crashes on startup", "fills the disk with logs", "retries forever", "deadlocks on writes"]
CAUSES = ["a missing index", "an expired certificate", "a bad config value", "a race between two workers",
          "a too small pool size", "clock drift between hosts", "an unbounded retry loop", "a schema change",
          "a noisy neighbour", "a DNS change", "a leaked connection", "a cold cache"]
FIXES = ["adding the index", "renewing the certificate", "rolling back the config", "adding a lock",
         "raising the pool size", "syncing clocks with chrony", "capping retries with backoff", "running the migration again",
         "moving to a dedicated host", "lowering the TTL", "closing connections in finally", "warming the cache first"]
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


def timed_searches(memory: Any, queries: list[str], rng: random.Random, mode: str, limit: int) -> tuple[list[float], list[int], int]:
    times, sizes, degraded = [], [], 0
    for q in queries:
        agent = rng.choice(AGENTS)
        t0 = perf_counter()
        result = memory.search(q, agent=agent, limit=limit, mode=mode)
        times.append((perf_counter() - t0) * 1000)
        sizes.append(len(result.hits))
        degraded += result.degraded is not None
    return times, sizes, degraded


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10k artifacts and fewer queries; does not write RESULTS.md")
    parser.add_argument("--artifacts", type=int, default=None, help="how many artifacts (default 100000, 10000 with --quick)")
    parser.add_argument("--queries", type=int, default=None, help="timed searches per mode and query set (default 200, 40 with --quick)")
    parser.add_argument("--limit", type=int, default=10, help="hits asked per search")
    parser.add_argument("--no-write", action="store_true", help="print the section, do not touch bench/RESULTS.md")
    parser.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm",
                        help="hashing (dim 384, MiniLM's) builds the companion in minutes where MiniLM takes an hour or more "
                             "on a busy machine; the section says which was used")
    args = parser.parse_args(argv)
    n = args.artifacts or (10_000 if args.quick else 100_000)
    per_set = args.queries or (40 if args.quick else 200)
    command = shlex.join(["python", "bench/memory_bench.py", *(argv if argv is not None else sys.argv[1:])])
    wall0 = perf_counter()
    load_start = os.getloadavg()

    from sherpa_skills.semantic.companion import Companion
    from sherpa_skills.semantic.embeddings import MiniLMEmbedder
    from sherpa_skills.logs import configure
    from sherpa_skills.memory import SharedMemory

    configure(level="error")
    from sherpa_skills.semantic.embeddings import HashingEmbedder

    embedder = MiniLMEmbedder() if args.embedder == "minilm" else HashingEmbedder(384)
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="sherpa-memory-bench-") as tmpdir:
        home = Path(tmpdir)
        memory = SharedMemory(home, companion=Companion(home / "companion", embedder=embedder))

        print(f"preparing {n:,} artifacts (checks + redaction) ...", flush=True)
        t0 = perf_counter()
        prepared = []
        now = time.time()
        for i in range(n):
            text, service, component = artifact_text(rng, i)
            agent = AGENTS[i % len(AGENTS)]
            prepared.append(memory.store.prepare(
                text, agent=agent, scope="shared" if rng.random() < 0.6 else "private", kind=KINDS[i % len(KINDS)],
                tags=[service], metadata={"service": service, "component": component, "severity": rng.randint(1, 4)},
                run_id=f"run-{i // 50:05d}", created=now - (n - i) * SPREAD_DAYS * 86400 / n,
                abstraction="pattern" if i % 5 == 0 else "episode"))
        samples = [(a.text, a.agent, a.scope, a.kind) for a in rng.sample(prepared, 1000)]
        prepare_s = perf_counter() - t0
        print(f"  {prepare_s:.1f} s; bulk insert ...", flush=True)
        t0 = perf_counter()
        memory.write_many(prepared, index=False)
        insert_s = perf_counter() - t0
        del prepared
        db_mb = sum(p.stat().st_size for p in home.glob("store.db*")) / 1e6
        print(f"  {insert_s:.1f} s ({db_mb:.0f} MB); embedding and indexing every artifact ({embedder.name}) ...", flush=True)

        t0 = perf_counter()
        report = memory.reindex()
        index_s = perf_counter() - t0
        companion_mb = sum(p.stat().st_size for p in (home / "companion").rglob("*") if p.is_file()) / 1e6
        print(f"  {index_s:.1f} s for {report['artifacts']:,} ({companion_mb:.0f} MB)", flush=True)
        stored = memory.store.count()  # texts repeated by the generator were merged as exact duplicates
        assert report["artifacts"] == stored and report["pending"] == 0

        word_queries = [rng.choice(WORD_QUERIES) for _ in range(per_set)]
        paraphrases = [rng.choice(PARAPHRASES) for _ in range(per_set)]
        timed_searches(memory, word_queries[:5] + paraphrases[:5], rng, "hybrid", args.limit)  # warm-up
        timed_searches(memory, word_queries[:5], rng, "lexical", args.limit)

        # The pieces, for the reader: one query embedding, one chromadb query.
        embed_ms = []
        for q in paraphrases[:50]:
            t0 = perf_counter()
            embedder.embed([q])
            embed_ms.append((perf_counter() - t0) * 1000)
        chroma_ms, filtered_ms = [], []
        companion = memory.companion()
        wide = 4 * max(4 * args.limit, 50)
        for q in paraphrases[:50]:
            t0 = perf_counter()
            companion.query(memory.collection, q, n=wide)
            chroma_ms.append((perf_counter() - t0) * 1000)
        for q in paraphrases[:20]:
            t0 = perf_counter()
            companion.query(memory.collection, q, n=max(4 * args.limit, 50),
                            where={"$or": [{"scope": "shared"}, {"agent": "agent-03"}]})
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
        rows = []
        for label, mode, queries in [("hybrid, word queries", "hybrid", word_queries), ("hybrid, paraphrases", "hybrid", paraphrases),
                                     ("lexical only, word queries", "lexical", word_queries),
                                     ("lexical only, paraphrases", "lexical", paraphrases)]:
            print(f"timing {label} ...", flush=True)
            times, sizes, degraded = timed_searches(memory, queries, rng, mode, args.limit)
            assert degraded == 0
            rows.append((label, times, sizes))
        hybrid_all = rows[0][1] + rows[1][1]
        lexical_all = rows[2][1] + rows[3][1]
        memory.store._lexical_joined, companion.query = joined, query
        stats = memory.store.stats()

        print("timing writes with hygiene checks ...", flush=True)
        write_rows = timed_writes(memory, samples, rng, per_set)
        after = memory.store.stats()
        memory.close()
    minilm_ms: list[float] = []
    if args.embedder == "hashing":
        minilm = MiniLMEmbedder()
        minilm.embed(["warm up"])
        for q in paraphrases[:50]:
            t0 = perf_counter()
            minilm.embed([q])
            minilm_ms.append((perf_counter() - t0) * 1000)
    wall = perf_counter() - wall0
    load_end = os.getloadavg()

    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        SECTION, "",
        f"- Date: {stamp}",
        f"- Machine: {shared_machine()}",
        f"- Command: `{command}` (whole run {wall / 60:.1f} min); load average (1/5/15 min) "
        f"{'/'.join(f'{x:.1f}' for x in load_start)} at the start, {'/'.join(f'{x:.1f}' for x in load_end)} at the end "
        + (f"(other work shared the {os.cpu_count()} cores: the figures are upper bounds for a quiet machine)"
           if max(load_start[0], load_end[0], load_end[1]) > 1.0 else ""),
        f"- Data: {n:,} synthetic artifacts (one-sentence incident notes, plans and reviews over 16 services × 16 components, "
        f"~100 characters each) by 20 agents, 60 % shared and 40 % private, 5 kinds, metadata {{service, component, severity}}.",
        f"- Truth: checked and redacted in {prepare_s:.1f} s, bulk-inserted with one `executemany` (FTS5 filled by its triggers) "
        f"in {insert_s:.1f} s; store.db {db_mb:.0f} MB; {n - stored:,} generated texts that repeated an earlier one were "
        f"merged as exact duplicates, {stored:,} artifacts stored.",
        (f"- Companion: every artifact embedded with MiniLM (`{embedder.name}`, onnxruntime, {embedder.threads} threads, batches of "
         f"{embedder.batch_size}) and written to an embedded chromadb by `SharedMemory.reindex()`: {index_s:.0f} s "
         if args.embedder == "minilm" else
         f"- Companion: every artifact embedded with the hashing embedder at MiniLM's 384 dimensions (`--embedder hashing`: "
         f"the HNSW index has MiniLM's size and shape, but every embedding costs microseconds instead of MiniLM's "
         f"{percentile(minilm_ms, 0.5):.1f} ms p50 measured in this run — add that once per search and once per write) and "
         f"written to an embedded chromadb by `SharedMemory.reindex()`: {index_s:.0f} s ")
        + f"({n / index_s:,.0f} artifacts/s, embedding included), {companion_mb:.0f} MB. Nothing was embedded any other way.",
        f"- Timed: `SharedMemory.search(query, agent=<random agent>, limit={args.limit})` end to end, {per_set} searches per row after "
        f"warm-up. A hybrid search ranks the {4 * max(4 * args.limit, 50)} best FTS5 matches and the "
        f"{4 * max(4 * args.limit, 50)} nearest vectors without the visibility filter, keeps what the agent may see "
        f"({max(4 * args.limit, 50)} lexical candidates at most) and re-asks with the filter inside FTS5 / chromadb only when "
        f"too few survive (each agent sees about 62 % of the artifacts; in the {4 * per_set} timed searches FTS5 was re-asked "
        f"{reasked['fts5']} times, chromadb {reasked['chromadb']} times). Word queries share words with many artifacts (e.g. \"payments database times\"); paraphrases share few "
        f"(e.g. \"{PARAPHRASES[0]}\").",
        "",
        "| search | p50 ms | p95 ms | max ms | mean hits |",
        "|---|---:|---:|---:|---:|",
        f"| **hybrid, all queries** | **{percentile(hybrid_all, 0.5):.1f}** | **{percentile(hybrid_all, 0.95):.1f}** | "
        f"{max(hybrid_all):.1f} | — |",
    ]
    for label, times, sizes in rows:
        lines.append(f"| {label} | {percentile(times, 0.5):.1f} | {percentile(times, 0.95):.1f} | {max(times):.1f} | "
                     f"{statistics.mean(sizes):.1f} |")
    lines += [
        f"| **lexical only, all queries** | **{percentile(lexical_all, 0.5):.1f}** | **{percentile(lexical_all, 0.95):.1f}** | "
        f"{max(lexical_all):.1f} | — |",
        "",
        f"Inside a hybrid search: embedding the query p50 {percentile(embed_ms, 0.5):.1f} ms; the chromadb query "
        f"({wide} nearest, unfiltered, query embedding included) p50 {percentile(chroma_ms, 0.5):.1f} ms, p95 "
        f"{percentile(chroma_ms, 0.95):.1f} ms. For comparison, the same query with the visibility filter inside "
        f"chromadb (`$or` on scope/agent metadata, {max(4 * args.limit, 50)} nearest): p50 {percentile(filtered_ms, 0.5):.1f} ms "
        f"— why the filter is applied in SQLite afterwards.",
        "",
    ]
    section = "\n".join(lines)
    all_writes = [t for _, times, _ in write_rows for t in times]
    hygiene = [
        HYGIENE_SECTION, "",
        f"- Date: {stamp}; " + ("machine, command and load as in \"Shared memory\" above (the same run" if args.embedder == "minilm"
                                 else "machine, command, load and this run's search figures at the end of this section (") +
        f"the same {n:,}-artifact store; "
        f"ages spread over {SPREAD_DAYS} days, every fifth artifact a `pattern`, the rest episodes).",
        f"- Tiers before the writes: {stats['per_tier']['hot']:,} hot, {stats['per_tier']['warm']:,} warm, "
        f"{stats['per_tier']['cold']:,} cold — so the search timings of this run include the decay weighting (one extra SQLite "
        f"lookup of the candidates' last access) and the `touch` of the hits (one UPDATE).",
        f"- Timed: `SharedMemory.remember(text, agent=..., scope=..., abstraction=...)` end to end, {per_set} writes per row: "
        f"checks and redaction, exact dedup (an indexed hash lookup), the near-duplicate query (embedding + chromadb "
        f"10 nearest + visibility in SQLite), the INSERT (FTS5 trigger), the tension rules over the 20 best FTS5 "
        f"candidates of the same scope, and indexing in the companion (the query's embedding reused).",
        "",
        "| write | p50 ms | p95 ms | max ms | outcome |",
        "|---|---:|---:|---:|---|",
        f"| **all writes** | **{percentile(all_writes, 0.5):.1f}** | **{percentile(all_writes, 0.95):.1f}** | {max(all_writes):.1f} | — |",
    ]
    for label, times, outcome in write_rows:
        hygiene.append(f"| {label} | {percentile(times, 0.5):.1f} | {percentile(times, 0.95):.1f} | {max(times):.1f} | {outcome} |")
    new_writes = [t for label, times, _ in write_rows if not label.startswith("exact") for t in times]
    checks = sorted(t - i for t, i in zip(new_writes, INDEX_MS))
    hygiene += ["", f"Of a new write (not an exact repeat): the companion upsert (chromadb `upsert` of one item, embedded, "
                    f"persisted) p50 {percentile(INDEX_MS, 0.5):.1f} ms, p95 {percentile(INDEX_MS, 0.95):.1f} ms; everything "
                    f"else — checks, redaction, dedup, near-duplicate query, INSERT, tension rules — p50 "
                    f"{percentile(checks, 0.5):.1f} ms, p95 {percentile(checks, 0.95):.1f} ms.",
                "", f"After the writes: {after['artifacts']:,} artifacts, {after['duplicates_merged']:,} duplicate writes merged, "
                    f"{after['open_tensions']:,} open tensions.", ""]
    hygiene_text = "\n".join(hygiene)
    print()
    print(section)
    print(hygiene_text)
    if not args.quick and not args.no_write:
        if args.embedder == "minilm":
            write_section_text(section)
        else:  # the MiniLM figures of "Shared memory" stay; this run's search table goes with the hygiene section
            hygiene_text = hygiene_text.rstrip("\n") + "\n\nThis run's searches (see the first bullets of \"Shared memory\" for how they work):\n" + \
                "\n".join(line for line in lines if line.startswith(("- Machine", "- Command", "- Companion", "|", "Inside", "- Truth"))
                          or line == "").replace("\n\n\n", "\n\n")
        write_section_text(hygiene_text)
        print(f"wrote {RESULTS.relative_to(HERE.parent)}")
    return 0


def timed_writes(memory: Any, samples: list[tuple[str, str, str, str]], rng: random.Random,
                 per_row: int) -> list[tuple[str, list[float], str]]:
    """Exact repeats of stored artifacts, new facts that restate a value (tension candidates), and new notes.
    The companion upsert inside each write is timed on its own too (`INDEX_MS`), to tell the checks from indexing."""
    index = memory._index

    def timed_index(*a: Any, **k: Any) -> Any:
        t0 = perf_counter()
        try:
            return index(*a, **k)
        finally:
            INDEX_MS.append((perf_counter() - t0) * 1000)

    memory._index = timed_index
    rows = []
    repeats, duplicates = [], 0
    for text, agent, scope, kind in rng.sample(samples, min(per_row, len(samples))):
        t0 = perf_counter()
        written = memory.remember(text, agent=agent, scope=scope, kind=kind)
        repeats.append((perf_counter() - t0) * 1000)
        duplicates += written.duplicate
    rows.append(("exact repeats of stored artifacts", repeats, f"{duplicates}/{len(repeats)} merged"))
    facts, tensions, near = [], 0, 0
    for i in range(per_row):
        service, component = rng.choice(SERVICES), rng.choice(COMPONENTS)
        text = f"The {service} {component} pool size is {rng.randint(2, 400)}"
        t0 = perf_counter()
        written = memory.remember(text, agent=rng.choice(AGENTS), scope="shared", kind="note", abstraction="pattern")
        facts.append((perf_counter() - t0) * 1000)
        tensions += bool(written.tensions)
        near += bool(written.near)
    rows.append(("new facts with a value (`pattern`)", facts, f"{tensions} raised a tension, {near} flagged near-duplicate"))
    notes, near = [], 0
    for i in range(per_row):
        text, _, _ = artifact_text(rng, 10_000_000 + i)
        t0 = perf_counter()
        written = memory.remember(text, agent=rng.choice(AGENTS), scope="shared" if i % 2 else "private", kind=KINDS[i % len(KINDS)])
        notes.append((perf_counter() - t0) * 1000)
        near += bool(written.near)
    rows.append(("new notes (`episode`)", notes, f"{near} flagged near-duplicate"))
    memory._index = index
    return rows


INDEX_MS: list[float] = []


if __name__ == "__main__":
    sys.exit(main())
