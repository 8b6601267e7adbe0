"""A connection the PostgreSQL server drops mid-run (backend terminated, or the COMMIT's answer lost on the way): the
store swaps in a fresh connection, writes the tick again only when it did not land, and the run finishes with every
step committed once; a run another process claimed meanwhile stops, and resumes later."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _lossy import CommitAnswerLost, relayed

from sherpa_skills.engine.registry import Registry, default_registry, load_builtins
from sherpa_skills.engine.runstore import RunStore

pytestmark = pytest.mark.postgres

STEPS = 6
WORKFLOW = f"""
name: counter
context: {{n: 0}}
initial: work
states:
  work:
    initial: step
    states:
      step:
        on_enter:
          - {{action: call, args: {{function: fault}}}}
          - shell: {{command: "echo {{{{ n }}}} >> {{{{ out }}}}"}}
          - increment: {{key: n}}
      check: {{}}
  done: {{final: true}}
inputs:
  out: {{required: true}}
transitions:
  - {{trigger: checked, source: work/step, dest: work/check}}
  - {{trigger: again, source: work/check, dest: work/step, conditions: {{context_lt: {{key: n, value: {STEPS}}}}}}}
  - {{trigger: finish, source: work/check, dest: done, unless: {{context_lt: {{key: n, value: {STEPS}}}}}}}
"""


def _admin(url: str) -> Any:
    import psycopg

    return psycopg.connect(url, autocommit=True)


def _workflow(fault: Callable[[], None]) -> Any:
    from sherpa_skills.engine.workflow import load_workflow_text

    load_builtins()
    registry: Registry = default_registry.child()
    calls = [0]

    @registry.function("fault")
    def _fault() -> int:
        calls[0] += 1
        if calls[0] == 3:  # the third step: a run well under way
            fault()
        return calls[0]

    return load_workflow_text(WORKFLOW, registry=registry)


def _every_step_once(store: RunStore, run_id: str, out: Path) -> None:
    ticks = [t[0] for t in store.steps(run_id)]
    assert ticks == list(range(len(ticks))), "every tick committed exactly once, in order"
    assert [int(x) for x in out.read_text().split()] == list(range(STEPS)), "each step's action ran once"
    shells = [e for e in store.load_belief(run_id).log if e.action == "shell"]
    assert len(shells) == STEPS and store.interrupted(run_id) == []


def test_a_backend_terminated_between_ticks_is_replaced_and_the_run_finishes(postgres_url: str, tmp_path: Path) -> None:
    store = RunStore(home=tmp_path / "home", database=postgres_url)
    admin = _admin(postgres_url)

    def terminate() -> None:  # while the action runs, the store's connection sits idle between statements
        admin.execute("SELECT pg_terminate_backend(%s)", (store.conn.raw.info.backend_pid,))  # type: ignore[attr-defined]

    try:
        agent = _workflow(terminate).agent(store=store)
        before = store.conn.raw.info.backend_pid  # type: ignore[attr-defined]
        result = agent.run({"out": str(tmp_path / "out")})
        assert result.status == "final", result.error
        assert store.conn.raw.info.backend_pid != before  # type: ignore[attr-defined]
        _every_step_once(store, agent.run_id, tmp_path / "out")
    finally:
        admin.close()
        store.close()


def test_a_backend_terminated_inside_the_tick_s_transaction_writes_the_tick_again(
    postgres_url: str, tmp_path: Path
) -> None:
    store = RunStore(home=tmp_path / "home", database=postgres_url)
    admin = _admin(postgres_url)
    # The server ends the connection in the middle of a tick's INSERTs, once (a sequence is not rolled back).
    admin.execute("CREATE SEQUENCE fault_once")
    admin.execute(
        "CREATE FUNCTION fault() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "IF NEW.tick = 4 AND nextval('fault_once') = 1 THEN PERFORM pg_terminate_backend(pg_backend_pid()); "
        "PERFORM pg_sleep(5); END IF; RETURN NEW; END $$"
    )
    admin.execute("CREATE TRIGGER fault BEFORE INSERT ON run_trajectory FOR EACH ROW EXECUTE FUNCTION fault()")
    try:
        agent = _workflow(lambda: None).agent(store=store)
        result = agent.run({"out": str(tmp_path / "out")})
        assert result.status == "final", result.error
        assert admin.execute("SELECT last_value FROM fault_once").fetchone()[0] >= 1, "the fault did fire"
        _every_step_once(store, agent.run_id, tmp_path / "out")
    finally:
        admin.close()
        store.close()


@pytest.fixture
def lossy_url(postgres_url: str) -> Iterator[tuple[str, CommitAnswerLost]]:
    with relayed(postgres_url) as found:
        yield found


def test_a_commit_whose_answer_was_lost_is_not_written_twice(
    lossy_url: tuple[str, CommitAnswerLost], tmp_path: Path
) -> None:
    url, proxy = lossy_url
    store = RunStore(home=tmp_path / "home", database=url)
    try:
        agent = _workflow(proxy.armed.set).agent(store=store)  # the next COMMIT after step 3's action: its tick
        result = agent.run({"out": str(tmp_path / "out")})
        assert result.status == "final", result.error
        assert proxy.cut.is_set(), "the fault did fire"
        _every_step_once(store, agent.run_id, tmp_path / "out")
    finally:
        store.close()


def test_a_run_claimed_elsewhere_while_disconnected_stops_and_resumes_later(postgres_url: str, tmp_path: Path) -> None:
    from sherpa_skills.engine.agent import Agent

    store = RunStore(home=tmp_path / "home", database=postgres_url)
    admin = _admin(postgres_url)
    holder = _admin(postgres_url)
    agent: Any = None

    def terminate_and_claim() -> None:
        admin.execute("SELECT pg_terminate_backend(%s)", (store.conn.raw.info.backend_pid,))  # type: ignore[attr-defined]
        assert holder.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))", (0x5348, agent.run_id)).fetchone()[0]

    workflow = _workflow(terminate_and_claim)
    try:
        agent = workflow.agent(store=store)
        store.claims.claim(agent.run_id)  # held, as a resumed run's is
        stopped = agent.run({"out": str(tmp_path / "out")})
        assert stopped.status == "error" and "claimed by another process" in (stopped.error or "")
        row = store.get_run(agent.run_id)
        assert row.status == "running" and row.error is None, "the other process's run: nothing recorded over it"
        assert store.claims.mine == set()
        # The other process stops. Its lock is let go explicitly: a closed connection's backend releases it a moment
        # after the client returns, which raced the resume below on a loaded machine.
        holder.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", (0x5348, agent.run_id))
        holder.close()
        resumed = Agent.resume(store, agent.run_id, workflow.machine, workflow.policy, registry=workflow.registry)
        result = resumed.run()
        assert result.status == "final", result.error
        ticks = [t[0] for t in store.steps(agent.run_id)]
        assert ticks == list(range(len(ticks)))
        assert sorted(set(int(x) for x in (tmp_path / "out").read_text().split())) == list(range(STEPS))
    finally:
        admin.close()
        store.close()
