"""The one mapping from the store's match decision to find_procedure's answer: dry-run / needs-confirmation /
no-match, word for word."""

from __future__ import annotations

from pathlib import Path

from sherpa_skills import SkillStore
from sherpa_skills.bridge.match_answer import find_answer
from sherpa_skills.skills.match.models import MatchCandidate, MatchDecision


def candidate(pid: str, score: float, **extra: object) -> MatchCandidate:
    return MatchCandidate(
        procedure_id=pid, task_type="t", version=1, confidence=0.83, score=score, semantic=0.6, terms=0.5, **extra
    )


def test_the_three_answers_are_the_stores_own(tmp_path: Path) -> None:
    skills = SkillStore(tmp_path)
    ids = []
    for name, steps in (("pack-logs", ["tar czf logs.tgz logs"]), ("ship-logs", ["scp logs.tgz backup:"])):
        captured = skills.capture(name, steps, description=name.replace("-", " "))
        assert captured.procedure is not None
        skills.promote(captured.procedure.id)
        ids.append(captured.procedure.id)
    offered = [candidate(ids[0], 0.6), candidate(ids[1], 0.58)]
    asked = MatchDecision(
        query="deal with the logs", decision="needs-confirmation", offered=offered, candidates=offered
    )
    answer = find_answer(asked, skills)
    assert answer.decision == "needs-confirmation" and [c.procedure_id for c in answer.candidates] == ids
    assert answer.candidates[0].health == "new" and answer.candidates[0].confidence == 0.833

    sure = MatchDecision(query="pack logs", decision="match", selected=candidate(ids[0], 0.95), params={"a": "b"})
    assert (find_answer(sure, skills).decision, find_answer(sure, skills).params) == ("dry-run", {"a": "b"})
    nothing = MatchDecision(query="water the plants", decision="no-match", reason="nothing is about it")
    assert find_answer(nothing, skills).model_dump(include={"decision", "reason"}) == {
        "decision": "no-match",
        "reason": "nothing is about it",
    }
