"""The run store's contract, held by both engines: every test runs on SQLite (the home's store.db) and on PostgreSQL
(a fresh database of the tests' own cluster). In the spirit of LangGraph's checkpointer conformance suite: one
behaviour per test, written once, whatever keeps the rows."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _engines import Engine

from sherpa_skills.agents.task_store import TaskStore
from sherpa_skills.engine.belief import LogEntry, TrajectoryEntry
from sherpa_skills.engine.runstore import RunStore, TickRecord
from sherpa_skills.errors import StoreError

SECRET = "sk-live-0123456789abcdefghijklmnopqrstuv"


@pytest.fixture
def engine(engine_url: str | None, tmp_path: Path) -> Iterator[Engine]:
    found = Engine("postgresql" if engine_url else "sqlite", tmp_path, engine_url)
    yield found
    found.close()


@pytest.fixture
def store(engine: Engine) -> RunStore:
    return engine.runs()


def _start(store: RunStore, run_id: str = "r1", **inputs: Any) -> None:
    store.create_run(
        run_id, "w", "/wf.yaml", "h0", dict(inputs), "s0", {"steps": 0},
        TickRecord(trajectory=[TrajectoryEntry(tick=0, state="s0", at=1.0)], context=[("n", 0)]),
    )  # fmt: skip


def _tick(store: RunStore, run_id: str, tick: int, **kwargs: Any) -> None:
    record = kwargs.pop("record", None) or TickRecord(
        trajectory=[TrajectoryEntry(tick=tick, state=f"s{tick}", trigger="go", decided_by="rule", at=float(tick))],
        log=[LogEntry(tick=tick, action="shell", inputs={"command": "echo"}, outputs={"exit": 0}, started=tick)],
        context=[("n", tick)],
    )
    store.commit_tick(
        run_id, record, status=kwargs.pop("status", "running"), state=f"s{tick}", tick=tick,
        counters={"steps": tick}, **kwargs,
    )  # fmt: skip


def test_what_a_run_committed_is_read_back_whole_from_another_connection(engine: Engine, store: RunStore) -> None:
    _start(store, topic="billing")
    for tick in range(1, 6):
        _tick(store, "r1", tick)
    other = engine.runs()
    row = other.get_run("r1")
    assert (row.status, row.state, row.tick, row.counters, row.inputs) == (
        "running", "s5", 5, {"steps": 5}, {"topic": "billing"},
    )  # fmt: skip
    belief = other.load_belief("r1")
    assert [t.tick for t in belief.trajectory] == list(range(6)) and belief.context == {"n": 5}
    assert [e.outputs for e in belief.log] == [{"exit": 0}] * 5
    assert [t.state for t in other.load_belief("r1", tail=2).trajectory] == ["s4", "s5"]
    assert other.belief_at("r1", 2).context == {"n": 2}
    assert other.steps("r1")[3] == (3, "s3", "go", "rule", 3.0)
    assert other.visited_states("r1") == [f"s{i}" for i in range(6)] and other.log_size("r1") == 5


def test_a_tick_refused_part_way_records_none_of_it_and_the_store_goes_on(store: RunStore) -> None:
    """On PostgreSQL a tick's statements go in one round trip (pipeline): the error of one of them, answered only at
    the end, must still undo the rows sent before it."""
    _start(store)
    _tick(store, "r1", 1)
    good = LogEntry(tick=2, action="shell", inputs={}, outputs={}, started=2.0)
    broken = TickRecord(
        trajectory=[TrajectoryEntry(tick=2, state="s2", trigger="go", decided_by="rule", at=2.0)],
        log=[good, good.model_copy(update={"action": None})],  # NOT NULL: the second log row is refused
        context=[("n", 2)],
    )
    with pytest.raises(store.conn.IntegrityError):
        _tick(store, "r1", 2, record=broken)
    assert store.get_run("r1").tick == 1 and store.log_size("r1") == 1
    assert [t.tick for t in store.load_belief("r1").trajectory] == [0, 1] and store.load_belief("r1").context == {
        "n": 1
    }
    _tick(store, "r1", 2)  # the connection is usable after the refusal
    assert store.get_run("r1").tick == 2 and store.log_size("r1") == 2


def test_a_secret_never_reaches_the_rows(store: RunStore) -> None:
    _start(store, api_key=SECRET)
    _tick(store, "r1", 1, record=TickRecord(context=[("token", SECRET)]))
    rows = repr(store.conn.execute("SELECT inputs FROM runs").fetchall()) + repr(
        store.conn.execute("SELECT value FROM run_context").fetchall()
    )
    assert SECRET not in rows


def test_a_unique_prefix_finds_a_run_an_ambiguous_or_unknown_one_is_an_error(store: RunStore) -> None:
    _start(store, "abc-1")
    _start(store, "abc-2")
    _start(store, "xyz_%")
    assert store.get_run("xyz").run_id == "xyz_%" and store.has_run("abc-1") and not store.has_run("abc")
    with pytest.raises(StoreError, match="ambiguous"):
        store.get_run("abc")
    with pytest.raises(StoreError, match="no run 'nope' in"):
        store.get_run("nope")
    with pytest.raises(StoreError):
        store.get_run("xyz_!")  # `_` is a character, not a wildcard


def test_an_event_is_consumed_once_and_a_duplicate_tick_records_nothing(store: RunStore) -> None:
    _start(store)
    event = {"id": "e1", "name": "ping", "payload": {}}
    _tick(
        store, "r1", 1, record=TickRecord(events=[("in", "handled", event), ("out", "emitted", {**event, "id": "o1"})])
    )
    assert store.consumed("r1", "e1") == "handled" and store.consumed("r1", "e2") is None
    with pytest.raises(StoreError, match="already consumed"):
        _tick(store, "r1", 2, record=TickRecord(events=[("in", "handled", event)]))
    assert store.get_run("r1").tick == 1  # the refused tick left nothing behind
    _tick(store, "r1", 2)  # and the connection is usable after the refusal
    assert [e["direction"] for e in store.run_events("r1")] == ["in", "out"]
    assert store.unpublished("r") == [("r1", {**event, "id": "o1"})]
    store.mark_published("r1", ["o1"])
    assert store.unpublished() == [] and store.run_events("r1", "out")[0]["published"] is True


def test_an_action_s_result_survives_a_crash_inside_its_tick(engine: Engine, store: RunStore) -> None:
    _start(store)
    store.mark_started("r1", 1, 0, "shell", {"trigger": "go"})
    store.mark_done("r1", 1, 0, {"exit": 0})
    store.mark_started("r1", 1, 1, "llm")
    store.mark_started("r1", 1, 1, "llm")  # marked again (a rerun): one intent, not two
    other = engine.runs()
    flight = other.in_flight("r1")
    assert flight is not None and (flight.tick, flight.decision, flight.results) == (
        1,
        {"trigger": "go"},
        {0: {"exit": 0}},
    )
    assert [(i.tick, i.seq, i.action) for i in other.interrupted("r1")] == [(1, 1, "llm")]
    _tick(other, "r1", 1, clear_intents=True)
    assert other.in_flight("r1") is None and other.interrupted("r1") == []


def test_machines_are_kept_once_per_hash_and_forks_and_team_tasks_remembered(store: RunStore) -> None:
    built: list[str] = []

    def record() -> dict[str, Any]:
        built.append("x")
        return {"name": "w", "text": "states: {}"}

    store.create_run("r1", "w", None, "h1", {}, "s0", {}, TickRecord(), machine=record)
    store.create_run("r2", "w", None, "h1", {}, "s0", {}, TickRecord(), machine=record)
    assert store.keep_machine("r1", 3, "h2", record) is True and store.keep_machine("r1", 4, "h2", record) is False
    assert store.machines("r1") == [(0, "h1"), (3, "h2")] and store.machine_record("h1") == record()
    assert len(built) == 3  # h1 once, h2 once, and the call just above
    store.record_fork("r2", "r1", 2)
    assert store.forked_from("r2") == ("r1", 2) and store.forks("r1") == [("r2", 2)]
    tasks = TaskStore(store.db)  # team tasks are the agents layer's, kept in the run store's database
    tasks.record_team_task("c1", "crew", {"task": "t"})
    tasks.record_team_task("c1", "other", {"task": "u"})  # the first record of a task stays
    assert tasks.team_tasks(["c1", "c2"]) == {"c1": {"task": "t"}}


def test_runs_are_listed_newest_first_searched_and_paged(store: RunStore) -> None:
    for i in range(5):
        _start(store, f"run-{i}", topic="Billing" if i % 2 else "shipping")
    store.commit_tick("run-3", TickRecord(), status="final", state="done", tick=1, counters={})
    assert [r.run_id for r in store.list_runs(limit=3)] == ["run-4", "run-3", "run-2"]
    rows, total = store.search_runs(text="billing", limit=1)
    assert total == 2 and [r.run_id for r in rows] == ["run-3"]  # text search ignores case on both engines
    rows, total = store.search_runs(text="billing", offset=1, limit=5)
    assert [r.run_id for r in rows] == ["run-1"]
    assert store.search_runs(status="final")[1] == 1 and store.search_runs(id_contains="n-2")[1] == 1
    assert store.workflows() == ["w"]


def test_hook_state_and_interruption_are_kept_with_the_run(engine: Engine, store: RunStore) -> None:
    store.create_run("r1", "w", None, None, {}, "s0", {}, TickRecord(), hooks={"learning": {"match": 1}})
    _tick(store, "r1", 1, hooks={"learning": {"match": 2}})
    assert store.mark_interrupted("r1") is True
    row = engine.runs().get_run("r1")
    assert row.hooks == {"learning": {"match": 2}} and row.status == "interrupted"
    store.commit_tick("r1", TickRecord(), status="final", state="done", tick=2, counters={})
    assert store.mark_interrupted("r1") is False  # a finished run stays finished


def test_deleting_runs_takes_every_row_they_recorded_and_keeps_what_must_stay(store: RunStore) -> None:
    for i in range(3):
        _start(store, f"r{i}")
        _tick(store, f"r{i}", 1, record=TickRecord(events=[("out", "emitted", {"id": f"o{i}", "name": "x"})]))
    deleted, kept = store.delete_runs(lambda conn: ["r0", "r1"], lambda conn, ids: {"r1": "kept for a reason"})
    assert deleted == ["r0"] and kept == {"r1": "kept for a reason"}
    assert not store.has_run("r0") and store.load_belief("r0").trajectory == [] and store.run_events("r0") == []
    for i in (1, 2):
        store.commit_tick(f"r{i}", TickRecord(), status="final", state="done", tick=2, counters={})
    assert store.delete_finished_before(time.time() + 1) == 2 and store.list_runs() == []


# ---------------------------------------------------------------- processes


_HOLD = """
import sys, time
from sherpa_skills.engine.runstore import RunStore
store = RunStore(home=sys.argv[1])
store.claims.claim(sys.argv[2])
print("held", flush=True)
time.sleep(60)
"""


def test_a_run_is_continued_by_one_process_at_a_time(engine: Engine, store: RunStore) -> None:
    """Another process holds the run: this one is refused; once that process is killed, the claim is free."""
    _start(store)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(engine.home()), "r1"], stdout=subprocess.PIPE, text=True, env=engine.env()
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreError, match="being continued by another process"):
            store.claims.claim("r1")
        store.claims.claim("r2")  # another run is free
    finally:
        holder.kill()
        holder.wait(timeout=30)
    _wait(lambda: _claims(store, "r1"), 10, "the dead holder's claim to go")
    store.claims.claim("r1")  # and held twice by the same store is no refusal
    store.claims.release("r1")


def _claims(store: RunStore, run_id: str) -> bool:
    try:
        store.claims.claim(run_id)
    except StoreError:
        return False
    store.claims.release(run_id)
    return True


def _wait(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


STEPS = 10
WORKFLOW = f"""
name: counter
inputs:
  out: {{required: true}}
context: {{n: 0}}
max_steps: 1000
initial: step
states:
  step:
    on_enter:
      - shell: {{command: "echo {{{{ n }}}} >> {{{{ out }}}} && sleep 0.05"}}
      - increment: {{key: n}}
  check: {{}}
  done: {{final: true}}
transitions:
  - {{trigger: checked, source: step, dest: check}}
  - {{trigger: again, source: check, dest: step, conditions: {{context_lt: {{key: n, value: {STEPS}}}}}}}
  - {{trigger: finish, source: check, dest: done, unless: {{context_lt: {{key: n, value: {STEPS}}}}}}}
"""


@pytest.mark.slow
def test_a_writer_killed_mid_run_loses_no_committed_step_and_resumes(engine: Engine, tmp_path: Path) -> None:
    """SIGKILL a CLI run after a few ticks, resume it from another process: every tick once, in order, and no step's
    side effect lost; only the action the kill interrupted may have run twice."""
    out, workflow = tmp_path / "out.txt", tmp_path / "counter.yaml"
    workflow.write_text(WORKFLOW)
    cli = [sys.executable, "-m", "sherpa_skills", "--home", str(engine.home())]
    proc = subprocess.Popen(
        [*cli, "run", str(workflow), "-i", f"out={out}", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=engine.env(),
    )  # fmt: skip
    watcher = engine.runs()

    def ticks() -> int:
        rows = watcher.list_runs(limit=1)
        return rows[0].tick if rows else 0

    _wait(lambda: ticks() >= 5 or proc.poll() is not None, 60, "five committed ticks")
    assert proc.poll() is None, proc.communicate()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    run_id = watcher.list_runs(limit=1)[0].run_id
    resumed = subprocess.run(
        [*cli, "resume", run_id, "--json"], capture_output=True, text=True, timeout=120, env=engine.env()
    )
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "final"
    ticks_seen = [t for t, *_ in watcher.steps(run_id)]
    assert ticks_seen == list(range(len(ticks_seen)))
    lines = [int(x) for x in out.read_text().split()]
    assert sorted(set(lines)) == list(range(STEPS)) and len(lines) - len(set(lines)) <= 1


WAITING = """
name: wait
initial: ask
states:
  ask: {waiting: true}
  done: {final: true}
transitions:
  - {trigger: answer, source: ask, dest: done}
"""


def test_resume_of_a_run_another_process_holds_is_refused_and_writes_nothing(engine: Engine, tmp_path: Path) -> None:
    workflow = tmp_path / "wait.yaml"
    workflow.write_text(WAITING)
    cli = [sys.executable, "-m", "sherpa_skills", "--home", str(engine.home())]
    started = subprocess.run([*cli, "run", str(workflow), "--json"], capture_output=True, text=True, env=engine.env())
    run_id = json.loads(started.stdout)["run_id"]
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(engine.home()), run_id], stdout=subprocess.PIPE, text=True, env=engine.env()
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        refused = subprocess.run(
            [*cli, "resume", run_id, "--trigger", "answer"], capture_output=True, text=True, env=engine.env()
        )
        assert refused.returncode == 1 and "being continued by another process" in refused.stderr
        assert engine.runs().get_run(run_id).status == "waiting"
    finally:
        holder.kill()
        holder.wait(timeout=30)
    resumed = subprocess.run(
        [*cli, "resume", run_id, "--trigger", "answer", "--json"], capture_output=True, text=True, env=engine.env()
    )
    assert resumed.returncode == 0 and json.loads(resumed.stdout)["status"] == "final", resumed.stderr


def test_the_outbox_is_relayed_once_and_a_run_s_own_as_it_was_emitted(engine: Engine, store: RunStore) -> None:
    for i in (1, 2):
        _start(store, f"r{i}")
        events = [("out", "emitted", {"id": f"o{i}-{j}", "name": "x", "token": SECRET}) for j in range(3)]
        _tick(store, f"r{i}", 1, record=TickRecord(events=events))
    live = {"o1-0": {"id": "o1-0", "name": "x", "token": SECRET}}
    sent: list[dict[str, Any]] = []
    assert store.relay(sent.append, run_id="r1", live=live) == 3
    assert sent[0] == live["o1-0"] and SECRET not in json.dumps(sent[1:]), "stored copies stay redacted"
    assert engine.runs().relay(sent.append, "r") == 3 and store.relay(sent.append) == 0
    assert [e["id"] for e in sent] == ["o1-0", "o1-1", "o1-2", "o2-0", "o2-1", "o2-2"] and store.unpublished() == []
