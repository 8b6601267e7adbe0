"""`learn replay`'s third answer from the command line: `needs-confirmation` (exit 3) with its candidates, answered by
the caller (`--procedure ID` records an alias, `--reject` a rejection) or by the person at the terminal; `learn
aliases`, `learn forget` and `learn show` list and remove what was answered."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest

from sherpa_skills.cli import main

DEPLOY = "deploy the proxy configuration and restart the service"
ASKED = "push out the new proxy settings and bounce it"


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    code = main([*args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else None  # under --json, stdout is JSON only


@pytest.fixture
def home(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    home = str(tmp_path / "home")
    steps = tmp_path / "steps.yaml"
    steps.write_text(
        f"description: {DEPLOY}\nsteps: [{{command: 'echo cp proxy.conf /etc'}}, {{command: 'echo restart proxy'}}]\n"
    )
    other = tmp_path / "other.yaml"
    other.write_text("description: dump the postgres database to a file\nsteps: [{command: 'echo pg_dump app'}]\n")
    for _ in range(3):
        assert (
            cli(capsys, "learn", "capture-success", "deploy-proxy", "--steps-file", str(steps), "--home", home)[0] == 0
        )
        assert cli(capsys, "learn", "capture-success", "db-backup", "--steps-file", str(other), "--home", home)[0] == 0
    return home


def _deploy_id(capsys: pytest.CaptureFixture[str], home: str) -> str:
    _, procs = cli(capsys, "learn", "procedures", "--home", home)
    return next(p["id"] for p in procs if p["task_type"] == "deploy-proxy")


def test_needs_confirmation_has_its_own_exit_status_and_candidates(
    home: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = cli(capsys, "learn", "replay", ASKED, "--home", home)
    assert code == 3 and out["status"] == "needs-confirmation" and out["steps"] == []
    assert out["candidates"][0]["procedure_id"] == _deploy_id(capsys, home)
    assert set(out["candidates"][0]) == {"procedure_id", "description", "score", "params"}


def test_the_callers_answer_is_remembered_as_an_alias(home: str, capsys: pytest.CaptureFixture[str]) -> None:
    deploy = _deploy_id(capsys, home)
    code, out = cli(capsys, "learn", "replay", ASKED, "--procedure", deploy, "--home", home)
    assert code == 0 and out["status"] == "dry-run" and out["alias"]["id"].startswith("a")
    code, out = cli(capsys, "learn", "replay", ASKED, "--home", home)
    assert code == 0 and out["status"] == "dry-run" and out["procedure_id"] == deploy
    code, aliases = cli(capsys, "learn", "aliases", deploy, "--home", home)
    assert code == 0 and [(a["kind"], a["text"]) for a in aliases] == [("alias", ASKED)]
    code, shown = cli(capsys, "learn", "show", deploy, "--home", home)
    assert [a["text"] for a in shown["aliases"]] == [ASKED] and shown["rejections"] == []
    code, out = cli(capsys, "learn", "forget", aliases[0]["id"], "--home", home)
    assert code == 0 and out["forgotten"]["id"] == aliases[0]["id"]
    assert cli(capsys, "learn", "replay", ASKED, "--home", home)[0] == 3


def test_reject_is_remembered_and_not_asked_again(home: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = cli(capsys, "learn", "replay", ASKED, "--reject", "--home", home)
    assert code == 0 and out["status"] == "rejected" and out["rejected"][0]["kind"] == "rejection"
    code, out = cli(capsys, "learn", "replay", ASKED, "--home", home)
    assert code == 1 and out["status"] == "no-match" and out["candidates"] == []
    code, out = cli(capsys, "learn", "replay", ASKED, "--reject", "--home", home)
    assert code == 1 and out["status"] == "no-match" and "nothing to reject" in out["reason"]


def test_refusals_are_clear_errors_not_tracebacks(home: str, capsys: pytest.CaptureFixture[str]) -> None:
    deploy = _deploy_id(capsys, home)
    assert main(["learn", "replay", ASKED, "--reject", "--procedure", deploy, "--home", home]) == 2
    assert "--reject records" in capsys.readouterr().err
    assert main(["learn", "forget", "a999", "--home", home]) != 0
    assert "no alias 'a999'" in capsys.readouterr().err
    assert main(["learn", "forget", "x1", "--home", home]) != 0
    assert "not an alias or rejection id" in capsys.readouterr().err
    _, procs = cli(capsys, "learn", "procedures", "--home", home)
    backup = next(p["id"] for p in procs if p["task_type"] == "db-backup")
    assert (
        main(["learn", "replay", "dump the postgres database to /srv/b.gz", "--procedure", backup, "--home", home]) == 2
    )
    assert "literals disagree" in capsys.readouterr().err


@pytest.mark.parametrize(("answer", "status"), [("1\n", "dry-run"), ("n\n", "rejected")])
def test_the_person_at_the_terminal_is_asked_which_one(
    home: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, answer: str, status: str
) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Terminal(answer))
    code = main(["learn", "replay", ASKED, "--home", home])
    out = capsys.readouterr().out
    assert "which one? [1-" in out or "which one? [1-" in capsys.readouterr().err
    _, aliases = cli(capsys, "learn", "aliases", "--home", home)
    if status == "dry-run":
        assert code == 0 and [a["kind"] for a in aliases] == ["alias"]
    else:
        assert code == 1 and [a["kind"] for a in aliases] == ["rejection"]


def test_learn_floor_counts_what_people_answered_through_the_cli(home: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The store's own match floor (skills/match/floor.py): each answer is a point; too few keep the shipped floor."""
    deploy = _deploy_id(capsys, home)
    code, floors = cli(capsys, "learn", "floor", "--home", home)
    assert code == 0 and floors == [
        {
            "scope": "",
            "floor": 0.785,
            "basis": "shipped",
            "counted": 0,
            "wrong": 0,
            "claims": 0,
            "held": 0,
            "reason": ANY,
        }
    ]
    assert cli(capsys, "learn", "replay", ASKED, "--procedure", deploy, "--home", home)[0] == 0
    assert cli(capsys, "learn", "replay", "roll back the proxy settings", "--reject", "--home", home)[0] == 0
    code, [floor] = cli(capsys, "learn", "floor", "--home", home)
    assert (floor["counted"], floor["wrong"], floor["basis"]) == (2, 1, "shipped")
    assert "needs at least 49 answers" in floor["reason"]
    code, [scoped] = cli(capsys, "learn", "floor", "--task-type", "deploy-proxy", "--home", home)
    assert (code, scoped["scope"], scoped["counted"]) == (0, "deploy-proxy", 0)  # answers hold in their scope only


def test_learn_floor_refuses_a_task_type_nothing_is_known_of(home: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["learn", "floor", "--task-type", "deploy-proxxy", "--home", home]) == 2
    assert "no procedure of task type 'deploy-proxxy'" in capsys.readouterr().err
