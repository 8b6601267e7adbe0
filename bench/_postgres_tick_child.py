"""One measured run of postgres_tick_bench.py: the peers' durable workload on one variant, in a process of its own.

    python bench/_postgres_tick_child.py VARIANT --episodes N --cycles C [--url URL --probe-url URL --postmaster PID]

Prints one JSON line: wall and CPU seconds of the timed episodes, and, on PostgreSQL, the server's CPU seconds (every
process of the cluster, from /proc), WAL bytes, write transactions and statements (pg_stat_statements) over them.
Stdlib only at the top: the langgraph variant runs in a venv that has LangGraph and not necessarily this project.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

STEPS_PER_CYCLE = 6  # start, execute, verify, retry, verify, finish

# The shared bench_sherpa_skills.py workflow, rule policy: its `durable` variant with the store chosen here.
WORKFLOW = """\
name: peer_cycle
description: the peers' 6-step plan/act/check cycle
context: {n: 0, retries: 0}
initial: idle
max_steps: %(max_steps)d
states:
  idle: {}
  work:
    initial: plan
    states:
      plan: {}
      act: {}
      check: {}
  done: {final: true}
transitions:
  - {trigger: start, source: idle, dest: work, after: [{increment: {key: n}}]}
  - {trigger: execute, source: work/plan, dest: work/act, after: [{increment: {key: n}}]}
  - {trigger: verify, source: work/act, dest: work/check, after: [{increment: {key: n}}]}
  - trigger: retry
    source: work/check
    dest: work/act
    conditions: [{context_lt: {key: retries, value: 1}}]
    before: [{increment: {key: retries}}]
    after: [{increment: {key: n}}]
  - trigger: finish
    source: work/check
    dest: done
    conditions: [{context_gt: {key: n, value: %(last)d}}]
    after: [{increment: {key: n}}]
  - trigger: finish
    source: work/check
    dest: idle
    after: [{increment: {key: n}}, {set: {retries: 0}}]
policy:
  type: rule
  rules:
    - {state: work/check, trigger: retry}
    - {state: work/check, trigger: finish}
"""


def ours(variant: str, url: str | None, steps: int, tmp: Path) -> tuple[Callable[[], None], Callable[[], None]]:
    """An episode on a store shared by all episodes (SQLite in `tmp`, or the PostgreSQL database `url`); its closer."""
    import sherpa_skills as sk

    workflow = sk.load_workflow_text(WORKFLOW % {"max_steps": steps + 10, "last": steps - 4}, name="peer_cycle.yaml")
    store = sk.RunStore(path=tmp / "store.db") if variant == "sqlite" else sk.RunStore(database=url, home=tmp)

    def episode() -> None:
        agent = workflow.agent(store=store)
        result = agent.run()
        assert result.status == "final" and result.state == "done", (result.status, result.state, result.error)
        assert result.counters["steps"] == steps, result.counters
        rows = store.conn.execute("SELECT count(*) FROM run_trajectory WHERE run_id = ?", (agent.run_id,)).fetchone()
        assert rows[0] == steps + 1, rows  # every tick was committed: the start entry and one row per step

    return episode, store.close


def langgraph(url: str, steps: int) -> tuple[Callable[[], None], Callable[[], None]]:
    """The same cycle as a LangGraph graph: a node per state, each run of a node is one step and increments n; check's
    conditional edge retries once per cycle; PostgresSaver checkpoints every step before the next (durability=sync)."""
    import uuid

    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.graph import END, START, StateGraph

    def after_idle(state: Cycle) -> str:
        return END if state["n"] >= steps else "plan"

    graph = StateGraph(Cycle)
    for name, node in (("plan", step), ("act", step), ("check", check), ("idle", idle)):
        graph.add_node(name, node)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "act")
    graph.add_edge("act", "check")
    graph.add_conditional_edges("check", after_check, ["act", "idle"])
    graph.add_conditional_edges("idle", after_idle, ["plan", END])
    saver_context = PostgresSaver.from_conn_string(url)
    saver = saver_context.__enter__()
    saver.setup()
    app = graph.compile(checkpointer=saver)

    def episode() -> None:
        config = {"configurable": {"thread_id": uuid.uuid4().hex}, "recursion_limit": steps + 10}
        out = app.invoke({"n": 0, "retries": 0}, config, durability="sync")  # type: ignore[call-overload]
        assert out["n"] == steps, out
        saved = saver.get_tuple(config)  # type: ignore[arg-type]
        assert saved is not None and saved.checkpoint["channel_values"]["n"] == steps

    return episode, lambda: saver_context.__exit__(None, None, None)


class Cycle(TypedDict):
    """LangGraph's state (module level: LangGraph reads the nodes' type hints, which must resolve here)."""

    n: int
    retries: int


def step(state: Cycle) -> dict[str, int]:
    return {"n": state["n"] + 1}


def check(state: Cycle) -> dict[str, int]:
    return {"n": state["n"] + 1, "retries": state["retries"] + 1 if state["retries"] < 1 else state["retries"]}


def idle(state: Cycle) -> dict[str, int]:
    return {"n": state["n"] + 1, "retries": 0}


def after_check(state: Cycle) -> str:
    """Back to act at the cycle's first check (the retry), else on to idle (the finish)."""
    return "act" if state["retries"] == 1 and state["n"] % STEPS_PER_CYCLE == 3 else "idle"


def _server_cpu_s(postmaster: int) -> float:
    """CPU seconds of the postmaster, of every process it runs now, and of those it already reaped (cutime, cstime)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        pid, ppid = int(entry.name), int(fields[1])
        if pid == postmaster:
            total += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
        elif ppid == postmaster:
            total += int(fields[11]) + int(fields[12])
    return total / tick


def _lsn(text: str) -> int:
    high, low = text.split("/")
    return (int(high, 16) << 32) + int(low, 16)


class Server:
    """What the cluster did between two snapshots, read through a connection of its own to the `postgres` database."""

    def __init__(self, probe_url: str, database: str, postmaster: int):
        import psycopg

        self.conn = psycopg.connect(probe_url, autocommit=True)
        self.database, self.postmaster = database, postmaster

    def snapshot(self) -> dict[str, float]:
        # pg_snapshot_xmax: the next transaction id, read without taking one (write transactions take one each).
        lsn, xid = self.conn.execute(
            "SELECT pg_current_wal_lsn()::text, pg_snapshot_xmax(pg_current_snapshot())::text::bigint"
        ).fetchone()  # type: ignore[misc]
        return {"cpu": _server_cpu_s(self.postmaster), "wal": _lsn(lsn), "xid": xid}

    def reset_statements(self) -> None:
        self.conn.execute("SELECT pg_stat_statements_reset()")

    def statements(self) -> list[tuple[str, int]]:
        rows = self.conn.execute(
            "SELECT query, calls FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid "
            "WHERE d.datname = %s ORDER BY calls DESC",
            (self.database,),
        ).fetchall()
        return [(" ".join(q.split())[:90], int(c)) for q, c in rows]


def measure(episode: Callable[[], None], episodes: int, server: Server | None) -> dict[str, Any]:
    episode()  # warm-up: connections, prepared paths, the store's first run
    if server is not None:
        server.reset_statements()
        before = server.snapshot()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for _ in range(episodes):
        episode()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    out: dict[str, Any] = {"wall_s": wall, "client_cpu_s": cpu}
    if server is not None:
        after = server.snapshot()
        out.update(
            server_cpu_s=after["cpu"] - before["cpu"],
            wal_bytes=after["wal"] - before["wal"],
            write_xacts=after["xid"] - before["xid"],
            statements=server.statements(),
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("variant", choices=["sqlite", "postgres", "langgraph"])
    parser.add_argument("--episodes", type=int, required=True)
    parser.add_argument("--cycles", type=int, required=True)
    parser.add_argument("--url", help="the variant's database (PostgreSQL variants)")
    parser.add_argument("--probe-url", help="the cluster's `postgres` database, where pg_stat_statements is")
    parser.add_argument("--postmaster", type=int, help="the cluster's postmaster pid")
    args = parser.parse_args()
    steps = args.cycles * STEPS_PER_CYCLE
    with tempfile.TemporaryDirectory(prefix="sherpa-pg-tick-") as tmp:
        if args.variant == "langgraph":
            episode, close = langgraph(args.url, steps)
        else:
            episode, close = ours(args.variant, args.url, steps, Path(tmp))
        server = None
        if args.variant != "sqlite":
            from psycopg.conninfo import conninfo_to_dict

            server = Server(args.probe_url, str(conninfo_to_dict(args.url)["dbname"]), args.postmaster)
        try:
            out = measure(episode, args.episodes, server)
        finally:
            close()
    out["steps"] = args.episodes * steps
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
