"""The Redis Streams bus against a real redis-server: agents as separate processes, crash redelivery, bad events."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _redis import NoRedis, redis_server

from sherpa_skills import RunStore, load_workflow_text
from sherpa_skills.agents.team import run_id_for

redis = pytest.importorskip("redis", reason="redis-py is not installed (pip install redis, part of sherpa-skills[dev])")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CRITIC_LOOP = EXAMPLES / "critic_loop" / "team.yaml"
FINAL_ANSWER = (
    "A state machine is a set of states with exactly one current, and transitions, fired by events, "
    "that move it from one state to the next. (approved after 2 drafts)"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(predicate, timeout: float, what: str, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A real redis-server on 127.0.0.1, a free port and a temporary dir, always killed afterwards."""
    try:
        with redis_server(tmp_path / "redis") as url:
            yield url
    except NoRedis as exc:
        pytest.skip(f"{exc}; the Redis Streams bus tests need a real one")


class Processes:
    """Agent processes started by a test; every one is killed at teardown, whatever happened."""

    def __init__(self, home: Path, url: str, logs: Path):
        self.home, self.url, self.logs = home, url, logs
        self.procs: list[subprocess.Popen[str]] = []

    def agent(self, file: Path, name: str, *extra: str) -> subprocess.Popen[str]:
        log = (self.logs / f"{name}-{len(self.procs)}.err").open("w")
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "sherpa_skills.cli",
                "agent",
                str(file),
                "--name",
                name,
                "--bus",
                self.url,
                "--home",
                str(self.home),
                "--json",
                *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.procs.append(proc)
        return proc

    def cli(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "sherpa_skills.cli", *args], capture_output=True, text=True, timeout=timeout
        )

    def finish(self, proc: subprocess.Popen[str], timeout: float = 60) -> dict:
        out, _ = proc.communicate(timeout=timeout)
        assert proc.returncode == 0, f"agent exited {proc.returncode}: {out}\n{self.stderr(proc)}"
        return json.loads(out)

    def stderr(self, proc: subprocess.Popen[str]) -> str:
        index = self.procs.index(proc)
        found = sorted(self.logs.glob(f"*-{index}.err"))
        return found[0].read_text() if found else ""

    def kill_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            try:
                proc.communicate(timeout=10)
            except (subprocess.TimeoutExpired, ValueError):
                pass


@pytest.fixture
def procs(tmp_path: Path, redis_url: str) -> Iterator[Processes]:
    logs = tmp_path / "logs"
    logs.mkdir()
    p = Processes(tmp_path / "home", redis_url, logs)
    try:
        yield p
    finally:
        p.kill_all()


def registered(url: str, *names: str) -> bool:
    client = redis.Redis.from_url(url)
    try:
        return set(names) <= {n.decode() for n in client.smembers("sherpa:agents")}
    finally:
        client.close()


def stream_names(client, stream: str) -> list[str]:
    return [json.loads(fields[b"event"])["name"] for _, fields in client.xrange(stream)]


@pytest.mark.slow
def test_the_critic_loop_as_three_processes_over_redis(procs: Processes, redis_url: str) -> None:
    """worker, critic and aggregator each in their own process; the same conversation and answer as in one process."""
    counts = {"worker": 3, "critic": 2, "aggregator": 1}
    agents = {
        name: procs.agent(CRITIC_LOOP, name, "--max-events", str(n), "--idle-exit", "60") for name, n in counts.items()
    }
    _wait(lambda: registered(redis_url, *counts), 30, "the three agents to register")
    from sherpa_skills.agents.redis_bus import RedisBus
    from sherpa_skills.agents.team import load_team
    from sherpa_skills.engine.events import Event

    bus = RedisBus(
        redis_url
    )  # what `send --initial` does, without paying for another interpreter start on a busy machine
    [first] = load_team(CRITIC_LOOP).initial_events()
    assert bus.publish(Event(**{**first.body(), "correlation_id": "task-1"})).receivers == ["worker"]
    bus.close()
    results = {name: procs.finish(proc) for name, proc in agents.items()}
    assert {n: r["counters"]["handled"] for n, r in results.items()} == counts
    assert all(r["stopped"] == "max_events" and r["problems"] == [] for r in results.values())

    client = redis.Redis.from_url(redis_url)
    assert stream_names(client, "sherpa:topic:tasks") == ["task"]
    assert stream_names(client, "sherpa:topic:drafts") == ["draft", "draft"]
    assert stream_names(client, "sherpa:topic:reviews") == ["changes_requested", "approved"]
    assert stream_names(client, "sherpa:topic:accepted") == ["accepted"]
    for stream, group in [
        ("sherpa:topic:tasks", "worker"),
        ("sherpa:topic:reviews", "worker"),
        ("sherpa:topic:drafts", "critic"),
        ("sherpa:topic:accepted", "aggregator"),
    ]:
        assert client.xpending(stream, group)["pending"] == 0, f"{group} left {stream} unacknowledged"
    client.close()

    store = RunStore(home=procs.home)
    assert store.get_run(run_id_for("aggregator", "task-1")).status == "final"
    assert store.load_belief(run_id_for("aggregator", "task-1")).context["answer"] == FINAL_ANSWER
    assert [e["event"]["name"] for e in store.run_events(run_id_for("worker", "task-1"), "in")] == [
        "task",
        "changes_requested",
        "approved",
    ]
    store.close()


SLEEPER = """
name: sleeper
initial: idle
states:
  idle: {waiting: true}
  working:
    on_enter:
      # The first attempt records itself and sleeps (the test kills the agent then); a rerun passes straight through.
      shell:
        command: "if [ -e {{ marker }} ]; then echo again >> {{ marker }}; else echo first > {{ marker }};
          echo $$ > {{ marker }}.pid; exec sleep 30; fi"
  done:
    final: true
    on_enter: {emit: {name: finished, topic: results, payload: {job: "{{ job }}"}}}
transitions:
  - trigger: job
    source: idle
    dest: working
    arguments: {job: {type: string}, marker: {type: string}}
    before: {set: {job: "{{ args.job }}", marker: "{{ args.marker }}"}}
  - {trigger: finish, source: working, dest: done}
"""


@pytest.mark.slow
@pytest.mark.parametrize("restart_as", ["same consumer", "another consumer"])
def test_a_killed_agent_loses_no_event_and_handles_it_exactly_once(
    procs: Processes, redis_url: str, tmp_path: Path, restart_as: str
) -> None:
    """kill -9 while the event's action runs (received, not acknowledged); the restarted agent (re-reading its own
    pending entries, or claiming the dead consumer's) handles it once in the store and acknowledges it."""
    workflow = tmp_path / "sleeper.yaml"
    workflow.write_text(SLEEPER)
    marker = tmp_path / "marker.txt"
    client = redis.Redis.from_url(redis_url)
    client.xgroup_create("sherpa:topic:results", "observer", id="0", mkstream=True)
    client.sadd("sherpa:subscribers:results", "observer")
    first = procs.agent(workflow, "sleeper", "--subscribe", "jobs")
    _wait(lambda: registered(redis_url, "sleeper"), 30, "the agent to register")
    payload = json.dumps({"job": "j1", "marker": str(marker)})
    sent = procs.cli(
        "send",
        "--bus",
        redis_url,
        "--topic",
        "jobs",
        "--name",
        "job",
        "--payload",
        payload,
        "--id",
        "ev-1",
        "--correlation-id",
        "j1",
    )
    assert sent.returncode == 0, sent.stderr
    try:
        _wait(lambda: marker.exists() and Path(f"{marker}.pid").exists(), 30, "the action to start")
        assert client.xpending("sherpa:topic:jobs", "sleeper")["pending"] == 1, "received, not yet acknowledged"
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    finally:
        pid = Path(f"{marker}.pid")
        if pid.exists():
            try:
                os.kill(int(pid.read_text()), signal.SIGKILL)  # the orphaned `sleep` of the killed agent
            except (ProcessLookupError, ValueError):
                pass

    extra = ["--consumer", "replacement", "--claim-idle", "0.2"] if restart_as == "another consumer" else []
    second = procs.agent(workflow, "sleeper", "--subscribe", "jobs", "--max-events", "1", "--idle-exit", "30", *extra)
    result = procs.finish(second)
    assert result["counters"]["handled"] == 1
    assert result["counters"]["redelivered" if restart_as == "same consumer" else "claimed"] == 1

    assert client.xpending("sherpa:topic:jobs", "sleeper")["pending"] == 0, "acknowledged after the commit"
    assert stream_names(client, "sherpa:topic:results") == ["finished"], "what it emitted is published once"
    store = RunStore(home=procs.home)
    run_id = run_id_for("sleeper", "j1")
    assert [e["event"]["id"] for e in store.run_events(run_id, "in")] == ["ev-1"]
    assert [t.trigger for t in store.load_belief(run_id).trajectory].count("job") == 1
    assert store.get_run(run_id).state == "done"
    assert marker.read_text().splitlines() == ["first", "again"], "the interrupted action ran again (at-least-once)"
    store.close()
    client.close()


ECHO = """
name: echo
initial: idle
states:
  idle: {waiting: true}
  done: {final: true}
transitions:
  - trigger: ping
    source: idle
    dest: done
    arguments: {text: {type: string}}
    before: {set: {text: "{{ args.text }}"}}
"""


def test_malformed_duplicate_and_unavailable_events_are_counted_acknowledged_and_kept_aside(
    redis_url: str, tmp_path: Path
) -> None:
    """Bad entries never stop the agent: each is counted, dead-lettered with its reason, and acknowledged."""
    from sherpa_skills.agents.redis_bus import RedisBus
    from sherpa_skills.agents.service import AgentService
    from sherpa_skills.engine.events import Event

    bus = RedisBus(redis_url)
    store = RunStore(home=tmp_path)
    service = AgentService("echo", load_workflow_text(ECHO), ["pings"], bus, store)
    service.start()
    raw = bus.client
    raw.xadd("sherpa:topic:pings", {"event": "{not json"})
    raw.xadd("sherpa:topic:pings", {"event": json.dumps({"name": "ping", "topic": "pings", "priority": "high"})})
    raw.xadd(
        "sherpa:topic:pings",
        {"event": json.dumps({"name": "ping", "topic": "pings", "payload": {"blob": "x" * 300_000}})},
    )
    raw.xadd("sherpa:topic:pings", {"something": "else"})
    good = Event(id="e-1", name="ping", topic="pings", payload={"text": "hi"}, correlation_id="c1")
    bus.publish(good)
    bus.publish(good)  # redelivered by an at-least-once publisher: the same id again
    bus.publish(Event(name="ping", topic="pings", payload={"text": "late"}, correlation_id="c1"))  # the run is finished
    result = service.serve(max_events=7, idle_exit=5, block=0.2)

    c = result.counters
    assert (c["consumed"], c["malformed"], c["handled"], c["duplicate"], c["unavailable"]) == (7, 4, 1, 1, 1)
    reasons = [fields[b"reason"].decode() for _, fields in raw.xrange(bus.deadletter_stream)]
    assert "not valid JSON" in reasons[0] and "unknown field 'priority'" in reasons[1] and "the limit is" in reasons[2]
    assert "no 'event' field" in reasons[3] and reasons[4].startswith("unavailable: run echo.c1 already finished")
    assert bus.pending_count("echo", "sherpa:topic:pings") == 0
    assert [e["event"]["id"] for e in store.run_events("echo.c1", "in")][0] == "e-1"
    assert store.load_belief("echo.c1").context["text"] == "hi"
    store.close()
    bus.close()


def test_send_reports_an_unknown_topic_or_agent_and_refuses_a_malformed_payload(
    procs: Processes, redis_url: str
) -> None:
    from sherpa_skills.agents.redis_bus import RedisBus

    RedisBus(redis_url).register("listener", ["news"])
    unknown_topic = procs.cli("send", "--bus", redis_url, "--topic", "weather", "--name", "rain")
    assert (
        unknown_topic.returncode == 1
        and "no agent subscribes to topic 'weather' (topics: news)" in unknown_topic.stderr
    )
    unknown_agent = procs.cli("send", "--bus", redis_url, "--recipient", "zed", "--name", "hello")
    assert (
        unknown_agent.returncode == 1
        and "no agent named 'zed' has registered on this bus (agents: listener)" in unknown_agent.stderr
    )
    bad = procs.cli("send", "--bus", redis_url, "--topic", "news", "--name", "not a name")
    assert bad.returncode == 1 and "field 'name'" in bad.stderr and "Traceback" not in bad.stderr
    ok = procs.cli("send", "--bus", redis_url, "--topic", "news", "--name", "story", "--payload", '{"title": "x"}')
    assert ok.returncode == 0 and "to listener" in ok.stderr
    RedisBus(redis_url).register("worker", ["tasks"])
    initial = procs.cli(
        "send", "--bus", redis_url, "--initial", str(CRITIC_LOOP), "-i", "task=Name a colour", "-c", "t-7", "--json"
    )
    [published] = json.loads(initial.stdout)
    assert initial.returncode == 0 and published["receivers"] == ["worker"]
    assert published["event"]["payload"] == {"task": "Name a colour"} and published["event"]["correlation_id"] == "t-7"


def test_events_committed_but_never_published_are_published_when_the_agent_starts(
    redis_url: str, tmp_path: Path
) -> None:
    """A process that died between committing a tick and publishing what it emitted: the next start publishes it."""
    from sherpa_skills.agents.redis_bus import RedisBus
    from sherpa_skills.agents.service import AgentService
    from sherpa_skills.agents.team import AgentHost, load_team
    from sherpa_skills.engine.events import Event

    team = load_team(CRITIC_LOOP)
    store = RunStore(home=tmp_path)
    [first] = team.initial_events()
    delivery = AgentHost("worker", team.members["worker"].workflow, store).deliver(
        Event(**{**first.body(), "correlation_id": "t1"})
    )
    assert delivery.outcome == "handled" and [b["name"] for _, b in store.unpublished("worker.")] == [
        "draft"
    ]  # ... and the crash

    bus = RedisBus(redis_url)
    bus.register("critic", ["drafts"])
    service = AgentService("worker", team.members["worker"].workflow, ["tasks", "reviews"], bus, store)
    service.start()
    assert service.counters["republished"] == 1 and store.unpublished("worker.") == []
    assert stream_names(bus.client, "sherpa:topic:drafts") == ["draft"]
    store.close()
    bus.close()


@pytest.mark.parametrize("name", ["../../../outside-agent", "/tmp/abs-agent-name", "a" * 300])
def test_an_agent_name_that_is_a_path_logs_inside_home(redis_url: str, tmp_path: Path, name: str) -> None:
    """`agent --name ../../x` serves under that name on the bus, and its JSON log is HOME/logs/agent-….jsonl."""
    work = tmp_path / "work" / "deep"
    work.mkdir(parents=True)
    flow = work / "flow.yaml"
    flow.write_text(
        "name: listener\ninitial: ready\nstates:\n  ready:\n    waiting: true\n"
        "    transitions: [{trigger: ping, dest: ready}]\n"
    )
    home = tmp_path / "a" / "b" / "home"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sherpa_skills.cli",
            "agent",
            str(flow),
            "--name",
            name,
            "--subscribe",
            "t",
            "--bus",
            redis_url,
            "--home",
            str(home),
            "--json",
            "--idle-exit",
            "0.3",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Traceback" not in done.stderr
    assert done.returncode == 0, done.stderr
    logs = list((home / "logs").glob("agent-*.jsonl"))
    assert len(logs) == 1 and logs[0].parent == home / "logs"
    outside = [p for p in tmp_path.rglob("*") if p.suffix == ".jsonl" and home not in p.parents]
    assert outside == [] and not Path("/tmp/abs-agent-name.jsonl").exists()


#: A relay: each `item` appends its number to OUT (the side effect a test counts), runs HOLD (a pause, or a crash),
#: then passes the number on. One run per agent handles the whole stream (correlation id `stream`).
RELAY = """
name: relay
initial: ready
states:
  ready: {waiting: true}
transitions:
  - trigger: item
    source: ready
    dest: ready
    arguments: {n: {type: integer}}
    before:
      - shell: {command: "echo {{ args.n }} >> OUT"}
      - shell: {command: "HOLD"}
      - emit: {name: item, topic: TOPIC, payload: {n: "{{ args.n }}"}}
"""


def relay_file(tmp_path: Path, name: str, hold: str, topic: str) -> tuple[Path, Path]:
    out = tmp_path / f"{name}.out"
    flow = tmp_path / f"{name}.yaml"
    flow.write_text(RELAY.replace("OUT", str(out)).replace("HOLD", hold).replace("TOPIC", topic))
    return flow, out


def handled_per_item(store: RunStore, run_id: str) -> dict[int, list[bool]]:
    """The agent's own record: for each number, whether each logged run of its first action was
    marked possibly repeated."""
    found: dict[int, list[bool]] = {}
    for entry in store.load_belief(run_id).log:
        command = entry.inputs.get("command", "") if entry.action == "shell" else ""
        if command.startswith("echo ") and ">>" in command:
            found.setdefault(int(command.split()[1]), []).append(entry.repeated)
    return found


@pytest.mark.slow
def test_an_event_whose_tick_was_cut_short_after_an_action_completed_is_handled_once(
    procs: Processes, redis_url: str, tmp_path: Path
) -> None:
    """The first action completed (its result recorded), the process died in the second,
    before the tick committed and the
    entry was acknowledged: the restarted agent finishes that tick and records the event as consumed with it, so the
    redelivered entry is recognised by its id and not handled again; the action that was in flight ran twice and `show`
    says it may have."""
    flag = tmp_path / "crashed"
    flow, out = relay_file(
        tmp_path, "relay", f"if [ ! -e {flag} ]; then touch {flag}; kill -9 $PPID; sleep 5; fi", "relayed"
    )
    RedisBus = pytest.importorskip("sherpa_skills.agents.redis_bus").RedisBus
    bus = RedisBus(redis_url)
    bus.register("sink", ["relayed"])  # someone hears what the relay emits
    first = procs.agent(flow, "relay", "--subscribe", "items")
    _wait(lambda: registered(redis_url, "relay"), 30, "the relay to register")
    from sherpa_skills.engine.events import Event

    bus.publish(Event(id="item-1", name="item", topic="items", payload={"n": 1}, correlation_id="stream"))
    assert first.wait(timeout=60) == -signal.SIGKILL, procs.stderr(first)
    assert out.read_text().split() == ["1"]

    second = procs.agent(flow, "relay", "--subscribe", "items", "--max-events", "1", "--idle-exit", "20")
    result = procs.finish(second)
    assert result["counters"]["redelivered"] == 1
    assert (result["counters"]["handled"], result["counters"]["duplicate"]) == (0, 1), result
    assert result["problems"] == []
    assert out.read_text().split() == ["1"], "the completed action is not run again"
    assert bus.pending_count("relay", "sherpa:topic:items") == 0
    assert stream_names(bus.client, "sherpa:topic:relayed") == ["item"], (
        "what the cut-short tick emitted is published once"
    )

    store = RunStore(home=procs.home)
    run_id = run_id_for("relay", "stream")
    assert handled_per_item(store, run_id) == {1: [False]}
    assert [t.trigger for t in store.load_belief(run_id).trajectory].count("item") == 1
    assert [e["event"]["id"] for e in store.run_events(run_id, "in")] == ["item-1"]
    holds = [
        e for e in store.load_belief(run_id).log if e.action == "shell" and "kill -9" in e.inputs.get("command", "")
    ]
    assert [h.repeated for h in holds] == [True]
    store.close()
    shown = procs.cli("show", run_id, "--home", str(procs.home))
    assert shown.returncode == 0, shown.stderr
    assert "possibly repeated" in shown.stdout
    bus.close()


def lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


@pytest.mark.slow
def test_240_events_through_two_agents_killed_at_random_moments_are_each_handled_once(
    procs: Processes, redis_url: str, tmp_path: Path
) -> None:
    """relay → sink, 240 events; the relay is killed 7 times and the sink twice (seeded moments, mid-stream). In each
    agent's own record every event is handled exactly once; an action that was in flight at a kill may have run twice
    (its number twice in the side-effect file), and only such an action, which the record marks as possibly repeated."""
    import random

    rng = random.Random(27)
    total = 240
    relay_flow, relay_out = relay_file(tmp_path, "relay", "sleep 0.05", "relayed")
    sink_flow, sink_out = relay_file(tmp_path, "sink", "sleep 0.05", "done")
    RedisBus = pytest.importorskip("sherpa_skills.agents.redis_bus").RedisBus
    bus = RedisBus(redis_url)
    bus.register("observer", ["done"])
    flows = {"relay": (relay_flow, relay_out, "items"), "sink": (sink_flow, sink_out, "relayed")}
    running = {name: procs.agent(flow, name, "--subscribe", topic) for name, (flow, _, topic) in flows.items()}
    _wait(lambda: registered(redis_url, "relay", "sink"), 60, "both agents to register")
    from sherpa_skills.engine.events import Event

    for n in range(1, total + 1):
        bus.publish(Event(id=f"item-{n}", name="item", topic="items", payload={"n": n}, correlation_id="stream"))

    kills = ["relay"] * 7 + ["sink"] * 2
    rng.shuffle(kills)
    deadline = time.monotonic() + 240
    for name in kills:
        flow, out, topic = flows[name]
        seen = len(lines(out))
        step = rng.randint(3, 12)
        # Mid-stream: the agent is working (its side-effect file grows), then a random moment within a tick or two.
        _wait(
            lambda: (
                len(lines(out)) >= seen + step  # noqa: B023  (_wait calls it within this iteration)
                or running[name].poll() is not None  # noqa: B023  (likewise)
            ),
            deadline - time.monotonic(),
            f"{name} to make progress",
        )
        assert running[name].poll() is None, f"{name} exited {running[name].returncode}:\n{procs.stderr(running[name])}"
        time.sleep(rng.uniform(0, 0.15))
        running[name].send_signal(signal.SIGKILL)
        running[name].wait(timeout=10)
        running[name] = procs.agent(flow, name, "--subscribe", topic)

    def drained() -> bool:
        return (
            len(set(lines(sink_out))) == total
            and bus.pending_count("relay", "sherpa:topic:items") == 0
            and bus.pending_count("sink", "sherpa:topic:relayed") == 0
            and bus.client.xinfo_groups("sherpa:topic:relayed")[0].get("lag", 0) == 0
        )

    _wait(drained, max(10.0, deadline - time.monotonic()), "every event to reach the sink", interval=0.5)
    results = {}
    for name, proc in running.items():
        proc.send_signal(signal.SIGTERM)
        results[name] = procs.finish(proc)
    assert all(r["problems"] == [] for r in results.values()), results
    assert bus.client.xlen(bus.deadletter_stream) == 0

    store = RunStore(home=procs.home)
    repeated_somewhere = []
    for name, (_, out, _) in flows.items():
        run_id = run_id_for(name, "stream")
        record = handled_per_item(store, run_id)
        twice = {n: marks for n, marks in record.items() if len(marks) != 1}
        assert twice == {}, f"{name} handled these more than once (or never): {twice}"
        assert sorted(record) == list(range(1, total + 1)), (
            f"{name} never handled {sorted(set(range(1, total + 1)) - set(record))}"
        )
        belief = store.load_belief(run_id)
        assert [t.trigger for t in belief.trajectory].count("item") == total
        assert len(store.run_events(run_id, "in")) == total
        ran = {n: lines(out).count(str(n)) for n in range(1, total + 1)}
        again = {n for n, count in ran.items() if count > 1}
        assert again <= {n for n, marks in record.items() if marks[0]}, (
            f"{name}: ran twice without being marked: {again}"
        )
        if any(e.repeated for e in belief.log):
            repeated_somewhere.append(run_id)
    store.close()
    assert repeated_somewhere, "nine kills mid-stream and no action was in flight at any of them"
    shown = procs.cli("show", repeated_somewhere[0], "--home", str(procs.home))
    assert shown.returncode == 0 and "possibly repeated" in shown.stdout, shown.stderr
    bus.close()
