"""Events delivered per second between two agents playing ping-pong: in-process, and over Redis Streams on loopback.

Each delivery is a whole round trip through the engine: the event fires the receiver's `ball` transition (payload
validated as its arguments, the event written to its context), an `increment` and an `emit` action run, the tick is
committed (durable: with the consumed event id and the emitted event, in one SQLite transaction), and the emitted
event is published to the other player's topic (and, over Redis, the consumed entry acknowledged).

    python bench/events_bench.py            # about a minute; rewrites the `## Events` section of bench/RESULTS.md
    python bench/events_bench.py --quick    # fewer repeats, smaller runs
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from time import perf_counter

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import arguments, parse, skip, write_section_text  # noqa: E402  (after the sys.path line above)
from harness import machine as shared_machine  # noqa: E402

RESULTS = HERE / "RESULTS.md"
SECTION = "## Events"

PLAYER = """
name: player
context: {hits: 0, other: nobody}
initial: ready
max_steps: 1000000
states:
  ready: {waiting: true}
  done: {final: true}
transitions:
  - trigger: ball
    source: ready
    dest: ready
    arguments: {n: {type: integer}}
    conditions: {context_lt: {key: hits, value: LIMIT}}
    after:
      - increment: {key: hits}
      - emit: {name: ball, topic: "{{ other }}", payload: {n: "{{ args.n + 1 }}"}}
  - trigger: ball
    source: ready
    dest: done
    unless: {context_lt: {key: hits, value: LIMIT}}
"""

TEAM = """
name: ping-pong
agents:
  left: {workflow: player.yaml, subscribe: [to_left], context: {other: to_right}}
  right: {workflow: player.yaml, subscribe: [to_right], context: {other: to_left}}
initial_event: {name: ball, topic: to_left, payload: {n: 0}, correlation_id: rally}
max_events: 10000000
"""


def write_team(folder: Path, limit: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "player.yaml").write_text(PLAYER.replace("LIMIT", str(limit)))
    (folder / "team.yaml").write_text(TEAM)
    return folder / "team.yaml"


def deliveries(limit: int) -> int:
    return 2 * limit + 1  # left hits `limit` times, right `limit` times, then left ends the rally


# ---------------------------------------------------------------- in-process


def in_process(limit: int, durable: bool) -> float:
    """Events per second for one rally through TeamRunner (load excluded, start and every commit included)."""
    from sherpa_skills import RunStore, TeamRunner, load_team

    with tempfile.TemporaryDirectory() as tmp:
        team = load_team(write_team(Path(tmp), limit))
        store = RunStore(home=Path(tmp) / "home") if durable else None
        runner = TeamRunner(team, store=store)
        t0 = perf_counter()
        result = runner.run()
        elapsed = perf_counter() - t0
        if store is not None:
            store.close()
    assert result.status == "done" and result.counters["handled"] == deliveries(limit), result.counters
    return deliveries(limit) / elapsed


# ---------------------------------------------------------------- Redis Streams


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    import redis

    binary = shutil.which("redis-server")
    if binary is None:
        skip("redis-server is not installed (apt-get install -y redis-server)")
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            break
        except redis.exceptions.ConnectionError:
            if time.monotonic() > deadline:
                proc.kill()
                raise SystemExit("redis-server did not start") from None
            time.sleep(0.05)
    client.close()
    return proc, f"redis://127.0.0.1:{port}/0"


def serve(name: str, team_file: str, url: str, max_events: int, home: str | None) -> None:
    """One player as its own process (the bench's own entry point, so the store can be left out)."""
    from seams import AgentService

    from sherpa_skills import RedisBus, RunStore, load_team

    member = load_team(team_file).members[name]
    store = RunStore(home=home) if home else None
    service = AgentService(name, member.workflow, member.subscribe, RedisBus(url), store, claim_idle=600)
    service.start()
    result = service.serve(max_events=max_events, idle_exit=60)
    assert result.counters["handled"] == max_events, result.counters


def over_redis(limit: int, durable: bool, url: str, folder: Path) -> float:
    """Events per second between two agent processes: XADD times of the first and last ball, from the server's clock."""
    import json

    import redis

    from sherpa_skills import Event, RedisBus

    client = redis.Redis.from_url(url)
    client.flushdb()
    team = write_team(folder / "team", limit)
    procs = []
    for name, events in (("left", limit + 1), ("right", limit)):
        home = str(folder / f"home-{name}-{time.monotonic_ns()}") if durable else ""
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    "--serve",
                    name,
                    "--team",
                    str(team),
                    "--url",
                    url,
                    "--max-events",
                    str(events),
                    "--home",
                    home,
                ]
            )
        )
    try:
        deadline = time.monotonic() + 60
        while client.scard("sherpa:agents") < 2:
            if time.monotonic() > deadline:
                raise SystemExit("the players did not register")
            time.sleep(0.02)
        bus = RedisBus(url)
        bus.publish(Event(name="ball", topic="to_left", payload={"n": 0}, correlation_id="rally"))
        bus.close()
        for proc in procs:
            if proc.wait(timeout=600) != 0:
                raise SystemExit(f"a player failed with exit code {proc.returncode}")
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    entries = client.xrange("sherpa:topic:to_left") + client.xrange("sherpa:topic:to_right")
    stamps = sorted((int(i.decode().split("-")[0]), json.loads(f[b"event"])["payload"]["n"]) for i, f in entries)
    client.close()
    assert len(stamps) == deliveries(limit), len(stamps)
    span = (stamps[-1][0] - stamps[0][0]) / 1000
    return (len(stamps) - 1) / span  # each XADD after the first follows one whole delivery


# ---------------------------------------------------------------- report


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = arguments(description=__doc__.split("\n\n")[0], quick="one repeat of short rallies")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--team", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--max-events", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--home", help=argparse.SUPPRESS)
    args = parse(parser, argv)
    if args.serve:
        serve(args.serve, args.team, args.url, args.max_events, args.home or None)
        return 0
    repeats = args.repeats or (1 if args.quick else 7)
    local_limit, redis_limit = (40, 20) if args.quick else (2000, 1000)
    command = shlex.join(["python", "bench/events_bench.py", *(argv if argv is not None else sys.argv[1:])])
    load_start = load_average()
    wall0 = perf_counter()
    configs = [
        ("in-process bus, in memory (no store)", lambda: in_process(local_limit, False), deliveries(local_limit)),
        ("in-process bus, durable (SQLite run store)", lambda: in_process(local_limit, True), deliveries(local_limit)),
    ]
    samples: dict[str, list[float]] = {name: [] for name, _, _ in configs}
    for _name, fn, _ in configs:
        fn()  # warm-up
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        redis_proc, url = start_redis(folder)
        try:
            configs += [
                (
                    "Redis Streams, 2 agent processes, no store",
                    lambda: over_redis(redis_limit, False, url, folder),
                    deliveries(redis_limit),
                ),
                (
                    "Redis Streams, 2 agent processes, durable (a SQLite run store each)",
                    lambda: over_redis(redis_limit, True, url, folder),
                    deliveries(redis_limit),
                ),
            ]
            for name, _, _ in configs[2:]:
                samples[name] = []
            for _ in range(repeats):
                for name, fn, _ in configs:
                    samples[name].append(fn())
                    print(f"{name}: {samples[name][-1]:,.0f} events/s", file=sys.stderr)
        finally:
            redis_proc.kill()
            redis_proc.wait()
    wall = perf_counter() - wall0
    rows = []
    for name, _, n in configs:
        values = samples[name]
        median = statistics.median(values)
        rows.append(f"| {name} | {n:,} | {median:,.0f} | {1e6 / median:,.0f} | {min(values):,.0f}–{max(values):,.0f} |")
    code = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE.parent
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "sherpa_skills"], capture_output=True, text=True, cwd=HERE.parent
    ).stdout.strip()
    section = "\n".join(
        [
            SECTION,
            "",
            f"- Date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
            f"- Machine: {shared_machine()}; load average (1/5/15 min) at start {load_start}, at end {load_average()}",
            f"- Code measured: git {code or '?'}{' with uncommitted changes in sherpa_skills/' if dirty else ''}",
            f"- Command: `{command}` ({repeats} timed repeats per configuration after one warm-up of "
            f"the in-process ones; configurations interleaved round-robin; whole run {wall:.0f} s)",
            "- Workload: two agents play ping-pong with one durable run each (correlation id `rally`). "
            "Every delivery fires the"
            " receiver's `ball` transition with the payload validated as its arguments and the event "
            "written to its context,"
            " runs `increment` and `emit`, commits the tick (durable: the consumed event id, "
            "the emitted event and the tick in one"
            " SQLite transaction, plus the emit's intent row and the outbox's published mark), "
            "and publishes the emitted event to the other agent's topic.",
            "- In-process: `TeamRunner.run()` wall time (team loading excluded) over the whole rally; "
            "one thread, FIFO delivery.",
            "- Redis Streams: each agent is its own process (`AgentService`: XREADGROUP block, handle, "
            "commit, XADD, XACK) on a"
            " redis-server on 127.0.0.1 started by the bench with no persistence; rate = (entries − 1) "
            "/ (last − first XADD"
            " time), from the stream entry ids (the server's millisecond clock), "
            "so process start-up is excluded and every"
            " interval between two XADDs is one whole delivery, "
            "one agent at a time (ping-pong never overlaps the two).",
            "",
            "| configuration | events per rally | median events/s | µs per delivery | min–max events/s |",
            "|---|---:|---:|---:|---:|",
            *rows,
            "",
        ]
    )
    print(section)
    if not args.no_write:
        write_section_text(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
