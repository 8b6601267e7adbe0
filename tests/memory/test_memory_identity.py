"""Whose private note is it: the identity that shared memory reads and writes as is the team member or the agent's
configured name, never a `name:` a workflow file declares about itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sherpa_skills.agents.team import TeamRunner, load_team
from sherpa_skills.cli import main
from sherpa_skills.engine.runstore import RunStore
from sherpa_skills.engine.workflow import load_workflow
from sherpa_skills.memory import SharedMemory

NOTE_TAKER = """
name: notetaker
initial: idle
states:
  idle: {waiting: true}
  noted:
    on_enter:
      - memory_write: {text: "{{ text }}"}
        save_as: wrote
      - memory_search: {query: "private note deploy", limit: 10, mode: lexical}
        save_as: seen
    final: true
transitions:
  - {trigger: note, source: idle, dest: noted, arguments: {text: {type: string}},
     before: {set: {text: "{{ args.text }}"}}}
"""

TEAM = """
name: pair
agents:
  a: {workflow: notetaker.yaml, subscribe: [a]}
  b: {workflow: notetaker.yaml, subscribe: [b]}
initial_event:
  - {name: note, topic: a, payload: {text: "a's private note: deploy with the blue key"}}
  - {name: note, topic: b, payload: {text: "b's private note: deploy on Fridays only"}}
"""

ALICE = """
name: alice
initial: write
states:
  write:
    on_enter:
      - memory_write: {text: "alice private note: the deploy password hint is her cat"}
        save_as: wrote
    final: true
"""

MALLORY = """
name: alice
initial: read
states:
  read:
    on_enter:
      - memory_search: {query: "private note deploy password", limit: 10, mode: lexical}
        save_as: seen
    final: true
"""


def texts(hits: list[dict]) -> list[str]:
    return [h["text"] for h in hits]


class TestTeamMembers:
    def test_two_members_of_one_workflow_keep_their_notes_apart(self, tmp_path: Path) -> None:
        """Both members run notetaker.yaml; each one's search returns only its own private note."""
        (tmp_path / "notetaker.yaml").write_text(NOTE_TAKER, encoding="utf-8")
        (tmp_path / "team.yaml").write_text(TEAM, encoding="utf-8")
        store = RunStore(home=tmp_path / "home")
        try:
            result = TeamRunner(load_team(tmp_path / "team.yaml"), store=store).run()
        finally:
            store.close()
        assert result.status == "done", result.error
        [a_run] = result.runs["a"].values()
        [b_run] = result.runs["b"].values()
        assert a_run.context["wrote"]["agent"] == "a" and b_run.context["wrote"]["agent"] == "b"
        assert texts(a_run.context["seen"]["hits"]) == ["a's private note: deploy with the blue key"]
        assert texts(b_run.context["seen"]["hits"]) == ["b's private note: deploy on Fridays only"]
        with SharedMemory(tmp_path / "home") as memory:  # the API, read as each member
            assert [h.artifact.agent for h in memory.search("private note deploy", agent="a", mode="lexical").hits] == [
                "a"
            ]
            assert [h.artifact.agent for h in memory.search("private note deploy", agent="b", mode="lexical").hits] == [
                "b"
            ]


class TestWorkflowNames:
    def test_declaring_another_workflows_name_reads_nothing_of_it(
        self, tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A second file that calls itself `alice` is not alice: its search, the CLI and the API show it none of her
        notes."""
        (tmp_path / "alice").mkdir()
        (tmp_path / "mallory").mkdir()
        (tmp_path / "alice" / "alice.yaml").write_text(ALICE, encoding="utf-8")
        (tmp_path / "mallory" / "alice.yaml").write_text(MALLORY, encoding="utf-8")
        store = RunStore(home=home)
        try:
            wrote = load_workflow(tmp_path / "alice" / "alice.yaml").agent(store=store).run()
            seen = load_workflow(tmp_path / "mallory" / "alice.yaml").agent(store=store).run()
            again = load_workflow(tmp_path / "alice" / "alice.yaml").agent(store=store).run()
        finally:
            store.close()
        alice = wrote.context["wrote"]["agent"]
        assert alice != "alice" and alice.startswith("alice@")  # bound to the file, not to what the file says
        assert again.context["wrote"]["agent"] == alice  # the same file is the same agent across runs
        assert seen.status == "final" and seen.context["seen"]["hits"] == []
        assert (
            main(
                [
                    "memory",
                    "search",
                    "private note deploy password",
                    "--agent",
                    "alice",
                    "--lexical",
                    "--json",
                    "--home",
                    str(home),
                ]
            )
            == 0
        )
        assert json.loads(capsys.readouterr().out)["hits"] == []
        with SharedMemory(home) as memory:
            assert memory.search("private note deploy password", agent="alice", mode="lexical").hits == []
            assert {
                h.artifact.agent
                for h in memory.search("private note deploy password", agent=alice, mode="lexical").hits
            } == {alice}

    def test_a_configured_name_is_the_identity(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """`run --agent NAME` (Agent(name=...)) writes and reads as NAME, whatever the workflow calls itself."""
        home = str(tmp_path / "home")
        (tmp_path / "alice.yaml").write_text(ALICE, encoding="utf-8")
        (tmp_path / "mallory.yaml").write_text(MALLORY, encoding="utf-8")
        assert main(["run", str(tmp_path / "alice.yaml"), "--agent", "ops", "--json", "--home", home]) == 0
        assert json.loads(capsys.readouterr().out)["context"]["wrote"]["agent"] == "ops"
        assert main(["run", str(tmp_path / "mallory.yaml"), "--json", "--home", home]) == 0
        assert json.loads(capsys.readouterr().out)["context"]["seen"]["hits"] == []
        assert main(["run", str(tmp_path / "mallory.yaml"), "--agent", "ops", "--json", "--home", home]) == 0
        assert len(json.loads(capsys.readouterr().out)["context"]["seen"]["hits"]) == 1
        assert main(["run", str(tmp_path / "alice.yaml"), "--agent", " ", "--home", home]) == 2
        assert "agent name" in capsys.readouterr().err
