"""Customers' requests are matched by the kind of question they ask, not by their key words alone: "How can I verify
my identity?" and "Why do I need to verify my identity?" fold to the same key words (verify, identity) and ask
different things. A request a trajectory was learned from, and a wording a run or an agent left (an alias no judge
confirmed), are said alike only with the same question words; a shell procedure's description and a person's or a
judge's confirmed wording keep the folded rule. Found on the BANKING77 router stream (bench/RESULTS.md): a run's
wording of one intent replayed its path for the other intent's requests."""

from __future__ import annotations

import sherpa_skills as sk
from sherpa_skills.skills.store.models import CapturedProcedure

WHY = "Why do I need to verify my identity?"
HOW = "How can I verify my identity?"
PENDING = "Can I already use my account although the identity verification has not finished?"


def _trajectory(skills: sk.SkillStore, description: str) -> str:
    return skills.store.add_procedure(
        CapturedProcedure(
            id="", task_type="banking", kind="trajectory", description=description, steps=[], success_count=5
        )
    ).id


def test_a_request_said_with_another_question_word_is_not_the_request(skill_store: sk.SkillStore) -> None:
    """Not by the wording rule: what relevance (meaning, and how far clear of the rest) makes of it is its own."""
    _trajectory(skill_store, WHY)
    decision = skill_store.match(HOW, task_type="banking")
    assert all("says what the description says" not in c.matched_terms for c in decision.candidates)


def test_the_same_request_in_other_case_and_punctuation_still_replays(skill_store: sk.SkillStore) -> None:
    pid = _trajectory(skill_store, WHY)
    decision = skill_store.match("why do I need to verify my identity", task_type="banking")
    assert (decision.decision, decision.procedure_id) == ("match", pid)


def test_a_runs_wording_is_not_another_question(skill_store: sk.SkillStore) -> None:
    pid = _trajectory(skill_store, PENDING)
    skill_store.matcher.confirm(WHY, pid, by="run:r-1", task_type="banking")
    how = skill_store.match(HOW, task_type="banking")
    assert how.decision != "match"
    assert all(not any("confirmed wording" in t for t in c.matched_terms) for c in how.candidates)
    again = skill_store.match("why do I need to verify my identity", task_type="banking")
    assert (again.decision, again.procedure_id) == ("match", pid)


def test_an_agents_wording_likewise(skill_store: sk.SkillStore) -> None:
    pid = _trajectory(skill_store, PENDING)
    skill_store.matcher.confirm(WHY, pid, by="agent:ops", task_type="banking")
    assert skill_store.match(HOW, task_type="banking", by="agent:ops").decision != "match"
    again = skill_store.match(WHY, task_type="banking", by="agent:ops")
    assert (again.decision, again.procedure_id) == ("match", pid)


def test_a_persons_confirmed_wording_keeps_its_folded_words(skill_store: sk.SkillStore) -> None:
    """A person said what the wording means: the same key words in other function words are the same ask."""
    pid = _trajectory(skill_store, PENDING)
    skill_store.matcher.confirm("please verify my identity now", pid, task_type="banking")
    decision = skill_store.match("verify my identity please", task_type="banking")
    assert (decision.decision, decision.procedure_id) == ("match", pid)
