"""An agent's answers (an MCP client's `confirm_procedure`, `by="agent:NAME"`) are claims: they shape what that agent
is offered, never what a person or another agent is. The attack: an agent confirms a backup request as the procedure
that flushes the cache; before, the wording then replayed the flush directly for everyone who asked it."""

from __future__ import annotations

import sherpa_skills as sk

MALLORY = "agent:mallory"
BACKUP_ASK = "take a backup of the db"
REDIS_ASK = "wipe everything in redis"
PROXY_ASK = "push the proxy settings live"


def _id(skills: sk.SkillStore, task_type: str) -> str:
    [proc] = skills.procedures(task_type)
    return proc.id


def _offered(decision: sk.MatchDecision) -> set[str]:
    return {c.procedure_id for c in decision.offered} | ({decision.procedure_id} if decision.procedure_id else set())


class TestAnAgentsAliasIsItsOwn:
    def test_it_replays_for_that_agent_and_for_nobody_else(self, skills: sk.SkillStore) -> None:
        flush, backup = _id(skills, "clean-cache"), _id(skills, "db-backup")
        skills.confirm(BACKUP_ASK, flush, by=MALLORY)
        own = skills.match(BACKUP_ASK, by=MALLORY)
        assert (own.decision, own.procedure_id) == ("match", flush)
        for asker in (None, "alice", "agent:claude-code"):
            decision = skills.match(BACKUP_ASK, by=asker)
            assert decision.procedure_id != flush, (asker, decision.reason)
            assert backup in _offered(decision), asker  # what the descriptions alone offer, as before the claim

    def test_a_replay_by_query_matches_as_its_asker(self, skills: sk.SkillStore) -> None:
        flush = _id(skills, "clean-cache")
        skills.confirm(BACKUP_ASK, flush, by=MALLORY)
        assert skills.replay(BACKUP_ASK, by=MALLORY)["status"] == "dry-run"
        person = skills.replay(BACKUP_ASK)
        assert person["status"] == "needs-confirmation"
        assert flush not in {c["procedure_id"] for c in person["candidates"]}

    def test_a_close_wording_is_not_vouched_for_anyone(self, skills: sk.SkillStore) -> None:
        flush = _id(skills, "clean-cache")
        skills.confirm(BACKUP_ASK, flush, by=MALLORY)
        assert skills.match("grab a backup copy of the db", by=MALLORY).procedure_id != flush


class TestAnAgentsRejectionIsItsOwn:
    def test_others_are_still_offered_what_it_rejected(self, skills: sk.SkillStore) -> None:
        backup = _id(skills, "db-backup")
        skills.reject(BACKUP_ASK, [backup], by=MALLORY)
        assert backup not in _offered(skills.match(BACKUP_ASK, by=MALLORY))
        for asker in (None, "agent:claude-code"):
            assert backup in _offered(skills.match(BACKUP_ASK, by=asker)), asker

    def test_rejecting_what_is_offered_reads_the_agents_own_view(self, skills: sk.SkillStore) -> None:
        backup = _id(skills, "db-backup")
        skills.reject(BACKUP_ASK, [backup], by=MALLORY)
        assert skills.reject(BACKUP_ASK, by=MALLORY) == []  # nothing left to reject for it


class TestAnAgentNeverWithdrawsAPersonsAnswer:
    def test_a_persons_alias_survives_an_agents_rejection(self, skills: sk.SkillStore) -> None:
        proxy = _id(skills, "deploy-proxy")
        alias = skills.confirm(PROXY_ASK, proxy, by="alice")
        skills.reject(PROXY_ASK, [proxy], by=MALLORY)
        assert alias.id in {a.id for a in skills.aliases(proxy)}
        assert skills.match(PROXY_ASK).procedure_id == proxy
        assert proxy not in _offered(skills.match(PROXY_ASK, by=MALLORY))  # the agent's own view holds its answer

    def test_a_persons_rejection_survives_an_agents_confirmation(self, skills: sk.SkillStore) -> None:
        flush = _id(skills, "clean-cache")
        [rejection] = skills.reject(REDIS_ASK, [flush], by="alice")
        skills.confirm(REDIS_ASK, flush, by=MALLORY)
        assert rejection.id in {a.id for a in skills.aliases(flush)}
        assert flush not in _offered(skills.match(REDIS_ASK))
        # A person's rejection holds for every asker: an agent's claim never overrides it.
        assert flush not in _offered(skills.match(REDIS_ASK, by=MALLORY))

    def test_a_person_still_withdraws_an_agents_answer(self, skills: sk.SkillStore) -> None:
        proxy = _id(skills, "deploy-proxy")
        skills.reject(PROXY_ASK, [proxy], by=MALLORY)
        alias = skills.confirm(PROXY_ASK, proxy, by="alice")
        assert [a.id for a in skills.aliases(proxy)] == [alias.id]
        assert skills.match(PROXY_ASK, by=MALLORY).procedure_id == proxy

    def test_an_agent_withdraws_its_own_answer(self, skills: sk.SkillStore) -> None:
        proxy = _id(skills, "deploy-proxy")
        skills.confirm(PROXY_ASK, proxy, by=MALLORY)
        [rejection] = skills.reject(PROXY_ASK, [proxy], by=MALLORY)
        assert [a.id for a in skills.aliases(proxy)] == [rejection.id]

    def test_another_agent_never_withdraws_an_agents_answer(self, skills: sk.SkillStore) -> None:
        proxy = _id(skills, "deploy-proxy")
        alias = skills.confirm(PROXY_ASK, proxy, by=MALLORY)
        skills.reject(PROXY_ASK, [proxy], by="agent:eve")
        assert alias.id in {a.id for a in skills.aliases(proxy)}
        assert skills.match(PROXY_ASK, by=MALLORY).procedure_id == proxy


class TestEachAgentKeepsItsOwnAnswer:
    def test_two_agents_confirming_one_wording_each_replay_it(self, skills: sk.SkillStore) -> None:
        """Before answers had an owner, the second agent's confirmation was dropped (the pair was the first's): it was
        asked again on every call, and told its alias was the other agent's."""
        backup = _id(skills, "db-backup")
        first = skills.confirm(BACKUP_ASK, backup, by=MALLORY)
        second = skills.confirm(BACKUP_ASK, backup, by="agent:eve")
        assert (first.by, second.by) == (MALLORY, "agent:eve") and first.id != second.id
        for agent in (MALLORY, "agent:eve"):
            assert skills.match(BACKUP_ASK, by=agent).procedure_id == backup, agent
        assert skills.match(BACKUP_ASK).decision == "needs-confirmation"  # still their claims, not a person's
        assert [a.by for a in skills.aliases(backup, shown_to="agent:eve")] == ["agent:eve"]  # never the other's
        assert [a.by for a in skills.aliases(backup)] == [MALLORY, "agent:eve"]  # a person sees every claim

    def test_another_agents_rejection_leaves_an_agents_alias(self, skills: sk.SkillStore) -> None:
        backup = _id(skills, "db-backup")
        skills.confirm(BACKUP_ASK, backup, by=MALLORY)
        skills.reject(BACKUP_ASK, [backup], by="agent:eve")
        assert skills.match(BACKUP_ASK, by=MALLORY).procedure_id == backup
        assert backup not in _offered(skills.match(BACKUP_ASK, by="agent:eve"))

    def test_an_agent_repeating_a_persons_answer_adds_nothing(self, skills: sk.SkillStore) -> None:
        proxy = _id(skills, "deploy-proxy")
        alias = skills.confirm(PROXY_ASK, proxy, by="alice")
        assert skills.confirm(PROXY_ASK, proxy, by=MALLORY).id == alias.id  # the person's holds for it already
        assert [a.by for a in skills.aliases(proxy)] == ["alice"]

    def test_a_person_answering_takes_the_agents_answers_over(self, skills: sk.SkillStore) -> None:
        backup = _id(skills, "db-backup")
        first = skills.confirm(BACKUP_ASK, backup, by=MALLORY)
        skills.confirm(BACKUP_ASK, backup, by="agent:eve")
        mine = skills.confirm(BACKUP_ASK, backup, by="alice")
        assert mine.id == first.id and [(a.id, a.by) for a in skills.aliases(backup)] == [(first.id, "alice")]
        assert skills.match(BACKUP_ASK).procedure_id == backup
