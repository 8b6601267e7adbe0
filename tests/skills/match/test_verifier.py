"""The borderline verifier: one short structured question decides a candidate the matcher is not sure of; a no,
an unusable answer or a failed call is a no-match with the reason, and every call and token is counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sherpa_skills.errors import ModelError
from sherpa_skills.home import store_path
from sherpa_skills.skills.match.matcher import MatchDecision, Matcher
from sherpa_skills.skills.match.verifier import MODEL_ENV, Verifier, response_format, verifier_from_env
from sherpa_skills.skills.store.database import ProcedureDatabase
from sherpa_skills.skills.store.models import CapturedProcedure, ProcedureStep

PROCEDURES = [
    ("restart-web", "Restart the nginx web server after a config change", ["nginx -t", "systemctl reload nginx"]),
    ("db-backup", "Dump the postgres database to a compressed file", ["pg_dump app > app.sql", "gzip app.sql"]),
    ("greet", "write a greeting for someone", ["echo hello {{ name }}"]),
    ("old-logs", "Find files in /var/log modified more than 60 minutes ago", ["find /var/log -mmin +60"]),
]
GREET = "say hello to Ada Lovelace"


@pytest.fixture
def store(procedure_db: ProcedureDatabase) -> ProcedureDatabase:
    store = procedure_db
    matcher = Matcher(store)
    for task_type, description, commands in PROCEDURES:
        p = store.add_procedure(
            CapturedProcedure(
                id="",
                task_type=task_type,
                description=description,
                success_count=2,
                steps=[ProcedureStep(command=c) for c in commands],
            )
        )
        assert matcher.index(p) is None
    return store


def script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "verifier.yaml"
    path.write_text(body, encoding="utf-8")
    return f"scripted/{path}"


def borderline(store: ProcedureDatabase, query: str, model: str) -> tuple[Matcher, Verifier]:
    """A verifier whose band starts just under this query's best score, so the question is asked."""
    matcher = Matcher(store)
    plain = matcher.match(query)
    assert plain.decision == "no-match" and plain.candidates
    best = plain.candidates[0]
    assert best.score < matcher.floor and not best.literals_disagreed
    return matcher, Verifier(model, lower=best.score - 0.01)


def ask(store: ProcedureDatabase, tmp_path: Path, body: str) -> MatchDecision:
    """GREET matched with a verifier answering from this script, its band starting just under GREET's score."""
    matcher, verifier = borderline(store, GREET, script(tmp_path, body))
    return matcher.match(GREET, verify=verifier)


class TestAnswers:
    def test_yes_selects_the_candidate_with_declared_parameters_and_counts_the_call(
        self, store: ProcedureDatabase, tmp_path: Path
    ) -> None:
        """A borderline candidate the verifier confirms is replayed; the parameter it names is filled from the task."""
        model = script(
            tmp_path,
            f"""
answers:
  - match: "Task: {GREET}.*Parameters: name"
    respond: {{same_task: true, params: {{name: "Ada Lovelace"}}}}
""",
        )
        matcher, verifier = borderline(store, GREET, model)
        decision = matcher.match(GREET, verify=verifier)
        assert decision.decision == "match" and decision.selected and decision.selected.task_type == "greet"
        assert decision.params == {"name": "Ada Lovelace"}
        assert (
            decision.verification
            and decision.verification.same_task
            and decision.llm_calls == 1
            and decision.tokens > 0
        )

    def test_no_is_no_match_with_the_reason(self, store: ProcedureDatabase, tmp_path: Path) -> None:
        decision = ask(
            store,
            tmp_path,
            """
answers:
  - match: "Task: "
    respond: {same_task: false, params: {}}
""",
        )
        assert decision.decision == "no-match" and "not this task" in (decision.reason or "")
        assert decision.llm_calls == 1 and decision.tokens > 0
        assert "borderline" in (decision.candidates[0].reason or "")

    def test_a_malformed_answer_is_asked_again_once(self, store: ProcedureDatabase, tmp_path: Path) -> None:
        """Prose instead of JSON: one more question saying what was wrong, and its good answer counts."""
        decision = ask(
            store,
            tmp_path,
            """
answers:
  - match: "cannot be used: the answer is not"
    respond: '```json\n{"same_task": true, "params": {"name": "Ada"}}\n```'
  - match: "Task: "
    respond: "Yes, I think so."
""",
        )
        assert decision.decision == "match" and decision.params == {"name": "Ada"} and decision.llm_calls == 2

    def test_malformed_twice_is_no_match(self, store: ProcedureDatabase, tmp_path: Path) -> None:
        decision = ask(
            store,
            tmp_path,
            """
answers:
  - match: "."
    respond: '{"same_task": "maybe"}'
""",
        )
        assert (
            decision.decision == "no-match" and "unusable twice" in (decision.reason or "") and decision.llm_calls == 2
        )

    def test_an_undeclared_parameter_is_refused(self, store: ProcedureDatabase, tmp_path: Path) -> None:
        """The procedure takes `name`; an answer that sets `cmd` is not used, however sure it sounds."""
        decision = ask(
            store,
            tmp_path,
            """
answers:
  - match: "."
    respond: {same_task: true, params: {cmd: "rm -rf /"}}
""",
        )
        assert decision.decision == "no-match" and "undeclared parameters: cmd" in (decision.reason or "")
        assert decision.params == {} and decision.llm_calls == 2

    def test_a_value_the_task_does_not_state_is_refused(self, store: ProcedureDatabase, tmp_path: Path) -> None:
        decision = ask(
            store,
            tmp_path,
            """
answers:
  - match: "."
    respond: {same_task: true, params: {name: "Bob"}}
""",
        )
        assert decision.decision == "no-match" and "does not state" in (decision.reason or "")

    def test_a_failing_model_is_no_match_not_a_crash(self, store: ProcedureDatabase, tmp_path: Path) -> None:
        """The script has no answer for this prompt: the call fails, the decision says so, the call is counted."""
        decision = ask(
            store,
            tmp_path,
            """
answers:
  - match: "something else entirely"
    respond: {same_task: true, params: {}}
""",
        )
        assert (
            decision.decision == "no-match"
            and "the verifier failed" in (decision.reason or "")
            and decision.llm_calls == 1
        )


class TestBand:
    def test_only_the_band_is_asked(self, store: ProcedureDatabase, tmp_path: Path) -> None:
        """Above the floor the matcher decides alone; below the band's lower edge nothing is asked either."""
        model = script(
            tmp_path,
            """
answers:
  - match: "."
    respond: {same_task: true, params: {}}
""",
        )
        matcher = Matcher(store)
        sure = matcher.match("db backup", verify=Verifier(model, lower=0.0))
        assert sure.decision == "match" and sure.verification is None and sure.llm_calls == 0
        below = matcher.match("what is the weather in Paris", verify=Verifier(model, lower=0.99))
        assert below.decision == "no-match" and below.verification is None and below.llm_calls == 0

    def test_a_literal_disagreement_is_never_asked(self, store: ProcedureDatabase, tmp_path: Path) -> None:
        model = script(
            tmp_path,
            """
answers:
  - match: "."
    respond: {same_task: true, params: {}}
""",
        )
        decision = Matcher(store).match(
            "Find files in /var/log modified more than 7 days ago", verify=Verifier(model, lower=0.5)
        )
        old = next(c for c in decision.candidates if c.task_type == "old-logs")
        assert decision.procedure_id != old.procedure_id and (old.reason or "").startswith("literals disagree")

    def test_the_schema_names_declared_parameters_only(self) -> None:
        schema = response_format(["name"])["json_schema"]["schema"]
        assert schema["properties"]["params"] == {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "additionalProperties": False,
        }

    def test_off_unless_a_model_is_named(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv(MODEL_ENV, raising=False)
        assert verifier_from_env() is None
        monkeypatch.setenv(MODEL_ENV, "scripted/x.yaml")
        assert (v := verifier_from_env()) is not None and v.model == "scripted/x.yaml"
        with pytest.raises(ModelError, match="needs a model name"):
            Verifier("  ")


class TestCli:
    """`learn replay --verify` / `--verify-model`: the verifier's calls and tokens are in the JSON, and a flag
    without a model is refused as bad usage."""

    def test_verify_without_a_model_is_bad_usage(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        from sherpa_skills.cli import main

        monkeypatch.delenv(MODEL_ENV, raising=False)
        monkeypatch.delenv("SHERPA_SKILLS_MODEL", raising=False)
        assert main(["learn", "replay", "anything", "--verify", "--home", str(tmp_path / "h")]) == 2
        assert "sherpa-skills: --verify needs a model" in capsys.readouterr().err
        assert main(["learn", "replay", "anything", "--verify-model", " ", "--home", str(tmp_path / "h")]) == 2

    def test_the_json_counts_the_verifier(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A borderline task confirmed by the verifier is a dry run whose JSON carries the call and its tokens;
        SHERPA_SKILLS_VERIFY_MODEL alone turns it on, and the verifier saying no is a no-match."""
        from sherpa_skills.cli import main
        from sherpa_skills.skills.match import verifier as verifier_module

        home = tmp_path / "h"
        store = ProcedureDatabase(store_path(home))
        matcher = Matcher(store)
        p = store.add_procedure(
            CapturedProcedure(
                id="",
                task_type="greet",
                description="write a greeting for someone",
                success_count=2,
                steps=[ProcedureStep(command="echo hello {{ name }}")],
            )
        )
        assert matcher.index(p) is None
        best = matcher.match(GREET).candidates[0]
        monkeypatch.setattr(verifier_module, "VERIFY_FLOOR", best.score - 0.01)  # the band starts just under this task
        yes = script(
            tmp_path,
            """
answers:
  - match: "Task: "
    respond: {same_task: true, params: {name: "Ada Lovelace"}}
""",
        )
        assert main(["learn", "replay", GREET, "--verify-model", yes, "--json", "--home", str(home)]) == 0
        out = json.loads(capsys.readouterr().out)
        assert (
            out["status"] == "dry-run"
            and out["procedure_id"] == p.id
            and out["params_from_task"] == {"name": "Ada Lovelace"}
        )
        assert (
            out["verification"]["same_task"]
            and out["llm_calls"] == 1
            and out["tokens"] == out["verification"]["tokens"] > 0
        )
        no = tmp_path / "no.yaml"
        no.write_text('answers:\n  - match: "Task: "\n    respond: {same_task: false, params: {}}\n', encoding="utf-8")
        monkeypatch.setenv(MODEL_ENV, f"scripted/{no}")
        assert main(["learn", "replay", GREET, "--json", "--home", str(home)]) == 1
        out = json.loads(capsys.readouterr().out)
        assert out["status"] == "no-match" and "not this task" in out["reason"] and out["llm_calls"] == 1
