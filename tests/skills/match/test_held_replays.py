"""Replays that held (issue 40: the match calibrated on "replays that held or diverged"): an executed replay that a
match chose by relevance alone and that succeeded is a right point at that relevance. Before, a direct replay left no
point, so three objections raised the floor whatever number of replays had held; now they are weighed against them.
Who may add such a point: a person executing (the CLI, Python); an agent's executions are kept, never counted."""

from __future__ import annotations

from pathlib import Path

import sherpa_skills as sk
from sherpa_skills.skills.match.floor import calibrated_floor
from sherpa_skills.skills.match.models import RELEVANCE_FLOOR
from sherpa_skills.skills.store.answers import AskedPoint

BOUND = 0.02
BY_RELEVANCE = "dump the postgres db to a gzip file"  # 0.86 for the backup: replayed directly, not a wording of it


def _objections(n: int = 3) -> list[AskedPoint]:
    return [AskedPoint(score=0.9, wrong=True, by="alice") for _ in range(n)]


def _held(n: int, score: float = 0.88, by: str = "alice") -> list[AskedPoint]:
    return [AskedPoint(score=score, wrong=False, by=by, held=True) for _ in range(n)]


class TestTheFloorWeighsObjectionsAgainstReplaysThatHeld:
    def test_three_objections_alone_raise_it(self) -> None:
        floor = calibrated_floor(_objections(), RELEVANCE_FLOOR, BOUND)
        assert floor.basis == "calibrated" and floor.value > 0.9

    def test_three_objections_among_many_replays_that_held_do_not(self) -> None:
        floor = calibrated_floor(_objections() + _held(300), RELEVANCE_FLOOR, BOUND)
        assert (floor.value, floor.basis, floor.held) == (RELEVANCE_FLOOR, "shipped", 300)
        assert "300 replay(s) a person executed held" in floor.reason

    def test_too_few_that_held_still_raise_it(self) -> None:
        assert calibrated_floor(_objections() + _held(20), RELEVANCE_FLOOR, BOUND).value > 0.9

    def test_an_agents_replays_never_keep_it_from_rising(self) -> None:
        """The attack: an agent executing replays by the hundred to drown a person's objections."""
        floor = calibrated_floor(_objections() + _held(1000, by="agent:mallory"), RELEVANCE_FLOOR, BOUND)
        assert floor.value > 0.9 and floor.held == 0

    def test_replays_that_held_never_lower_it(self) -> None:
        """Below the shipped floor they could only be a lowered floor's own replays vouching for it."""
        floor = calibrated_floor(_held(500, score=0.5), RELEVANCE_FLOOR, BOUND)
        assert (floor.value, floor.basis, floor.counted) == (RELEVANCE_FLOOR, "shipped", 0)


class TestAReplayThatHeldIsRecorded:
    def test_a_persons_executed_replay_by_relevance(self, skills: sk.SkillStore, tmp_path: Path) -> None:
        decision = skills.match(BY_RELEVANCE)
        assert decision.decision == "match" and decision.floor <= decision.selected.score < 1.0  # type: ignore[union-attr]
        assert skills.replay(BY_RELEVANCE, cwd=str(tmp_path))["status"] == "dry-run"
        assert skills.match_floors()[0].held == 0  # a dry run ran nothing: no point
        assert skills.replay(BY_RELEVANCE, execute=True, cwd=str(tmp_path))["status"] == "succeeded"
        [floor] = skills.match_floors()
        assert (floor.held, floor.counted, floor.floor) == (1, 0, RELEVANCE_FLOOR)

    def test_not_a_wording_nor_an_agents_execution(self, skills: sk.SkillStore, tmp_path: Path) -> None:
        described = "dump the postgres database to a compressed file"  # says what the description says: score 1.0
        assert skills.replay(described, execute=True, cwd=str(tmp_path))["status"] == "succeeded"
        assert skills.replay(BY_RELEVANCE, execute=True, cwd=str(tmp_path), by="agent:mallory")["status"] == "succeeded"
        [floor] = skills.match_floors()
        assert floor.held == 0
        assert [p.by for p in skills.matcher.answers.asked_points(None)] == ["agent:mallory"]  # kept, not counted
