"""The match floor calibrated on the store's own answered questions (skills/match/floor.py): a person's answers lower
it where the store's procedures stand apart and raise it where the shipped one was fooled; an agent's or a model
judge's answers are claims and move it neither way; each scope is calibrated on its own."""

from __future__ import annotations

import dataclasses

import pytest

import sherpa_skills as sk
from sherpa_skills.skills.match.floor import RAISE_AFTER, calibrated_floor
from sherpa_skills.skills.match.matcher import Matcher
from sherpa_skills.skills.match.relevance import default_model
from sherpa_skills.skills.store.answers import AskedPoint

SHIPPED = 0.785
BOUND = 0.02


def points(scores: list[float], *, wrong: bool = False, by: str = "alice") -> list[AskedPoint]:
    return [AskedPoint(score=s, wrong=wrong, by=by) for s in scores]


def spread(n: int, low: float, high: float) -> list[float]:
    return [low + (high - low) * i / max(n - 1, 1) for i in range(n)]


class TestTheRule:
    def test_too_few_answers_keep_the_shipped_floor(self) -> None:
        floor = calibrated_floor(points(spread(48, 0.2, 0.7)), SHIPPED, BOUND)
        assert (floor.value, floor.basis, floor.counted) == (SHIPPED, "shipped", 48)
        assert "needs at least 49 answers" in floor.reason

    def test_a_persons_right_answers_lower_it_to_the_lowest_they_vouch_for(self) -> None:
        floor = calibrated_floor(points(spread(60, 0.2, 0.7)), SHIPPED, BOUND)
        assert (floor.value, floor.basis) == (0.2, "calibrated") and "lowers the shipped" in floor.reason

    def test_it_stops_above_the_answers_that_said_the_best_was_wrong(self) -> None:
        right, wrong = points(spread(60, 0.5, 0.78)), points([0.3, 0.31, 0.32, 0.33, 0.34], wrong=True)
        floor = calibrated_floor(right + wrong, SHIPPED, BOUND)
        assert floor.value == 0.5 and floor.wrong == 5

    def test_it_bounds_the_share_among_what_it_would_replay_not_among_all_answers(self) -> None:
        """Many sure answers far above do not buy a low floor where every answer was wrong."""
        sure = points([0.95] * 1000)
        floor = calibrated_floor(sure + points(spread(10, 0.3, 0.4), wrong=True), SHIPPED, BOUND)
        assert floor.value > 0.4

    @pytest.mark.parametrize("claimant", ["agent:ops", "model:openai/gpt-4o-mini", "run:r-1"])
    def test_an_agents_or_models_confirmations_do_not_lower_it(self, claimant: str) -> None:
        """The attack: an MCP agent confirms whatever it is offered, to make it replay unasked next time."""
        floor = calibrated_floor(points(spread(500, 0.1, 0.7), by=claimant), SHIPPED, BOUND)
        assert (floor.value, floor.basis, floor.counted, floor.claims) == (SHIPPED, "shipped", 0, 500)
        assert "500 answer(s) by agents or model judges not counted" in floor.reason

    def test_an_agents_rejections_do_not_raise_it(self) -> None:
        """Nor can an agent stop the store replaying by objecting to whatever it replays."""
        floor = calibrated_floor(points([0.99, 0.95, 0.9, 0.86], wrong=True, by="agent:ops"), SHIPPED, BOUND)
        assert floor.value == SHIPPED

    def test_a_person_objecting_to_sure_replays_raises_it_above_them(self) -> None:
        objected = points([0.9, 0.85, 0.8][:RAISE_AFTER], wrong=True)
        floor = calibrated_floor(objected + points(spread(20, 0.1, 0.6)), SHIPPED, BOUND)
        assert floor.value == pytest.approx(0.9001) and "did not hold here" in floor.reason

    def test_one_objection_is_no_sign(self) -> None:
        """A 2 % bound expects a wrong replay now and then; replays nobody objected to leave no point."""
        floor = calibrated_floor(points([0.9, 0.85], wrong=True), SHIPPED, BOUND)
        assert floor.value == SHIPPED


DEPLOY = "deploy the proxy configuration and restart the service"
ANSWERED = [
    "push out the new proxy settings and bounce it",
    "roll the new proxy settings out and restart it",
    "put the proxy config live and restart",
]
LATER = "ship the updated proxy config then bounce the service"  # relevance ~0.19: asked under the shipped floor


def loose(skills: sk.SkillStore) -> Matcher:
    """A matcher over the same store at a loose bound (0.25: three answers calibrate), so a test needs few."""
    return Matcher(skills.matcher.store, model=dataclasses.replace(default_model(), bound=0.25))


def _id(skills: sk.SkillStore, task_type: str) -> str:
    return skills.procedures(task_type)[0].id


class TestInTheStore:
    def test_each_answer_keeps_what_was_asked(self, skills: sk.SkillStore) -> None:
        deploy = _id(skills, "deploy-proxy")
        asked = skills.match(ANSWERED[0])
        assert asked.decision == "needs-confirmation" and asked.offered[0].procedure_id == deploy
        skills.confirm(ANSWERED[0], deploy)
        skills.confirm(ANSWERED[1], _id(skills, "clean-cache"))  # another than the best: the best was wrong
        skills.reject(ANSWERED[2], [deploy, _id(skills, "clean-cache")])  # one point, for the best only
        found = skills.matcher.answers.asked_points(None)
        assert [p.wrong for p in found] == [False, True, True]
        assert found[0].score == pytest.approx(asked.offered[0].score, abs=1e-4)
        assert all(0.01 < p.score < SHIPPED for p in found)

    def test_a_persons_answers_make_a_later_wording_replay_directly(self, skills: sk.SkillStore) -> None:
        matcher, deploy = loose(skills), _id(skills, "deploy-proxy")
        assert matcher.match(LATER).decision == "needs-confirmation"
        for text in ANSWERED:
            matcher.confirm(text, deploy)
        decision = matcher.match(LATER)
        assert (decision.decision, decision.procedure_id) == ("match", deploy)
        assert decision.floor < SHIPPED and "lowers the shipped" in (decision.floor_reason or "")

    def test_an_agents_answers_leave_it_asked(self, skills: sk.SkillStore) -> None:
        matcher, deploy = loose(skills), _id(skills, "deploy-proxy")
        for text in ANSWERED:
            matcher.confirm(text, deploy, by="agent:ops")
        decision = matcher.match(LATER)
        assert decision.decision == "needs-confirmation" and decision.floor == SHIPPED
        assert "3 answer(s) by agents or model judges not counted" in (decision.floor_reason or "")

    def test_a_scope_is_calibrated_on_its_own_answers(self, skills: sk.SkillStore) -> None:
        """Answers given in a task type's scope leave the unscoped floor (the CLI's, MCP's) as it was."""
        matcher, deploy = loose(skills), _id(skills, "deploy-proxy")
        for text in ANSWERED:
            matcher.confirm(text, deploy, task_type="deploy-proxy")
        assert matcher.floor_for("deploy-proxy").basis == "calibrated"
        assert matcher.floor_for(None).value == SHIPPED and matcher.match(LATER).decision == "needs-confirmation"

    def test_forgetting_an_answer_takes_its_point_back(self, skills: sk.SkillStore) -> None:
        matcher, deploy = loose(skills), _id(skills, "deploy-proxy")
        answers = [matcher.confirm(text, deploy) for text in ANSWERED]
        assert matcher.floor_for(None).basis == "calibrated"
        matcher.answers.forget(answers[0].id)
        assert matcher.floor_for(None).value == SHIPPED

    def test_a_run_made_alias_is_no_point(self, skills: sk.SkillStore) -> None:
        matcher, deploy = loose(skills), _id(skills, "deploy-proxy")
        for text in ANSWERED:
            matcher.confirm(text, deploy, by="run:r-1")
        assert matcher.answers.asked_points(None) == []

    def test_a_person_answering_an_agents_alias_again_makes_it_evidence(self, skills: sk.SkillStore) -> None:
        matcher, deploy = loose(skills), _id(skills, "deploy-proxy")
        for text in ANSWERED:
            matcher.confirm(text, deploy, by="agent:ops")
        assert matcher.floor_for(None).claims == 3
        for text in ANSWERED:
            matcher.confirm(text, deploy, by="alice")
        floor = matcher.floor_for(None)
        assert (floor.counted, floor.claims, floor.basis) == (3, 0, "calibrated")
        assert {a.by for a in matcher.answers.entries(deploy)} == {"alice"}
