"""`sherpa_skills.SkillStore`, the Python API: the docs' example runs as written, and the refusals hold."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import sherpa_skills as sk

PAGE = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "skill-store.md"


def docs_example() -> str:
    section = PAGE.read_text(encoding="utf-8").split("## From Python", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    assert blocks, "the skill-store guide's Python section shows an example"
    return blocks[0]


@pytest.mark.usefixtures("home")  # SHERPA_SKILLS_HOME is the example's home
def test_the_docs_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Capture, promote, match (and no-match), replay as a dry run — exactly as docs/how-to/skill-store.md shows."""
    monkeypatch.chdir(tmp_path)
    exec(compile(docs_example(), "skill-store.md", "exec"), {})
    out = capsys.readouterr().out
    assert "match rotate-logs-" in out and "no-match" in out and "dry-run" in out
    assert "mv app.log archive/app-monday.log" in out


def test_capture_keeps_given_steps_and_refuses_an_empty_list(skill_store: sk.SkillStore) -> None:
    skills = skill_store
    one = skills.capture("say-done", ["echo done"], description="say done")
    assert one.outcome == "captured" and one.procedure and [s.command for s in one.procedure.steps] == ["echo done"]
    assert one.procedure.confidence < 0.8  # one success is not proof
    with pytest.raises(sk.UsageError, match="at least one step"):
        skills.capture("nothing", [])


def test_match_decision_is_clean_data(skill_store: sk.SkillStore) -> None:
    """Task text (+ task type) in, decision out: selected or None, candidates with scores and reasons, parameters."""
    skills = skill_store
    p = skills.capture("clean-cache", ["rm -rf .cache/{{ what }}"], description="clear the cache").procedure
    assert p is not None
    skills.promote(p.id)
    decision = skills.match("clear the cache", task_type="clean-cache")
    assert isinstance(decision, sk.MatchDecision) and decision.decision == "match" and decision.procedure_id == p.id
    other = skills.match("clear the cache", task_type="another-type")
    assert other.decision == "no-match" and other.selected is None
    data = decision.model_dump(mode="json")
    assert {"decision", "selected", "candidates", "params", "reason", "floor", "mode"} <= set(data)
