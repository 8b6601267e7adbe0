"""The one mapping from a match decision to find_procedure's answer: dry-run / needs-confirmation / no-match."""

from __future__ import annotations

from pathlib import Path

from sherpa_skills import SkillStore
from sherpa_skills.bridge.match_answer import find_answer
from sherpa_skills.skills.match.matcher import MatchCandidate, MatchDecision


def candidate(pid: str, score: float, **extra: object) -> MatchCandidate:
    return MatchCandidate(
        procedure_id=pid, task_type="t", version=1, confidence=0.83, score=score, semantic=0.6, terms=0.5, **extra
    )


def test_plausible_candidates_need_confirmation_and_the_agents_answers_are_honoured(tmp_path: Path) -> None:
    skills = SkillStore(tmp_path)
    ids = []
    for name, steps in (("pack-logs", ["tar czf logs.tgz logs"]), ("ship-logs", ["scp logs.tgz backup:"])):
        captured = skills.capture(name, steps, description=name.replace("-", " "))
        assert captured.procedure is not None
        skills.promote(captured.procedure.id)
        ids.append(captured.procedure.id)
    unproven = skills.capture("drop-logs", ["rm -rf logs"], description="drop logs").procedure
    assert unproven is not None
    decision = MatchDecision(
        query="deal with the logs",
        decision="no-match",
        candidates=[
            candidate(ids[0], 0.6, reason="ambiguous"),
            candidate(ids[1], 0.58, reason="ambiguous"),
            candidate(unproven.id, 0.59, reason="ambiguous"),  # not yet proven: never offered
            candidate(ids[1], 0.9, literals_disagreed=["7 day vs 60"]),  # a literal disagrees: never offered
            candidate(ids[0], 0.1),  # far below the band
        ],
    )
    answer = find_answer(decision, skills.store)
    assert answer.decision == "needs-confirmation"
    assert [c.procedure_id for c in answer.candidates] == ids
    assert answer.candidates[0].health == "new" and answer.candidates[0].confidence == 0.833
    assert find_answer(decision, skills.store, accepted=ids[1]).procedure_id == ids[1]
    assert find_answer(decision, skills.store, accepted=ids[1]).decision == "dry-run"
    assert find_answer(decision, skills.store, rejected=frozenset(ids)).decision == "no-match"

    sure = MatchDecision(query="pack logs", decision="match", selected=candidate(ids[0], 0.95), params={"a": "b"})
    assert find_answer(sure, skills.store).decision == "dry-run"
    assert find_answer(sure, skills.store, rejected=frozenset({ids[0]})).decision == "no-match"
