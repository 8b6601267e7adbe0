"""The store's own match floor (`skills/match/floor.py`) and who may move it: only a person's answers. The attack
bench/match_floor_bench.py's agent arm makes: an MCP client answering every question (`by="agent:…"`). Under the first
rule (anyone's rejections counted, the bound over all asked points) its rejections of low-scored questions enlarged
the count and lowered the floor, 0.785 → 0.7804 on 67 rejections and no confirmation counted; these keep that shut."""

from __future__ import annotations

import itertools

import sherpa_skills as sk
from sherpa_skills.skills.match.floor import calibrated_floor
from sherpa_skills.skills.match.models import RELEVANCE_FLOOR
from sherpa_skills.skills.store.answers import AskedPoint

BOUND = 0.02
AGENT = "agent:mcp-client"


def _points(n: int, score: float, *, wrong: bool, by: str = "alice") -> list[AskedPoint]:
    return [AskedPoint(score=score, wrong=wrong, by=by) for _ in range(n)]


class TestAnAgentNeverLowersTheFloor:
    def test_agents_rejections_alone_keep_the_shipped_floor(self) -> None:
        """The attack: 60 questions about unrelated asks (the best candidate at 0.2), each rejected by an agent."""
        floor = calibrated_floor(_points(60, 0.2, wrong=True, by=AGENT), RELEVANCE_FLOOR, BOUND)
        assert floor.value >= RELEVANCE_FLOOR, floor.reason

    def test_agents_rejections_never_lower_what_a_persons_answers_give(self) -> None:
        people = _points(55, 0.7, wrong=False) + _points(5, 0.5, wrong=True)
        alone = calibrated_floor(people, RELEVANCE_FLOOR, BOUND)
        for extra in (50, 200, 1000):
            floor = calibrated_floor(people + _points(extra, 0.1, wrong=True, by=AGENT), RELEVANCE_FLOOR, BOUND)
            assert floor.value >= alone.value, (extra, floor.reason)

    def test_an_agents_answers_above_do_not_move_it_either(self) -> None:
        """Claims are shown, never counted: an agent saying high-scored bests were wrong leaves a person's floor."""
        people = _points(60, 0.5, wrong=False)
        alone = calibrated_floor(people, RELEVANCE_FLOOR, BOUND)
        floor = calibrated_floor(people + _points(5, 0.9, wrong=True, by=AGENT), RELEVANCE_FLOOR, BOUND)
        assert (floor.value, floor.claims) == (alone.value, 5)
        assert "not counted" in floor.reason

    def test_a_persons_answers_still_lower_it(self) -> None:
        floor = calibrated_floor(_points(60, 0.5, wrong=False), RELEVANCE_FLOOR, BOUND)
        assert floor.basis == "calibrated" and floor.value == 0.5


def test_an_agent_rejecting_unrelated_asks_through_the_store_keeps_the_shipped_floor(
    skill_store: sk.SkillStore,
) -> None:
    """The same attack through the public store, as an MCP client would answer: the store must not replay more."""
    for task_type, description, steps in [
        ("deploy-proxy", "deploy the proxy configuration and restart the service", ["echo systemctl restart proxy"]),
        ("db-backup", "dump the postgres database to a compressed file", ["echo pg_dump app"]),
    ]:
        for _ in range(3):
            skill_store.capture(task_type, steps, description=description)
    verbs = ("water", "paint", "fold", "polish", "sort", "sweep", "stack", "tidy")
    things = ("the plants", "the fence", "the laundry", "the silverware", "the books", "the porch", "the chairs", "it")
    rejected = 0
    for verb, thing in itertools.product(verbs, things):
        query = f"{verb} {thing}"
        top = skill_store.match(query).candidates[:1]
        if top:
            skill_store.reject(query, [top[0].procedure_id], by=AGENT)
            rejected += 1
    assert rejected >= 50  # enough answers for the store's own floor at the shipped bound
    assert skill_store.match("paint the fence").floor >= RELEVANCE_FLOOR
    assert skill_store.matcher.floor_for(None).value >= RELEVANCE_FLOOR
