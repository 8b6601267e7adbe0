"""`graph`: Mermaid for workflows, built-in machines and team files; nothing drawn out of a final state."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sherpa_skills import load_workflow_text
from sherpa_skills.cli import main
from sherpa_skills.engine.diagram import to_mermaid

ROOT = Path(__file__).resolve().parents[2]


def graph(capsys: pytest.CaptureFixture[str], target: str) -> tuple[int, str, str]:
    code = main(["graph", target])
    out, err = capsys.readouterr()
    return code, out, err


def edges(text: str) -> list[tuple[str, str, str]]:
    return [m.groups() for m in re.finditer(r"^\s*(\S+) --> (\S+)(?: : (.*))?$", text, re.M)]


class TestFinalStates:
    def test_no_edge_leaves_a_final_state(self, capsys):
        """`cancel` from "*" is drawn from the states that can still move, never `sent --> rejected`."""
        code, out, _ = graph(capsys, str(ROOT / "examples" / "support_triage" / "workflow.yaml"))
        assert code == 0
        drawn = edges(out)
        assert ("sent", "[*]", None) in drawn and ("rejected", "[*]", None) in drawn
        assert [e for e in drawn if e[0] in ("sent", "rejected") and e[1] != "[*]"] == []
        assert ("intake", "rejected", "cancel") in drawn and ("respond", "rejected", "cancel") in drawn

    def test_an_explicit_transition_out_of_a_final_state_is_not_drawn(self):
        machine = load_workflow_text("""
name: f
initial: a
states: {a: {}, b: {final: true}}
transitions:
  - {trigger: go, source: a, dest: b}
  - {trigger: back, source: b, dest: a}
""").machine
        assert [e for e in edges(to_mermaid(machine)) if e[2] == "back"] == []


class TestBuiltins:
    @pytest.mark.parametrize("name", ["planner", "replay", "capture", "heartbeat"])
    def test_a_built_in_machine_by_name(self, capsys, name):
        """`graph planner` works like `run planner`: built-in names find the shipped machine."""
        code, out, err = graph(capsys, name)
        assert (code, err) == (0, "")
        assert out.startswith("stateDiagram-v2\n") and edges(out)

    def test_an_unknown_name_still_says_no_such_file(self, capsys):
        code, _, err = graph(capsys, "plannr")
        assert code == 2 and "plannr:1: no such file" in err


class TestTeams:
    def test_a_team_file_draws_agents_topics_and_machines(self, capsys):
        """`graph team.yaml` (which `validate` accepts) draws each agent's machine,
        who hears which topic and who emits what."""
        code, out, err = graph(capsys, str(ROOT / "examples" / "critic_loop" / "team.yaml"))
        assert (code, err) == (0, "")
        drawn = edges(out)
        assert "state worker {" in out and "state critic {" in out and "state aggregator {" in out
        assert ("[*]", "topic__tasks", "task") in drawn
        assert ("topic__tasks", "worker", "heard by") in drawn and ("topic__drafts", "critic", "heard by") in drawn
        assert ("worker", "topic__drafts", "emits draft") in drawn and (
            "critic",
            "topic__reviews",
            "emits approved",
        ) in drawn
        assert ("worker__idle", "worker__drafting", "task") in drawn
        ids = re.findall(r" as (\S+)$", out, re.M)
        assert len(ids) == len(set(ids))  # each agent's states are its own, even where names repeat (idle, done)

    def test_a_broken_team_file_lists_its_problems(self, write_file, capsys):
        path = write_file("team.yaml", "name: t\nagents:\n  a: {workflow: missing.yaml}\n")
        code, out, err = graph(capsys, str(path))
        assert code == 2 and out == "" and "missing.yaml" in err and "Traceback" not in err
