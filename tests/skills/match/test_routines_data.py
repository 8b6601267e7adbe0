"""Everyday routines (SHERPA_SKILLS_LEARNING_DATA/routines_dev.json) among 150 NL2Bash procedures
(SHERPA_SKILLS_MATCHING_DATA), each captured three times: said nearly the same way they replay, near misses and
unrelated asks never do. Skipped, saying so, without the shared data; the figures are bench/match_ask_bench.py's."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import sherpa_skills as sk

LEARNING, MATCHING = os.environ.get("SHERPA_SKILLS_LEARNING_DATA"), os.environ.get("SHERPA_SKILLS_MATCHING_DATA")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (LEARNING and MATCHING),
        reason="needs SHERPA_SKILLS_LEARNING_DATA and SHERPA_SKILLS_MATCHING_DATA (the shared data; .ci/run sets them)",
    ),
]


def _routines_among_others(skill_store: sk.SkillStore) -> tuple[dict, dict[str, str]]:
    """The shared routines, each captured three times, among 150 NL2Bash procedures: the data and each routine's id."""
    from sherpa_skills.skills.store.models import CapturedProcedure, ProcedureStep

    rows = [json.loads(line) for line in (Path(str(MATCHING)) / "nl2bash-dev.jsonl").read_text().splitlines()[:150]]
    for i, row in enumerate(rows):
        skill_store.store.add_procedure(
            CapturedProcedure(
                id=f"n{i:04d}",
                task_type=row["command"].split()[0].rsplit("/", 1)[-1].lower() or "shell",
                description=row["descriptions"][0],
                steps=[ProcedureStep(command=row["command"])],
                success_count=2,
            )
        )
    skill_store.matcher.refresh()
    data = json.loads((Path(str(LEARNING)) / "routines_dev.json").read_text())
    ids = {}
    for r in data["procedures"]:
        for _ in range(3):
            captured = skill_store.capture(r["task"], r["steps"], description=r["description"])
        ids[r["task"]] = captured.procedure.id  # type: ignore[union-attr]
    return data, ids


def test_routines_replay_when_said_alike_and_near_misses_never(skill_store: sk.SkillStore) -> None:
    data, ids = _routines_among_others(skill_store)
    close = [skill_store.match(r["close"]).procedure_id == ids[r["task"]] for r in data["procedures"]]
    assert sum(close) >= 14, close
    for r in data["procedures"]:
        for kind in ("medium", "far"):
            assert skill_store.match(r[kind]).procedure_id in (None, ids[r["task"]]), r[kind]  # never a wrong one
    for task in data["near_misses"] + data["unrelated"]:
        assert skill_store.match(task).decision != "match", task
    assert sum(skill_store.match(t).decision == "needs-confirmation" for t in data["unrelated"]) <= 1


def test_a_confirmed_wording_never_makes_a_near_miss_or_an_unrelated_ask_replay(skill_store: sk.SkillStore) -> None:
    """One wording per routine confirmed: another wording replays its own routine or nothing, and what is not about a
    routine (its near miss, an unrelated ask) still never replays."""
    data, ids = _routines_among_others(skill_store)
    for r in data["procedures"]:
        skill_store.confirm(r["medium"], ids[r["task"]])
    far = [skill_store.match(r["far"]).procedure_id for r in data["procedures"]]
    assert all(found in (None, ids[r["task"]]) for found, r in zip(far, data["procedures"], strict=True)), far
    assert any(found is not None for found in far)  # the aliases do vouch for some
    for task in data["near_misses"] + data["unrelated"]:
        assert skill_store.match(task).decision != "match", task
