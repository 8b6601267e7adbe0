"""A run killed with SIGKILL at any point resumes from its last committed tick,
losing and repeating nothing it recorded: on SQLite, and on PostgreSQL (the store a killed writer shares with other
machines)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

STEPS = 12

WORKFLOW = f"""
name: counter
inputs:
  out: {{required: true}}
context: {{n: 0}}
max_steps: 1000
initial: work
states:
  work:
    initial: step
    states:
      step:
        on_enter:
          - shell: {{command: "echo {{{{ n }}}} >> {{{{ out }}}} && sleep 0.03"}}
          - increment: {{key: n}}
      check: {{}}
  done: {{final: true}}
transitions:
  - {{trigger: checked, source: work/step, dest: work/check}}
  - {{trigger: again, source: work/check, dest: work/step, conditions: {{context_lt: {{key: n, value: {STEPS}}}}}}}
  - {{trigger: finish, source: work/check, dest: done, unless: {{context_lt: {{key: n, value: {STEPS}}}}}}}
"""


class Store:
    """The run store the killed process wrote, read as another process would: the home's store.db, or the
    PostgreSQL database the CLI is given by SHERPA_SKILLS_DATABASE."""

    def __init__(self, home: Path, url: str | None) -> None:
        self.home, self.url = home, url

    def env(self) -> dict[str, str]:
        """A CLI process's environment: the URL (it carries the test server's password) never on a command line."""
        return {**os.environ, **({"SHERPA_SKILLS_DATABASE": self.url} if self.url else {})}

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self.url is None:
            with sqlite3.connect(self.home / "store.db") as conn:
                return conn.execute(sql, params).fetchall()
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            return conn.execute(sql.replace("?", "%s"), params).fetchall()  # type: ignore[arg-type]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    monkeypatch.delenv("SHERPA_SKILLS_DATABASE", raising=False)
    yield Store(tmp_path / "home", request.getfixturevalue("postgres_url") if request.param == "postgresql" else None)


def cli(*args: str, store: Store) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "sherpa_skills.cli", *args, "--home", str(store.home)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=store.env(),
    )


def kill_once_marked(workflow: Path, text: str, store: Store, out: Path, marker: Path) -> str:
    """Run the workflow, SIGKILL it as soon as `marker` exists (an action is mid-flight), and return its run id."""
    workflow.write_text(text)
    proc = cli("run", str(workflow), "--input", f"out={out}", store=store)
    deadline = time.time() + 30
    while not marker.exists() and time.time() < deadline:
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return str(store.query("SELECT run_id FROM runs")[0][0])


def committed_ticks(store: Store) -> int:
    try:
        return store.query("SELECT MAX(tick) FROM run_trajectory")[0][0] or 0
    except Exception:  # not created yet: the run's process is still starting
        return 0


@pytest.mark.slow
@pytest.mark.parametrize("kill_after_ticks", [1, 6, 13, 20])
def test_kill_9_then_resume_loses_nothing_and_repeats_only_the_interrupted_action(
    tmp_path: Path, store: Store, kill_after_ticks: int
) -> None:
    """SIGKILL mid-run, resume from the CLI:
    every step is logged once, and only an action the crash interrupted ran twice."""
    out = tmp_path / "out.txt"
    workflow = tmp_path / "counter.yaml"
    workflow.write_text(WORKFLOW)
    proc = cli("run", str(workflow), "--input", f"out={out}", "--json", store=store)
    deadline = time.time() + 30
    while committed_ticks(store) < kill_after_ticks and proc.poll() is None and time.time() < deadline:
        time.sleep(0.005)
    if proc.poll() is not None:
        pytest.fail(
            f"the run ended (exit {proc.returncode}) before tick {kill_after_ticks} was seen: {proc.communicate()}"
        )
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    ((run_id, status),) = store.query("SELECT run_id, status FROM runs")
    assert status == "running"

    resumed = cli("resume", run_id, "--json", store=store)
    stdout, stderr = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, stderr
    result = json.loads(stdout)
    assert result["status"] == "final"
    assert result["context"]["n"] == STEPS

    ticks = [r[0] for r in store.query("SELECT tick FROM run_trajectory WHERE run_id = ? ORDER BY id", (run_id,))]
    shells = [
        json.loads(r[0])
        for r in store.query(
            "SELECT outputs FROM run_log WHERE run_id = ? AND action = 'shell' AND status = 'ok' ORDER BY id",
            (run_id,),
        )
    ]
    intents = store.query("SELECT COUNT(*) FROM run_intents")[0][0]
    assert ticks == list(range(len(ticks))), "every tick is recorded exactly once, in order"
    assert len(shells) == STEPS, "each step's shell action is logged exactly once"
    assert intents == 0

    lines = [int(x) for x in out.read_text().split()]
    assert sorted(set(lines)) == list(range(STEPS)), "no step's side effect was lost"
    repeated = len(lines) - len(set(lines))
    assert repeated <= len(result["interrupted"]) <= 1, "only an action the crash interrupted may have run twice"


SLOW_STEP = """
name: slow
inputs:
  out: {required: true}
initial: busy
states:
  busy:
    on_enter:
      shell: {command: "test -f {{ out }} || (touch {{ out }} && sleep 30)", timeout_secs: 60}
  done: {final: true}
transitions:
  - {trigger: finished, source: busy, dest: done}
"""


@pytest.mark.slow
def test_an_action_killed_mid_flight_is_reported_and_rerun_only_when_allowed(tmp_path: Path, store: Store) -> None:
    """An action started but never recorded is named on resume;
    --no-rerun-interrupted stops, a plain resume runs it again."""
    out = tmp_path / "marker"
    run_id = kill_once_marked(tmp_path / "slow.yaml", SLOW_STEP, store, out, out)

    refused = cli("resume", run_id, "--no-rerun-interrupted", store=store)
    _, stderr = refused.communicate(timeout=60)
    assert refused.returncode != 0
    assert "'shell'" in stderr and "never recorded" in stderr and "Traceback" not in stderr

    rerun = cli("resume", run_id, "--json", store=store)
    stdout, stderr = rerun.communicate(timeout=60)
    assert rerun.returncode == 0, stderr
    result = json.loads(stdout)
    assert result["status"] == "final"
    assert [i["action"] for i in result["interrupted"]] == ["shell"]


TWO_ACTIONS = """
name: two
inputs:
  out: {required: true}
initial: busy
states:
  busy:
    on_enter:
      - shell: {command: "echo first >> {{ out }}"}
      - set: {between: 1}
      - shell: {command: "echo second >> {{ out }}; test -f {{ out }}.again || (touch {{ out }}.again && sleep 30)",
                timeout_secs: 60}
      - shell: {command: "echo third >> {{ out }}"}
  done: {final: true}
transitions:
  - {trigger: finished, source: busy, dest: done}
"""


@pytest.mark.slow
def test_a_completed_action_never_runs_again_after_a_crash_in_the_same_tick(tmp_path: Path, store: Store) -> None:
    """Killed during the second shell action of a state:
    on resume the first is not re-run, only the second is interrupted."""
    out = tmp_path / "out.txt"
    run_id = kill_once_marked(tmp_path / "two.yaml", TWO_ACTIONS, store, out, Path(f"{out}.again"))

    resumed = cli("resume", run_id, "--json", store=store)
    stdout, stderr = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, stderr
    result = json.loads(stdout)
    assert result["status"] == "final"
    assert [i["action"] for i in result["interrupted"]] == ["shell"], "only the action in flight is reported"
    assert result["context"]["between"] == 1
    assert out.read_text().split() == ["first", "second", "second", "third"], (
        "the first action ran once, the second at least once"
    )
    logged = [
        json.loads(r[0])["command"]
        for r in store.query("SELECT inputs FROM run_log WHERE run_id = ? AND action = 'shell' ORDER BY id", (run_id,))
    ]
    assert [c.split()[1] for c in logged] == ["first", "second", "third"], "each action is logged once"


@pytest.mark.slow
def test_a_completed_action_is_not_rerun_after_a_crash_in_a_decided_tick(tmp_path: Path, store: Store) -> None:
    """The same for a transition's actions: the resumed tick follows the recorded trigger and skips what completed."""
    out = tmp_path / "out.txt"
    on_exit = (
        TWO_ACTIONS.replace("    on_enter:\n", "    on_exit:\n")
        .replace("  busy:\n", "  start:\n    {}\n  busy:\n")
        .replace("initial: busy", "initial: start")
        .replace("transitions:\n", "transitions:\n  - {trigger: go, source: start, dest: busy}\n")
    )
    run_id = kill_once_marked(tmp_path / "tick.yaml", on_exit, store, out, Path(f"{out}.again"))
    resumed = cli("resume", run_id, "--json", store=store)
    stdout, stderr = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, stderr
    result = json.loads(stdout)
    assert result["status"] == "final" and result["steps"] == 2
    assert out.read_text().split() == ["first", "second", "second", "third"]


CRASH_AFTER_EMIT = """
name: crashy
initial: start
states:
  start: {}
  done: {final: true}
transitions:
  - trigger: go
    source: start
    dest: done
    before:
      - emit: {name: started, topic: work}
      - {action: call, args: {function: counted}, save_as: first}
      - crash_once
"""


def test_a_process_dying_mid_tick_replays_completed_results_and_their_events(tmp_path: Path, runner) -> None:
    """In-process stand-in for a kill: the outbox, save_as and counters of completed actions come back on resume."""
    from sherpa_skills.engine.agent import Agent
    from sherpa_skills.engine.registry import default_registry, load_builtins
    from sherpa_skills.engine.runstore import RunStore
    from sherpa_skills.engine.workflow import load_workflow_text

    load_builtins()
    registry = default_registry.child()
    calls = {"counted": 0, "crash": 0}

    @registry.function("counted")
    def counted() -> int:
        calls["counted"] += 1
        return calls["counted"]

    @registry.action("crash_once", side_effects=True)
    def crash_once(args, ctx):  # type: ignore[no-untyped-def]
        calls["crash"] += 1
        if calls["crash"] == 1:
            raise KeyboardInterrupt  # not an action error: the process stops here, nothing of the tick is committed
        return {"ok": True}

    workflow = load_workflow_text(CRASH_AFTER_EMIT, registry=registry)
    store = RunStore(path=tmp_path / "store.db")
    agent = workflow.agent(store=store)
    with pytest.raises(KeyboardInterrupt):
        runner(agent)
    assert store.get_run(agent.run_id).status == "interrupted", "Ctrl-C in the library too: not left `running`"
    store.close()

    store = RunStore(path=tmp_path / "store.db")
    resumed = Agent.resume(store, agent.run_id, workflow.machine, workflow.policy, registry=registry)
    result = runner(resumed)
    assert result.status == "final", result.error
    assert calls == {"counted": 1, "crash": 2}, "the completed call ran once; the interrupted action ran again"
    assert result.context["first"] == 1
    assert [i["action"] for i in result.interrupted] == ["crash_once"]
    assert [e["name"] for e in resumed.outbox] == ["started"]
    assert [e["event"]["name"] for e in store.run_events(agent.run_id, "out")] == ["started"]
    assert [e.action for e in store.load_belief(agent.run_id).log] == ["emit", "call", "crash_once"]
