"""PostgreSQL: the durable tick. The peers' `durable` workload (shared bench_sherpa_skills.py: one store shared by all
episodes, each tick committed before the next) on our SQLite path, our PostgreSQL path and LangGraph's PostgresSaver,
against one local server this bench starts and stops: wall, client CPU, server CPU, WAL bytes per step.

    python bench/postgres_tick_bench.py --langgraph-python /tmp/lg/bin/python   # ~3 minutes; rewrites a RESULTS section
    python bench/postgres_tick_bench.py --before main --no-write --json          # also our PG path at `main`

Each repeat runs every variant once, in a fresh process, in a rotated order (the shared machine's noise hits all
alike); figures are medians over the repeats. The server is a throwaway cluster (tests/_postgres.py: initdb in a
temporary folder, 127.0.0.1 and a free port) with fsync on and synchronous_commit at its default (on), so both
PostgreSQL clients wait for the WAL flush of every commit. LangGraph is no dependency of this project: give a Python
that has langgraph and langgraph-checkpoint-postgres (`--langgraph-python`), else its row says it was skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(ROOT / "tests"))
from harness import arguments, machine, median, parse, skip, write_section  # noqa: E402  (after the sys.path lines above)

TITLE = "PostgreSQL: durable tick"
CHILD = HERE / "_postgres_tick_child.py"
SERVER_SETTINGS = {"fsync": "on", "shared_preload_libraries": "pg_stat_statements"}
NO_FLUSH_WAIT = "synchronous_commit=off"  # orientation rows: what a tick costs without waiting for the WAL flush
LANGGRAPH_PACKAGES = ("langgraph", "langgraph-checkpoint-postgres", "psycopg")
_VERSIONS = "import json, importlib.metadata as m; print(json.dumps({p: m.version(p) for p in %r}))"


def langgraph_versions(python: str) -> dict[str, str] | None:
    """The versions `python` has of LangGraph's packages, or None when one is missing."""
    done = subprocess.run(
        [python, "-c", _VERSIONS % (LANGGRAPH_PACKAGES,)], capture_output=True, text=True, check=False
    )
    return json.loads(done.stdout) if done.returncode == 0 else None


def run_child(python: str, tree: Path, variant: str, args: argparse.Namespace, where: dict[str, Any]) -> dict[str, Any]:
    argv = [python, str(CHILD), variant, "--episodes", str(args.episodes), "--cycles", str(args.cycles)]
    if variant != "sqlite":
        argv += ["--url", where["url"], "--probe-url", where["probe_url"], "--postmaster", str(where["postmaster"])]
    # Offline: litellm (imported by the library on some paths) must not fetch its cost map.
    env = {**os.environ, "PYTHONPATH": str(tree), "HOME": str(where["home"]), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{variant} on {tree} failed: {done.stderr.strip()[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def per_step(samples: list[dict[str, Any]], key: str, scale: float = 1e6) -> float:
    return median([s[key] / s["steps"] * scale for s in samples]) if samples and key in samples[0] else float("nan")


def summary(samples: list[dict[str, Any]]) -> dict[str, Any]:
    walls = [s["wall_s"] / s["steps"] * 1e6 for s in samples]
    out = {
        "wall_us_per_step": round(median(walls), 1),
        "wall_us_per_step_reps": [round(w, 1) for w in walls],
        "client_cpu_us_per_step": round(per_step(samples, "client_cpu_s"), 1),
    }
    if "server_cpu_s" in samples[0]:
        steps = samples[-1]["steps"]
        out.update(
            server_cpu_us_per_step=round(per_step(samples, "server_cpu_s"), 1),
            wal_bytes_per_step=round(per_step(samples, "wal_bytes", 1.0)),
            write_xacts_per_step=round(per_step(samples, "write_xacts", 1.0), 2),
            statements_per_step=round(sum(c for _, c in samples[-1]["statements"]) / steps, 2),
            statements=[(q, round(c / steps, 2)) for q, c in samples[-1]["statements"] if c / steps >= 0.05],
        )
    return out


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b == b and a == a and b > 0 else "—"  # NaN-safe: a skipped variant has no figure


def section(figures: dict[str, Any], meta: dict[str, Any]) -> str:
    rows = figures["variants"]
    cols = [
        ("wall µs/step (median)", "wall_us_per_step"),
        ("client CPU µs/step", "client_cpu_us_per_step"),
        ("server CPU µs/step", "server_cpu_us_per_step"),
        ("WAL bytes/step", "wal_bytes_per_step"),
        ("write xacts/step", "write_xacts_per_step"),
        ("statements/step", "statements_per_step"),
    ]
    lines = [
        f"- Date: {meta['date']}",
        f"- Machine: {machine()}",
        f"- Command: `{meta['command']}` ({meta['repeats']} repeats x {meta['episodes']} episodes x "
        f"{meta['steps_per_episode']} steps per variant, one warm-up episode each; variants interleaved)",
        "- Workload: the shared `bench_sherpa_skills.py --variant durable` cycle (rule policy, an `increment` per "
        "step), one store shared by all episodes, each tick committed before the next starts.",
        f"- Server: PostgreSQL {meta['server_version']}, a local throwaway cluster over TCP on 127.0.0.1 "
        "(tests/_postgres.py), fsync=on, synchronous_commit=on (default), wal_level=replica (default), "
        "pg_stat_statements loaded for every variant. Our PG path: `RunStore(database=URL)` (psycopg "
        f"{meta['psycopg']}, autocommit + BEGIN/COMMIT per tick). SQLite path: `RunStore(path=path)`, WAL, "
        "synchronous=NORMAL: it does not fsync per commit, so it is less durable than both PG rows (power loss).",
        f"- LangGraph: {meta['langgraph']}; a node per state (plan, act, check, idle), a conditional edge after check"
        " (retry once per cycle) and after idle (END at the last step), `n += 1` in every node, "
        '`PostgresSaver.from_conn_string(url)` + `setup()`, `invoke(..., durability="sync")`: each step\'s '
        "checkpoint is written before the next step.",
        "- Server CPU: utime+stime from /proc of the postmaster and every process it runs (backends, WAL writer, "
        "checkpointer…), before/after the timed episodes. WAL: `pg_current_wal_lsn()` difference. Write xacts: "
        "transaction ids taken. Statements: pg_stat_statements calls (the last repeat).",
        "",
        "| variant | " + " | ".join(c for c, _ in cols) + " |",
        "|---|" + "---:|" * len(cols),
    ]
    for name, row in rows.items():
        if "skipped" in row:
            lines.append(f"| {name} | skipped: {row['skipped']} |" + " |" * (len(cols) - 1))
            continue
        lines.append(f"| {name} | " + " | ".join(_cell(row.get(key)) for _, key in cols) + " |")
    ours, lite, peer = rows.get("ours, PostgreSQL", {}), rows.get("ours, SQLite", {}), rows.get("LangGraph, PostgreSQL")
    lines += ["", "| ratio | wall | client CPU | server CPU |", "|---|---:|---:|---:|"]
    keys = ("wall_us_per_step", "client_cpu_us_per_step", "server_cpu_us_per_step")
    if peer and "skipped" not in peer:
        lines.append("| ours-PG / LangGraph-PG | " + " | ".join(ratio(ours[k], peer[k]) for k in keys) + " |")
        ours_quick, peer_quick = (
            rows.get(f"{n}, {NO_FLUSH_WAIT}") for n in ("ours, PostgreSQL", "LangGraph, PostgreSQL")
        )
        if ours_quick and peer_quick:
            cells = " | ".join(ratio(ours_quick[k], peer_quick[k]) for k in keys)
            lines.append(f"| ours-PG / LangGraph-PG, both {NO_FLUSH_WAIT} | {cells} |")
    lines.append("| ours-PG / ours-SQLite | " + " | ".join(ratio(ours[k], lite.get(k, 0.0)) for k in keys) + " |")
    for name, row in rows.items():
        if ", before (" in name:
            now = rows["ours, PostgreSQL" + name.split(")", 1)[1]]  # the same settings, this tree
            lines.append(f"| this tree / {name} | " + " | ".join(ratio(now[k], row[k]) for k in keys) + " |")
    lines += ["", *where_time_goes(rows)]
    lines += ["", *ROUND_TRIPS]
    for name, row in rows.items():
        if row.get("statements") and name in ("ours, PostgreSQL", "LangGraph, PostgreSQL"):  # the others repeat these
            lines += ["", f"Statements per step, {name} (pg_stat_statements; it lists no BEGIN/COMMIT here):", ""]
            lines += [f"- {calls:g} × `{query}`" for query, calls in row["statements"]]
    return "\n".join(lines) + "\n"


ROUND_TRIPS = [
    "Round trips per step, from the code: ours sends a tick's BEGIN, its rows (trajectory, log, context), the UPDATE "
    "of `runs` and COMMIT in one psycopg pipeline, so it waits once per tick (six waits, one per statement, before "
    "the tick went into one pipeline). LangGraph writes each step in two autocommit pipelines, `put_writes` "
    "(the step's channel writes, ~2.5 rows) and `put` (the checkpoint): two waits and two transactions, so two WAL "
    "flushes per step where ours has one, and more than twice the WAL bytes (checkpoint JSON, channel versions). "
    "Client CPU is where the gap is widest: LangGraph serialises a checkpoint and runs its Pregel loop per step. "
    "Against SQLite the PostgreSQL path is an order of magnitude slower in wall time: most of it is the WAL flush "
    "(fsync) that SQLite at synchronous=NORMAL does not wait for, the rest a round trip and the server's work. "
    "Wall figures on this shared 2-core machine move with the other processes' load (see the load average); CPU "
    "figures less.",
]


def where_time_goes(rows: dict[str, Any]) -> list[str]:
    """Each durable PostgreSQL row split into the wait for the WAL flush (its wall less the same client's wall at
    synchronous_commit=off) and the rest (CPU on both sides, round trips)."""
    lines = []
    for name, row in rows.items():
        quick = rows.get(f"{name}, {NO_FLUSH_WAIT}")
        if not quick or "skipped" in row:
            continue
        flush = row["wall_us_per_step"] - quick["wall_us_per_step"]
        cpu = quick["client_cpu_us_per_step"] + quick["server_cpu_us_per_step"]
        lines.append(
            f"- {name}: {row['wall_us_per_step']:g} µs/step ≈ {flush:.0f} waiting for "
            f"{row['write_xacts_per_step']:g} WAL flush(es) per step + {quick['wall_us_per_step']:g} without that "
            f"wait ({NO_FLUSH_WAIT}), of which {cpu:.0f} µs CPU (client + server), the rest round trips and waits."
        )
    return lines


def _cell(value: Any) -> str:
    return "—" if value is None else f"{value:g}"


def main(argv: list[str] | None = None) -> int:
    parser = arguments(description=__doc__.split("\n\n")[0], quick="1 repeat of 1 episode of 2 cycles, no --before")
    parser.add_argument("--episodes", type=int, default=6, help="timed episodes per variant and repeat (default 6)")
    parser.add_argument("--repeats", type=int, default=5, help="repeats; figures are their medians (default 5)")
    parser.add_argument("--cycles", type=int, default=20, help="6-step cycles per episode (default 20: 120 steps)")
    parser.add_argument("--langgraph-python", default=sys.executable, help="a Python with LangGraph's packages")
    parser.add_argument("--before", metavar="REF", help="also our PostgreSQL path at this commit, in the same run")
    parser.add_argument(
        "--no-orientation", action="store_true", help=f"skip the PostgreSQL rows at {NO_FLUSH_WAIT} (not durable)"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON (only JSON on stdout)")
    args = parse(parser, argv)
    if args.quick:
        args.repeats, args.episodes, args.cycles, args.before = 1, 1, 2, None
    if min(args.episodes, args.repeats, args.cycles) < 1:
        parser.error("--episodes, --repeats and --cycles must be at least 1")
    try:
        import psycopg
    except ImportError:
        raise SystemExit("psycopg is not installed: pip install -e '.[postgres]'") from None
    from _postgres import NoServer, start_cluster  # tests/_postgres.py
    from tick_cost import export

    command = shlex.join(["python", "bench/postgres_tick_bench.py", *(argv if argv is not None else sys.argv[1:])])
    started = datetime.now(timezone.utc)
    lg_versions = langgraph_versions(args.langgraph_python)
    try:
        cluster = start_cluster(SERVER_SETTINGS)
    except NoServer as exc:
        skip(f"no PostgreSQL server can be started here: {exc}")
    samples: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="sherpa-pg-tick-") as tmp:
        try:
            with psycopg.connect(cluster.url(), autocommit=True) as conn:
                conn.execute("CREATE EXTENSION pg_stat_statements")
                server_version = str(conn.execute("SHOW server_version").fetchone()[0])  # type: ignore[index]
            postmaster = int((cluster.folder / "data" / "postmaster.pid").read_text().split()[0])
            plan: dict[str, tuple[str, Path, str]] = {
                "ours, SQLite": (sys.executable, ROOT, "sqlite"),
                "ours, PostgreSQL": (sys.executable, ROOT, "postgres"),
            }
            if args.before:
                (Path(tmp) / "before").mkdir()
                rev = export(args.before, Path(tmp) / "before")
                plan[f"ours, PostgreSQL, before ({rev})"] = (sys.executable, Path(tmp) / "before", "postgres")
            if lg_versions is not None:
                plan["LangGraph, PostgreSQL"] = (args.langgraph_python, ROOT, "langgraph")
            if not args.no_orientation:
                for name in [n for n in plan if ", PostgreSQL" in n]:
                    plan[f"{name}, {NO_FLUSH_WAIT}"] = plan[name]
            where = {name: {"url": cluster.url(cluster.create_database()), "probe_url": cluster.url(),
                            "postmaster": postmaster, "home": tmp} for name in plan}  # fmt: skip
            with psycopg.connect(cluster.url(), autocommit=True) as conn:
                for name in [n for n in plan if n.endswith(NO_FLUSH_WAIT)]:
                    database = where[name]["url"].rsplit("/", 1)[1]
                    conn.execute(f'ALTER DATABASE "{database}" SET synchronous_commit = off')
            names = list(plan)
            for repeat in range(args.repeats):
                for name in names[repeat % len(names) :] + names[: repeat % len(names)]:
                    python, tree, variant = plan[name]
                    samples.setdefault(name, []).append(run_child(python, tree, variant, args, where[name]))
                    if not args.json:
                        print(f"repeat {repeat + 1} {name}: {json.dumps(summary(samples[name][-1:]))}", flush=True)
        finally:
            cluster.stop()
    variants: dict[str, Any] = {name: summary(runs) for name, runs in samples.items()}
    if lg_versions is None:
        variants["LangGraph, PostgreSQL"] = {"skipped": "langgraph-checkpoint-postgres not installed"}
    figures = {"variants": variants, "langgraph_versions": lg_versions}
    meta = {
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "command": command,
        "repeats": args.repeats,
        "episodes": args.episodes,
        "steps_per_episode": args.cycles * 6,
        "server_version": server_version,
        "psycopg": psycopg.__version__,
        "langgraph": ", ".join(f"{p} {v}" for p, v in lg_versions.items()) if lg_versions else "not installed",
    }
    body = section(figures, meta)
    if args.json:
        print(json.dumps({**figures, **meta}))
    else:
        print(f"\n## {TITLE}\n\n{body}")
    if not args.no_write:
        write_section(TITLE, body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
