"""The model judge: when a match needs confirmation and a model is at hand, one short multiple-choice question over the
offered candidates decides; none, garbage, a procedure not offered, an undeclared parameter or a failed call is a
no-match with the reason, and every call and token is counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sherpa_skills.errors import ModelError
from sherpa_skills.home import store_path
from sherpa_skills.skills.match.matcher import Matcher
from sherpa_skills.skills.match.models import MatchDecision
from sherpa_skills.skills.match.verifier import MODEL_ENV, Verifier, judge, response_format, verifier_from_env
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


def ask(store: ProcedureDatabase, tmp_path: Path, body: str) -> MatchDecision:
    """GREET (plausible for `greet`, not sure) matched with a model judge answering from this script."""
    matcher = Matcher(store)
    plain = matcher.match(GREET)
    assert plain.decision == "needs-confirmation" and [c.task_type for c in plain.offered] == ["greet"]
    return matcher.match(GREET, verify=Verifier(script(tmp_path, body)))


class TestAnswers:
    def test_a_choice_selects_the_candidate_with_declared_parameters_and_counts_the_call(
        self, store: ProcedureDatabase, tmp_path: Path
    ) -> None:
        """The judge names the offered procedure by its number; the parameter it gives is filled from the task."""
        decision = ask(
            store,
            tmp_path,
            f"""
answers:
  - match: "Task: {GREET}.*1. write a greeting.*parameters: name"
    respond: {{choice: 1, params: {{name: "Ada Lovelace"}}}}
""",
        )
        assert decision.decision == "match" and decision.selected and decision.selected.task_type == "greet"
        assert decision.params == {"name": "Ada Lovelace"} and decision.judged_by and "scripted/" in decision.judged_by
        assert (
            decision.verification
            and decision.verification.procedure_id == decision.procedure_id
            and decision.llm_calls == 1
            and decision.tokens > 0
        )

    def test_none_of_these_is_no_match_with_the_reason(self, store: ProcedureDatabase, tmp_path: Path) -> None:
        decision = ask(store, tmp_path, 'answers:\n  - match: "Task: "\n    respond: {choice: 0, params: {}}\n')
        assert decision.decision == "no-match" and "none of the candidates" in (decision.reason or "")
        assert decision.llm_calls == 1 and decision.tokens > 0 and decision.selected is None
        assert "offered to the judge" in (decision.candidates[0].reason or "")

    @pytest.mark.parametrize("choice", ["7", "'restart-web-0000'", "-1"])
    def test_a_procedure_not_offered_is_a_no(self, store: ProcedureDatabase, tmp_path: Path, choice: str) -> None:
        """A number past the list, an id that was not offered: garbage, asked once more, then refused."""
        decision = ask(store, tmp_path, f'answers:\n  - match: "."\n    respond: {{choice: {choice}, params: {{}}}}\n')
        assert decision.decision == "no-match" and decision.selected is None and decision.llm_calls == 2
        assert "not offered" in (decision.reason or "") or "were offered" in (decision.reason or "")

    def test_the_offered_id_is_a_choice_too(self, store: ProcedureDatabase, tmp_path: Path) -> None:
        offered = Matcher(store).match(GREET).offered[0].procedure_id
        decision = ask(store, tmp_path, f'answers:\n  - match: "."\n    respond: {{choice: "{offered}"}}\n')
        assert decision.decision == "match" and decision.procedure_id == offered

    def test_a_malformed_answer_is_asked_again_once(self, store: ProcedureDatabase, tmp_path: Path) -> None:
        """Prose instead of JSON: one more question saying what was wrong, and its good answer counts."""
        decision = ask(
            store,
            tmp_path,
            """
answers:
  - match: "cannot be used: the answer is not"
    respond: '```json\n{"choice": 1, "params": {"name": "Ada"}}\n```'
  - match: "Task: "
    respond: "Yes, I think so."
""",
        )
        assert decision.decision == "match" and decision.params == {"name": "Ada"} and decision.llm_calls == 2

    def test_garbage_twice_is_no_match(self, store: ProcedureDatabase, tmp_path: Path) -> None:
        decision = ask(store, tmp_path, 'answers:\n  - match: "."\n    respond: \'{"choice": "maybe"}\'\n')
        assert decision.decision == "no-match" and "unusable twice" in (decision.reason or "")
        assert decision.llm_calls == 2 and decision.selected is None

    def test_an_undeclared_parameter_is_refused(self, store: ProcedureDatabase, tmp_path: Path) -> None:
        """The procedure takes `name`; an answer that sets `cmd` is not used, however sure it sounds."""
        decision = ask(
            store, tmp_path, 'answers:\n  - match: "."\n    respond: {choice: 1, params: {cmd: "rm -rf /"}}\n'
        )
        assert decision.decision == "no-match" and "undeclared parameters: cmd" in (decision.reason or "")
        assert decision.params == {} and decision.llm_calls == 2

    def test_a_value_the_task_does_not_state_is_refused(self, store: ProcedureDatabase, tmp_path: Path) -> None:
        decision = ask(store, tmp_path, 'answers:\n  - match: "."\n    respond: {choice: 1, params: {name: "Bob"}}\n')
        assert decision.decision == "no-match" and "does not state" in (decision.reason or "")

    def test_a_failing_model_is_no_match_not_a_crash(self, store: ProcedureDatabase, tmp_path: Path) -> None:
        """The script has no answer for this prompt: the call fails, the decision says so, the call is counted."""
        decision = ask(store, tmp_path, 'answers:\n  - match: "something else"\n    respond: {choice: 1}\n')
        assert decision.decision == "no-match" and "the judge failed" in (decision.reason or "")
        assert decision.llm_calls == 1


class TestWhenAsked:
    def test_sure_and_unrelated_tasks_ask_nothing(self, store: ProcedureDatabase, tmp_path: Path) -> None:
        """Sure, the matcher decides alone; nothing plausible, nothing is asked either."""
        model = script(tmp_path, 'answers:\n  - match: "."\n    respond: {choice: 1, params: {}}\n')
        matcher = Matcher(store)
        sure = matcher.match("db backup", verify=Verifier(model))
        assert sure.decision == "match" and sure.verification is None and sure.llm_calls == 0
        unrelated = matcher.match("what is the weather in Paris", verify=Verifier(model))
        assert unrelated.decision == "no-match" and unrelated.verification is None and unrelated.llm_calls == 0

    def test_a_literal_disagreement_is_never_offered(self, store: ProcedureDatabase, tmp_path: Path) -> None:
        model = script(tmp_path, 'answers:\n  - match: "."\n    respond: {choice: 1, params: {}}\n')
        decision = Matcher(store).match("Find files in /var/log modified more than 7 days ago", verify=Verifier(model))
        old = next(c for c in decision.candidates if c.task_type == "old-logs")
        assert decision.procedure_id != old.procedure_id and (old.reason or "").startswith("literals disagree")
        assert old not in decision.offered

    def test_the_schema_names_declared_parameters_only(self) -> None:
        schema = response_format(["name"])["json_schema"]["schema"]
        assert schema["properties"]["params"] == {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "additionalProperties": False,
        }
        assert schema["properties"]["choice"] == {"type": "integer"}

    def test_off_unless_a_model_is_named(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv(MODEL_ENV, raising=False)
        assert verifier_from_env() is None
        monkeypatch.setenv(MODEL_ENV, "scripted/x.yaml")
        assert (v := verifier_from_env()) is not None and v.model == "scripted/x.yaml"
        with pytest.raises(ModelError, match="needs a model name"):
            Verifier("  ")


class TestTheWorkflowsModel:
    """`judge(task, offered, model)`: what a learning run asks its own model, as a plain function."""

    def test_it_returns_the_choice_and_what_it_cost(self, store: ProcedureDatabase, tmp_path: Path) -> None:
        procs = [p for p in store.procedures() if p.task_type in ("restart-web", "db-backup")]
        model = script(tmp_path, 'answers:\n  - match: "2. "\n    respond: {choice: 2, params: {}}\n')
        verdict = judge("back up the database", procs, model)
        assert verdict.procedure_id == procs[1].id and verdict.offered == [p.id for p in procs]
        assert verdict.calls == 1 and verdict.tokens > 0

    def test_garbage_or_an_unoffered_procedure_is_none(self, store: ProcedureDatabase, tmp_path: Path) -> None:
        procs = store.procedures()[:2]
        for respond in ('"no idea"', "{choice: 3}", '{choice: "greet-x"}'):
            model = script(tmp_path, f'answers:\n  - match: "."\n    respond: {respond}\n')
            verdict = judge("back up the database", procs, model)
            assert verdict.procedure_id is None and verdict.reason and verdict.calls == 2, respond

    def test_nothing_offered_asks_nothing(self, tmp_path: Path) -> None:
        verdict = judge("anything", [], script(tmp_path, "answers: []\n"))
        assert verdict.procedure_id is None and verdict.calls == 0


class TestCli:
    """`learn replay --verify` / `--verify-model`: the judge's calls and tokens are in the JSON, and a flag
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
        """A plausible task the judge confirms is a dry run whose JSON carries the call and its tokens;
        SHERPA_SKILLS_VERIFY_MODEL alone turns it on, and the judge saying none is a no-match."""
        from sherpa_skills.cli import main

        home = tmp_path / "h"
        store = ProcedureDatabase(path=store_path(home))
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
        yes = script(
            tmp_path,
            """
answers:
  - match: "Task: "
    respond: {choice: 1, params: {name: "Ada Lovelace"}}
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
            out["verification"]["procedure_id"] == p.id
            and out["llm_calls"] == 1
            and out["tokens"] == out["verification"]["tokens"] > 0
        )
        no = tmp_path / "no.yaml"
        no.write_text('answers:\n  - match: "Task: "\n    respond: {choice: 0, params: {}}\n', encoding="utf-8")
        monkeypatch.setenv(MODEL_ENV, f"scripted/{no}")
        assert main(["learn", "replay", GREET, "--json", "--home", str(home)]) == 1
        out = json.loads(capsys.readouterr().out)
        assert out["status"] == "no-match" and "none of the candidates" in out["reason"] and out["llm_calls"] == 1
