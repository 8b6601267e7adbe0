"""The borderline verifier: one short structured question decides a candidate the matcher is not sure of; a no,
an unusable answer or a failed call is a no-match with the reason, and every call and token is counted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sherpa_skills.errors import ModelError
from sherpa_skills.skills.matcher import Matcher
from sherpa_skills.skills.models import CapturedProcedure, ProcedureStep
from sherpa_skills.skills.store import SkillStore
from sherpa_skills.skills.verifier import MODEL_ENV, Verifier, response_format, verifier_from_env

PROCEDURES = [
    ("restart-web", "Restart the nginx web server after a config change", ["nginx -t", "systemctl reload nginx"]),
    ("db-backup", "Dump the postgres database to a compressed file", ["pg_dump app > app.sql", "gzip app.sql"]),
    ("greet", "write a greeting for someone", ["echo hello {{ name }}"]),
    ("old-logs", "Find files in /var/log modified more than 60 minutes ago", ["find /var/log -mmin +60"]),
]
GREET = "say hello to Ada Lovelace"


@pytest.fixture
def store(tmp_path: Path) -> SkillStore:
    store = SkillStore(tmp_path / "store.db")
    matcher = Matcher(store)
    for task_type, description, commands in PROCEDURES:
        p = store.add_procedure(CapturedProcedure(id="", task_type=task_type, description=description, success_count=2,
                                                  steps=[ProcedureStep(command=c) for c in commands]))
        assert matcher.index(p) is None
    return store


def script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "verifier.yaml"
    path.write_text(body, encoding="utf-8")
    return f"scripted/{path}"


def borderline(store: SkillStore, query: str, model: str) -> tuple[Matcher, Verifier]:
    """A verifier whose band starts just under this query's best score, so the question is asked."""
    matcher = Matcher(store)
    plain = matcher.match(query)
    assert plain.decision == "no-match" and plain.candidates
    best = plain.candidates[0]
    assert best.score < matcher.floor and not best.literals_disagreed
    return matcher, Verifier(model, lower=best.score - 0.01)


class TestAnswers:
    def test_yes_selects_the_candidate_with_declared_parameters_and_counts_the_call(self, store: SkillStore, tmp_path: Path) -> None:
        """A borderline candidate the verifier confirms is replayed; the parameter it names is filled from the task."""
        model = script(tmp_path, f"""
answers:
  - match: "Task: {GREET}.*Parameters: name"
    respond: {{same_task: true, params: {{name: "Ada Lovelace"}}}}
""")
        matcher, verifier = borderline(store, GREET, model)
        decision = matcher.match(GREET, verify=verifier)
        assert decision.decision == "match" and decision.selected and decision.selected.task_type == "greet"
        assert decision.params == {"name": "Ada Lovelace"}
        assert decision.verification and decision.verification.same_task and decision.llm_calls == 1 and decision.tokens > 0

    def test_no_is_no_match_with_the_reason(self, store: SkillStore, tmp_path: Path) -> None:
        model = script(tmp_path, """
answers:
  - match: "Task: "
    respond: {same_task: false, params: {}}
""")
        matcher, verifier = borderline(store, GREET, model)
        decision = matcher.match(GREET, verify=verifier)
        assert decision.decision == "no-match" and "not this task" in (decision.reason or "")
        assert decision.llm_calls == 1 and decision.tokens > 0
        assert "borderline" in (decision.candidates[0].reason or "")

    def test_a_malformed_answer_is_asked_again_once(self, store: SkillStore, tmp_path: Path) -> None:
        """Prose instead of JSON: one more question saying what was wrong, and its good answer counts."""
        model = script(tmp_path, """
answers:
  - match: "cannot be used: the answer is not"
    respond: '```json\n{"same_task": true, "params": {"name": "Ada"}}\n```'
  - match: "Task: "
    respond: "Yes, I think so."
""")
        matcher, verifier = borderline(store, GREET, model)
        decision = matcher.match(GREET, verify=verifier)
        assert decision.decision == "match" and decision.params == {"name": "Ada"} and decision.llm_calls == 2

    def test_malformed_twice_is_no_match(self, store: SkillStore, tmp_path: Path) -> None:
        model = script(tmp_path, """
answers:
  - match: "."
    respond: '{"same_task": "maybe"}'
""")
        matcher, verifier = borderline(store, GREET, model)
        decision = matcher.match(GREET, verify=verifier)
        assert decision.decision == "no-match" and "unusable twice" in (decision.reason or "") and decision.llm_calls == 2

    def test_an_undeclared_parameter_is_refused(self, store: SkillStore, tmp_path: Path) -> None:
        """The procedure takes `name`; an answer that sets `cmd` is not used, however sure it sounds."""
        model = script(tmp_path, """
answers:
  - match: "."
    respond: {same_task: true, params: {cmd: "rm -rf /"}}
""")
        matcher, verifier = borderline(store, GREET, model)
        decision = matcher.match(GREET, verify=verifier)
        assert decision.decision == "no-match" and "undeclared parameters: cmd" in (decision.reason or "")
        assert decision.params == {} and decision.llm_calls == 2

    def test_a_value_the_task_does_not_state_is_refused(self, store: SkillStore, tmp_path: Path) -> None:
        model = script(tmp_path, """
answers:
  - match: "."
    respond: {same_task: true, params: {name: "Bob"}}
""")
        matcher, verifier = borderline(store, GREET, model)
        decision = matcher.match(GREET, verify=verifier)
        assert decision.decision == "no-match" and "does not state" in (decision.reason or "")

    def test_a_failing_model_is_no_match_not_a_crash(self, store: SkillStore, tmp_path: Path) -> None:
        """The script has no answer for this prompt: the call fails, the decision says so, the call is counted."""
        model = script(tmp_path, """
answers:
  - match: "something else entirely"
    respond: {same_task: true, params: {}}
""")
        matcher, verifier = borderline(store, GREET, model)
        decision = matcher.match(GREET, verify=verifier)
        assert decision.decision == "no-match" and "the verifier failed" in (decision.reason or "") and decision.llm_calls == 1


class TestBand:
    def test_only_the_band_is_asked(self, store: SkillStore, tmp_path: Path) -> None:
        """Above the floor the matcher decides alone; below the band's lower edge nothing is asked either."""
        model = script(tmp_path, """
answers:
  - match: "."
    respond: {same_task: true, params: {}}
""")
        matcher = Matcher(store)
        sure = matcher.match("db backup", verify=Verifier(model, lower=0.0))
        assert sure.decision == "match" and sure.verification is None and sure.llm_calls == 0
        below = matcher.match("what is the weather in Paris", verify=Verifier(model, lower=0.99))
        assert below.decision == "no-match" and below.verification is None and below.llm_calls == 0

    def test_a_literal_disagreement_is_never_asked(self, store: SkillStore, tmp_path: Path) -> None:
        model = script(tmp_path, """
answers:
  - match: "."
    respond: {same_task: true, params: {}}
""")
        decision = Matcher(store).match("Find files in /var/log modified more than 7 days ago", verify=Verifier(model, lower=0.5))
        old = next(c for c in decision.candidates if c.task_type == "old-logs")
        assert decision.procedure_id != old.procedure_id and (old.reason or "").startswith("literals disagree")

    def test_the_schema_names_declared_parameters_only(self) -> None:
        schema = response_format(["name"])["json_schema"]["schema"]
        assert schema["properties"]["params"] == {"type": "object", "properties": {"name": {"type": "string"}},
                                                  "additionalProperties": False}

    def test_off_unless_a_model_is_named(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv(MODEL_ENV, raising=False)
        assert verifier_from_env() is None
        monkeypatch.setenv(MODEL_ENV, "scripted/x.yaml")
        assert (v := verifier_from_env()) is not None and v.model == "scripted/x.yaml"
        with pytest.raises(ModelError, match="needs a model name"):
            Verifier("  ")
