"""Domains: an agent's decisions, status and changelog carried across separate runs, proposals a person accepts,
and the refusals (another agent's domain, no domain, bad names and values)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sherpa_skills.cli import main
from sherpa_skills.engine.workflow import load_workflow
from sherpa_skills.errors import UsageError, WorkflowError
from sherpa_skills.memory import SharedMemory
from sherpa_skills.memory.domains import MAX_CHANGELOG, Domains

CRON = """
name: triage
domain: triage
initial: wake
states:
  wake:
    on_enter:
      - set:
          seen_status: "{{ domain.status }}"
          threshold: "{{ domain.decisions.threshold | default('unset') }}"
          briefed: "{{ domain.briefing | map(attribute='text') | join(' | ') }}"
      - memory_write: {text: "queue depth rule: page above 50 items", abstraction: principle}
      - domain_status: {status: {last_threshold: "{{ threshold }}", note: "checked the queue"}}
      - domain_log: {entry: "looked at the queue"}
      - domain_propose: {key: threshold, value: 75, reason: "50 pages too often at night"}
        save_as: proposal
    final: true
"""


def run_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str, file: str = "triage.yaml") -> dict:
    assert main(["run", str(tmp_path / file), "--json", "--home", str(tmp_path / "home"), *extra]) in (0, 1)
    return json.loads(capsys.readouterr().out)


class TestAcrossRuns:
    def test_status_and_decisions_carry_over_and_a_proposal_is_accepted(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        (tmp_path / "triage.yaml").write_text(CRON, encoding="utf-8")
        home = str(tmp_path / "home")
        first = run_cli(tmp_path, capsys, "--agent", "ops")
        assert first["status"] == "final", first["error"]
        ctx = first["context"]
        assert ctx["domain"]["status"] is None and ctx["threshold"] == "unset" and ctx["domain"]["decisions"] == {}

        assert (
            main(
                [
                    "domains",
                    "decide",
                    "triage",
                    "threshold=50",
                    "quiet_hours=[22, 7]",
                    "--operator",
                    "sam",
                    "--home",
                    home,
                ]
            )
            == 0
        )
        capsys.readouterr()
        second = run_cli(tmp_path, capsys, "--agent", "ops")["context"]
        assert (
            second["domain"]["decisions"] == {"quiet_hours": [22, 7], "threshold": 50}
            and str(second["threshold"]) == "50"
        )
        assert second["domain"]["status"] == {
            "last_threshold": "unset",
            "note": "checked the queue",
        }  # written by run 1
        assert "queue depth rule" in second["briefed"]  # its own principle, from shared memory
        assert [r["kind"] for r in second["domain"]["recent"]][:3] == ["decision", "decision", "run"]

        assert main(["domains", "--json", "--home", home]) == 0
        listed = json.loads(capsys.readouterr().out)
        [d] = listed["domains"]
        assert (d["name"], d["agent"], d["runs"], d["last_outcome"], d["stale"]) == ("triage", "ops", 2, "final", False)
        assert [p["value"] for p in listed["proposals"]] == [75, 75] and d["open_proposals"] == 2
        pid = second["proposal"]["proposal"]
        assert main(["domains", "accept", pid, "--operator", "sam", "--json", "--home", home]) == 0
        assert json.loads(capsys.readouterr().out)["status"] == "accepted"
        third = run_cli(tmp_path, capsys, "--agent", "ops")["context"]
        assert third["domain"]["decisions"]["threshold"] == 75 and str(third["threshold"]) == "75"
        assert main(["domains", "accept", pid, "--operator", "sam", "--home", home]) == 2
        assert "already accepted" in capsys.readouterr().err
        assert main(["domains", "show", "triage", "--json", "--home", home]) == 0
        shown = json.loads(capsys.readouterr().out)
        assert shown["runs"] == 3 and shown["decisions"]["threshold"] == 75
        assert sum(1 for c in shown["changelog"] if c["kind"] == "run") == 3
        assert any(c["entry"] == "looked at the queue" for c in shown["changelog"])
        with SharedMemory(tmp_path / "home") as m:  # the principle was written once and seen three times
            [hit] = m.search("queue depth rule", agent="ops", mode="lexical").hits
            assert hit.artifact.seen == 3

    def test_a_team_member_declares_its_domain_in_the_team_file(self, tmp_path: Path) -> None:
        from sherpa_skills.agents.team import TeamRunner, load_team
        from sherpa_skills.engine.runstore import RunStore

        (tmp_path / "w.yaml").write_text(
            """
name: w
initial: idle
states:
  idle: {waiting: true}
  done:
    on_enter: {domain_status: {status: "handled {{ args_seen | default('a task') }}"}}
    final: true
transitions: [{trigger: go, source: idle, dest: done}]
""",
            encoding="utf-8",
        )
        (tmp_path / "team.yaml").write_text(
            """
name: t
agents:
  alpha: {workflow: w.yaml, subscribe: [x], domain: alpha-work}
initial_event: {name: go, topic: x}
""",
            encoding="utf-8",
        )
        store = RunStore(home=tmp_path / "home")
        try:
            assert TeamRunner(load_team(tmp_path / "team.yaml"), store=store).run().status == "done"
        finally:
            store.close()
        with Domains(home=tmp_path / "home") as d:
            got = d.get("alpha-work")
            assert (got["agent"], got["status"], got["runs"]) == ("alpha", "handled a task", 1)


class TestRefusals:
    def test_another_agent_cannot_use_a_domain_it_does_not_own(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        (tmp_path / "triage.yaml").write_text(CRON, encoding="utf-8")
        assert run_cli(tmp_path, capsys, "--agent", "ops")["status"] == "final"
        intruder = run_cli(tmp_path, capsys, "--agent", "mallory")
        assert intruder["status"] == "error" and "belongs to agent 'ops'" in intruder["error"]
        assert "domain" not in intruder["context"]
        with Domains(home=tmp_path / "home") as d:
            assert d.get("triage")["runs"] == 1 and d.get("triage")["agent"] == "ops"
            with pytest.raises(UsageError, match="not agent 'mallory'"):
                d.set_status("triage", "mallory", "owned")
            with pytest.raises(UsageError, match="not agent 'mallory'"):
                d.propose("triage", "mallory", "threshold", 1)

    def test_a_spoofed_context_cannot_reach_another_domain(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A workflow without a domain that writes `domain` into its own context still acts as itself."""
        (tmp_path / "triage.yaml").write_text(CRON, encoding="utf-8")
        assert run_cli(tmp_path, capsys, "--agent", "ops")["status"] == "final"
        (tmp_path / "spoof.yaml").write_text(
            """
name: spoof
initial: s
states:
  s:
    on_enter:
      - set: {domain: {name: triage}}
      - domain_status: {status: "taken over"}
    final: true
""",
            encoding="utf-8",
        )
        out = run_cli(tmp_path, capsys, "--agent", "mallory", file="spoof.yaml")
        assert out["status"] == "error" and "not agent 'mallory'" in out["error"]
        (tmp_path / "plain.yaml").write_text(
            "name: plain\ninitial: s\nstates:\n  s:\n    on_enter: {domain_log: {entry: x}}\n    final: true\n",
            encoding="utf-8",
        )
        out = run_cli(tmp_path, capsys, file="plain.yaml")
        assert out["status"] == "error" and "declares no domain" in out["error"]

    def test_bad_names_and_values(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        bad = tmp_path / "bad.yaml"
        bad.write_text(CRON.replace("domain: triage", "domain: ../etc"), encoding="utf-8")
        with pytest.raises(WorkflowError) as caught:
            load_workflow(bad)
        assert any(p.line == 3 and "domain" in p.message for p in caught.value.problems), caught.value.problems
        home = str(tmp_path / "home")
        assert main(["domains", "decide", "nope", "x=1", "--operator", "sam", "--home", home]) == 2
        assert "no domain 'nope'" in capsys.readouterr().err
        assert main(["domains", "accept", "nope", "--operator", "sam", "--home", home]) == 2
        assert "no proposal" in capsys.readouterr().err
        with Domains(home=tmp_path / "home") as d:
            d.claim("big", "ops")
            with pytest.raises(UsageError, match="over the"):
                d.set_status("big", "ops", "x" * 5000)
            with pytest.raises(UsageError, match="decision key"):
                d.decide("big", "no spaces", 1, by="sam")
            with pytest.raises(UsageError, match="names who made it"):
                d.decide("big", "k", 1, by=" ")

    def test_the_changelog_rotates_and_the_start_context_stays_bounded(self, tmp_path: Path) -> None:
        with Domains(home=tmp_path / "home") as d:
            d.claim("busy", "ops")
            for n in range(MAX_CHANGELOG + 5):
                d.append("busy", f"entry {n} " + "x" * 100, agent="ops")
            d.set_status("busy", "ops", {"notes": "y" * 1900})
            for k in range(40):
                d.decide("busy", f"rule{k}", "z" * 1500, by="sam")
            assert len(d.changelog("busy", 1000)) == MAX_CHANGELOG and d.get("busy")["rotated"] == 45
            start = d.start_context("busy", "ops")
        assert len(json.dumps(start)) < 16_000 and len(start["recent"]) == 5


class TestQueueWatchExample:
    workflow = str(Path(__file__).resolve().parents[2] / "examples" / "queue_watch" / "workflow.yaml")

    def test_pages_proposes_and_the_next_run_uses_the_accepted_threshold(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        home = str(tmp_path / "home")
        assert main(["run", self.workflow, "--agent", "ops", "--input", "depth=80", "--json", "--home", home]) == 0
        first = json.loads(capsys.readouterr().out)
        assert first["state"] == "paging" and first["context"]["previous"] == "none"
        pid = first["context"]["proposal"]["proposal"]
        assert main(["domains", "accept", pid, "--operator", "sam", "--home", home]) == 0
        capsys.readouterr()
        assert main(["run", self.workflow, "--agent", "ops", "--input", "depth=80", "--json", "--home", home]) == 0
        second = json.loads(capsys.readouterr().out)
        assert second["state"] == "quiet" and str(second["context"]["threshold"]) == "90"
        assert str(second["context"]["previous"]) == "80"
