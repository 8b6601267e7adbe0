"""Shared memory from YAML workflows run by the engine (`memory_write`, `memory_search`) and from the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sherpa_skills.cli import main
from sherpa_skills.engine.runstore import RunStore
from sherpa_skills.engine.workflow import load_workflow
from sherpa_skills.errors import WorkflowError
from sherpa_skills.memory import SharedMemory

WRITER = """
name: alice
inputs:
  topic: {default: the flaky integration suite}
initial: investigate
states:
  investigate:
    on_enter:
      - memory_write: {text: "Hunch: it is the clock again, do not tell anyone yet", kind: hunch}
        save_as: hunch
      - memory_write:
          text: "Finding on {{ topic }}: tests fail whenever the system clock jumps forward"
          scope: shared
          kind: finding
          tags: [ci]
          metadata: {severity: high}
        save_as: finding
      - memory_write: {text: "CI deploy key is AWS_SECRET_ACCESS_KEY=abcdEFGHijklMNOPqrstUVWXyz0123456789ABCD",
                       scope: shared}
    transitions: [{trigger: next, dest: recall}]
  recall:
    on_enter:
      - memory_search: {query: "what breaks the tests when time changes", limit: 5}
        save_as: recalled
    transitions: [{trigger: next, dest: done}]
  done: {final: true}
"""

READER = """
name: bob
inputs:
  question: {required: true}
initial: ask
states:
  ask:
    on_enter:
      - memory_search: {query: "{{ question }}", limit: 10}
        save_as: answers
      - memory_search: {query: "{{ question }}", scope: private}
        save_as: mine
      - memory_search: {query: "{{ question }}", kind: finding, metadata: {severity: high}, mode: lexical}
        save_as: findings
    transitions: [{trigger: next, dest: done}]
  done: {final: true}
"""


def run(tmp_path: Path, name: str, text: str, inputs: dict | None = None):
    path = tmp_path / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    store = RunStore(home=home)
    try:
        return load_workflow(path).agent(store=store, name=name).run(inputs or {})
    finally:
        store.close()


class TestActionsInWorkflows:
    def test_agents_share_artifacts_and_keep_their_notes(self, tmp_path: Path) -> None:
        alice = run(tmp_path, "alice", WRITER)
        assert alice.status == "final", alice.error
        ctx = alice.context
        assert ctx["hunch"]["agent"] == "alice" and ctx["hunch"]["scope"] == "private" and ctx["hunch"]["indexed"]
        assert ctx["finding"]["scope"] == "shared" and ctx["finding"]["tags"] == ["ci"]
        recalled = ctx["recalled"]
        assert recalled["mode"] == "hybrid" and recalled["degraded"] is None
        assert recalled["hits"][0]["id"] == ctx["finding"]["id"]  # her own private hunch is hers to find too
        assert ctx["hunch"]["id"] in {h["id"] for h in recalled["hits"]}

        bob = run(tmp_path, "bob", READER, {"question": "does the system clock make the tests fail?"})
        assert bob.status == "final", bob.error
        seen = {h["id"]: h for h in bob.context["answers"]["hits"]}
        assert ctx["finding"]["id"] in seen and ctx["hunch"]["id"] not in seen
        assert seen[ctx["finding"]["id"]]["text"].startswith("Finding on the flaky integration suite")
        assert bob.context["mine"]["hits"] == []
        assert [h["id"] for h in bob.context["findings"]["hits"]] == [ctx["finding"]["id"]]
        assert bob.context["findings"]["mode"] == "lexical"

    def test_writes_from_actions_are_redacted(self, tmp_path: Path) -> None:
        assert run(tmp_path, "alice", WRITER).status == "final"
        with SharedMemory(tmp_path / "home") as m:
            hits = m.search("CI deploy key", agent="alice", mode="lexical").hits
            assert hits and "[REDACTED]" in hits[0].artifact.text
        for path in (tmp_path / "home").rglob("*"):
            if path.is_file():
                assert b"abcdEFGHijklMNOPqrstUVWXyz0123456789ABCD" not in path.read_bytes(), path

    def test_a_bad_scope_is_a_load_error_with_its_line(self, tmp_path: Path) -> None:
        path = tmp_path / "bad.yaml"
        text = WRITER.replace("scope: shared}", "scope: public}")
        path.write_text(text, encoding="utf-8")
        line = next(n for n, row in enumerate(text.splitlines(), 1) if "scope: public" in row)
        with pytest.raises(WorkflowError) as caught:
            load_workflow(path)
        assert any(
            p.file.endswith("bad.yaml")
            and p.line == line
            and "scope" in p.message
            and "'private' or 'shared'" in p.message
            for p in caught.value.problems
        ), caught.value.problems
        path.write_text(WRITER.replace("kind: hunch}", "kind: hunch, agent: bob}"), encoding="utf-8")
        with pytest.raises(WorkflowError, match="has no argument 'agent'"):
            load_workflow(path)  # an action cannot write as another agent

    def test_empty_text_at_run_time_fails_the_run_with_a_clear_error(self, tmp_path: Path) -> None:
        text = READER.replace(
            'memory_search: {query: "{{ question }}", limit: 10}', 'memory_write: {text: "{{ question }}"}'
        )
        result = run(tmp_path, "bob", text, {"question": "   "})
        assert result.status == "error" and "memory_write" in result.error and "text is empty" in result.error


class TestCli:
    def test_write_search_stats_reindex(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        home = str(tmp_path / "home")
        assert (
            main(
                [
                    "memory",
                    "write",
                    "Restart nginx after editing its configuration",
                    "--agent",
                    "ops",
                    "--shared",
                    "--kind",
                    "runbook",
                    "--meta",
                    "service=web",
                    "--json",
                    "--home",
                    home,
                ]
            )
            == 0
        )
        shared = json.loads(capsys.readouterr().out)
        assert shared["scope"] == "shared" and shared["metadata"] == {"service": "web"} and shared["indexed"]
        assert (
            main(["memory", "write", "ops private: nginx keeps crashing on Mondays", "--agent", "ops", "--home", home])
            == 0
        )
        capsys.readouterr()

        assert (
            main(["memory", "search", "reload the web server after changing settings", "--json", "--home", home]) == 0
        )
        found = json.loads(capsys.readouterr().out)
        assert found["mode"] == "hybrid" and [h["id"] for h in found["hits"]] == [shared["id"]]
        assert main(["memory", "search", "nginx", "--agent", "ops", "--limit", "1", "--json", "--home", home]) == 0
        assert len(json.loads(capsys.readouterr().out)["hits"]) == 1
        assert main(["memory", "search", "nginx", "--agent", "ops", "--home", home]) == 0
        assert "nginx keeps crashing" in capsys.readouterr().out

        assert main(["memory", "stats", "--json", "--home", home]) == 0
        stats = json.loads(capsys.readouterr().out)
        assert stats["artifacts"] == 2 and stats["per_scope"] == {"private": 1, "shared": 1}
        assert stats["per_agent"] == {"ops": {"private": 1, "shared": 1}}
        assert stats["companion"]["ok"] and stats["companion"]["items"] == 2
        assert main(["memory", "stats", "--home", home]) == 0
        assert "companion ok" in capsys.readouterr().out

        assert main(["memory", "reindex", "--json", "--home", home]) == 0
        assert json.loads(capsys.readouterr().out)["artifacts"] == 2

    def test_bad_input_is_a_message_and_exit_2(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        home = str(tmp_path / "home")
        assert main(["memory", "write", "  ", "--agent", "ops", "--home", home]) == 2
        assert "text is empty" in capsys.readouterr().err
        assert main(["memory", "search", "x", "--scope", "private", "--home", home]) == 2
        assert "private notes are read by their author" in capsys.readouterr().err
        with pytest.raises(SystemExit) as refused:  # argparse refuses a count below 1 itself, as for every --limit
            main(["memory", "search", "x", "--limit", "0", "--home", home])
        assert refused.value.code == 2
        (tmp_path / "home" / "config.yaml").write_text("memory: {chroma: 'not an address'}\n")
        assert main(["memory", "stats", "--home", home]) == 0  # the store still answers
        assert "not a chroma server address" in capsys.readouterr().out
        assert main(["memory", "reindex", "--home", home]) == 2
        assert "HOST:PORT" in capsys.readouterr().err
