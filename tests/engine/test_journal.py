"""The run's journal at its door: one protocol, kept in memory or in a real SQLite RunStore; the tick path calls it
without asking which (no `store is not None` left in the tick, the flows or the inbox)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sherpa_skills.engine.run import journal as journal_module
from sherpa_skills.engine.run.journal import MemoryJournal, StoreJournal
from sherpa_skills.engine.runstore import RunStore
from sherpa_skills.engine.workflow import load_workflow_text

ENGINE_RUN = Path(journal_module.__file__).parent

ONE_STEP = """
name: one_step
initial: start
states:
  start:
    transitions: [{trigger: go, dest: done}]
  done:
    final: true
"""


def test_an_agent_without_a_store_journals_in_memory_and_keeps_nothing() -> None:
    agent = load_workflow_text(ONE_STEP).agent(learn=False)
    assert isinstance(agent.journal, MemoryJournal)
    result = agent.run()
    assert result.status == "final"
    # Nothing to claim, nothing recorded, nothing to resume from.
    assert agent.journal.hold(started=True) is False
    assert agent.journal.in_flight is None and agent.journal.interrupted == []


def test_the_memory_journal_refuses_an_event_it_consumed() -> None:
    journal = MemoryJournal()
    assert journal.consumed("e1") is None
    journal.consume("e1")
    assert journal.consumed("e1") == "handled"
    assert journal.consumed("e2") is None


def test_a_store_journal_names_only_the_action_a_crash_cut_off_as_repeated(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.db")
    agent = load_workflow_text(ONE_STEP).agent(store=store, learn=False)
    assert isinstance(agent.journal, StoreJournal)
    agent.run()
    journal = StoreJournal(store, agent.run_id)
    journal.start(7, 0, "write_file", None)  # started, never done: what a kill -9 leaves
    journal.load()
    assert [(i.tick, i.seq, i.action) for i in journal.interrupted] == [(7, 0, "write_file")]
    assert journal.start(7, 0, "write_file", None) is True
    assert journal.start(7, 1, "write_file", None) is False  # another position in the same tick
    assert journal.start(8, 0, "write_file", None) is False  # the same position in another tick
    assert journal.start(7, 0, "other", None) is False


@pytest.mark.parametrize("module", ["tick.py", "flows.py", "inbox.py", "journal.py"])
def test_the_tick_path_never_asks_whether_there_is_a_store(module: str) -> None:
    text = (ENGINE_RUN / module).read_text(encoding="utf-8")
    assert not re.search(r"store is (not )?None", text), module
    if module != "journal.py":
        assert "agent.store" not in text, module


def test_agent_has_no_store_branch_outside_its_construction() -> None:
    source = (ENGINE_RUN.parent / "agent.py").read_text(encoding="utf-8")
    assert source.count("store is not None") == 2  # the journal chosen, and `home` found, in __init__
