"""`SkillStore`'s command-line view: what `learn …` and `runs delete` ask of the store, each with what it refuses."""

from __future__ import annotations

import pytest

import sherpa_skills as sk
from sherpa_skills.skills.face.models import MAX_COMMAND_CHARS, PARAMETER, REPLAY_RULE, ProcedureShown


def test_summaries_and_show_describe_a_procedure_and_refuse_an_unknown_id(skill_store: sk.SkillStore) -> None:
    p = skill_store.capture("say-done", ["echo done"], description="say done").procedure
    assert p is not None
    [row] = skill_store.summaries()
    assert row["id"] == p.id and row["steps"] == 1 and row["task_type"] == "say-done"
    assert skill_store.summaries(include_candidates=False) == [row] and skill_store.count() == 1
    shown = skill_store.show(p.id)
    assert isinstance(shown, ProcedureShown) and shown.procedure.id == p.id
    assert shown.detail["id"] == p.id and shown.health.procedure_id == p.id and shown.executions == []
    with pytest.raises(sk.SherpaError, match="no procedure 'no-such-procedure'"):
        skill_store.show("no-such-procedure")
    with pytest.raises(sk.SherpaError):
        skill_store.show(p.id, version=7)


def test_a_candidate_is_rejected_once_and_a_second_rejection_is_refused(skill_store: sk.SkillStore) -> None:
    claimed = skill_store.capture("deploy", ["make deploy"], claimed_by="agent:bot").procedure
    assert claimed is not None and [c.id for c in skill_store.candidates()] == [claimed.id]
    assert skill_store.candidates("another-type") == []
    assert skill_store.reject_candidate(claimed.id).status == "rejected"
    assert skill_store.candidates() == []
    with pytest.raises(sk.UsageError, match="already rejected"):
        skill_store.reject_candidate(claimed.id)


def test_promotion_is_reported_with_replays_own_gate(skill_store: sk.SkillStore) -> None:
    p = skill_store.capture("say-done", ["echo done"]).procedure
    assert p is not None
    [health] = skill_store.health(p.id)
    assert skill_store.replay_refusal(p, health)  # one success is not proof
    promoted = skill_store.promote(p.id, by="alice")
    [promotion] = skill_store.promotions(p.id)
    assert promotion["promoted_by"] == "alice"
    assert skill_store.replay_refusal(promoted, skill_store.health(p.id)[0]) is None


def test_an_import_takes_counts_as_claims_skips_known_ones_and_names_a_bad_entry(skill_store: sk.SkillStore) -> None:
    p = skill_store.capture("say-done", ["echo done"]).procedure
    assert p is not None
    data = skill_store.export_data()
    assert data["format"] == "sherpa-skills/procedures" and [x["id"] for x in data["procedures"]] == [p.id]
    other = {**data["procedures"][0], "id": "other", "task_type": "say-other", "success_count": 40}
    other["steps"] = [{"command": "echo other"}]
    data["procedures"] += [other, {**other, "steps": "not a list"}]
    done = skill_store.import_data(data, "/tmp/procedures.json")
    assert done.skipped == 1 and [f.task_type for f in done.fresh] == ["say-other"]
    assert [f.status for f in done.fresh] == ["candidate"] and done.fresh[0].success_count == 0  # a claim only
    assert len(done.problems) == 1 and done.problems[0].startswith("procedures[2].steps")
    assert skill_store.index_imported(done.fresh) is None


def test_a_step_written_at_the_prompt_is_checked_as_a_capture_checks_it(skill_store: sk.SkillStore) -> None:
    shown = ["echo kept"]
    assert skill_store.edited_step_problem(["echo kept", "echo new"], shown) is None
    huge = "echo " + "x" * MAX_COMMAND_CHARS
    assert (skill_store.edited_step_problem(["echo kept", huge], shown) or "").startswith("step 2")
    assert skill_store.edited_step_problem(["echo a\0b"], shown) == "step 1: a shell command cannot hold a NUL byte"


def test_a_dry_run_removes_nothing_and_a_removal_only_what_it_names(skill_store: sk.SkillStore) -> None:
    first, second = (skill_store.capture(t, ["echo done"]).run_id for t in ("one", "two"))
    assert first and second
    runs = sk.RunStore(home=skill_store.home)
    try:
        assert skill_store.runs_older_than(runs, 0) == []
        assert set(skill_store.runs_older_than(runs, 4e9)) == {first, second}
        plan = skill_store.remove_runs(runs, [first], dry_run=True)
        assert plan.dry_run and plan.deleted == [first] and runs.get_run(first).run_id == first
        assert skill_store.remove_runs(runs, [first]).deleted == [first]
        assert skill_store.runs_older_than(runs, 4e9) == [second]
    finally:
        runs.close()


def test_the_decision_memory_and_failures_of_an_empty_store(skill_store: sk.SkillStore) -> None:
    assert skill_store.decision_counts() == [] and skill_store.decision_states() == []
    assert skill_store.forget_decisions("wf", "triage") == 0
    assert skill_store.failures() == [] and skill_store.reindex_failures() == 0
    assert skill_store.stats()["replays"] == 0


def test_the_rules_words_come_from_the_face() -> None:
    assert PARAMETER.fullmatch("{{ name }}") and "replay rule" in REPLAY_RULE


def test_capture_success_keeps_checked_steps_and_refuses_an_unknown_version_target(skill_store: sk.SkillStore) -> None:
    with pytest.raises(sk.SherpaError, match="no procedure 'nope'"):
        skill_store.capture_success("say-hi", steps=[{"command": "echo hi"}], procedure_id="nope")
    assert skill_store.count() == 0  # refused before the capture machine ran
    done = skill_store.capture_success("say-hi", steps=[{"command": "echo hi"}], source="session", description=None)
    assert done.outcome == "captured" and done.procedure is not None
    assert done.procedure.source == "session" and done.procedure.description == ""
