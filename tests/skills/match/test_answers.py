"""The three answers through the Python API on a real store, and what judges' answers leave behind: a confirmed
wording replays directly next time (an alias), a refused one is never offered again, neither crosses task types."""

from __future__ import annotations

import pytest

import sherpa_skills as sk
from sherpa_skills.skills.match.wording import key_words, same_wording

DEPLOY = "deploy the proxy configuration and restart the service"
ASKED = "push out the new proxy settings and bounce it"  # plausible, not sure


@pytest.fixture
def skills(skill_store: sk.SkillStore) -> sk.SkillStore:
    for task_type, description, steps in [
        ("deploy-proxy", DEPLOY, ["echo cp proxy.conf /etc/proxy/", "echo systemctl restart proxy"]),
        ("db-backup", "dump the postgres database to a compressed file", ["echo pg_dump app", "echo gzip app.sql"]),
        ("load-test", "run the load test against staging", ["echo locust --users {{ users }} --host staging"]),
        ("clean-cache", "clear the redis cache", ["echo redis-cli FLUSHALL"]),
    ]:
        for _ in range(3):  # one success is not proof: captured three times
            skill_store.capture(task_type, steps, description=description)
    return skill_store


def _id(skills: sk.SkillStore, task_type: str) -> str:
    return skills.procedures(task_type)[0].id


class TestThreeAnswers:
    def test_said_the_same_way_folded_is_sure(self, skills: sk.SkillStore) -> None:
        """Abbreviations and function words folded: "config" is "configuration", "the" says nothing."""
        decision = skills.match("deploy the proxy config and restart the service")
        assert decision.decision == "match" and decision.procedure_id == _id(skills, "deploy-proxy")
        assert "says what the description says" in decision.selected.matched_terms  # type: ignore[union-attr]

    def test_plausible_is_offered_not_replayed(self, skills: sk.SkillStore) -> None:
        decision = skills.match(ASKED)
        assert decision.decision == "needs-confirmation" and decision.selected is None
        assert decision.offered[0].procedure_id == _id(skills, "deploy-proxy") and len(decision.offered) <= 5
        payload = skills.replay(ASKED)
        assert payload["status"] == "needs-confirmation" and payload["steps"] == []
        assert payload["candidates"][0] == {
            "procedure_id": _id(skills, "deploy-proxy"),
            "description": DEPLOY,
            "score": decision.offered[0].score,
            "params": {},
        }

    def test_unrelated_is_no_match(self, skills: sk.SkillStore) -> None:
        decision = skills.match("what's the capital of australia")
        assert decision.decision == "no-match" and not decision.offered

    def test_a_near_miss_is_never_replayed(self, skills: sk.SkillStore) -> None:
        """The same words save one that changes the job: asked at most, never replayed. (In a store this small the
        relevance model's cosine gap over-trusts a lone neighbour — "restore the postgres database from the compressed
        file" is replayed here; bench/match_routines_bench.py checks near misses among 300 other procedures.)"""
        for task in ("clear the browser cache", "roll back the proxy configuration"):
            assert skills.match(task).decision != "match", task

    def test_a_literal_that_disagrees_is_not_offered(self, skills: sk.SkillStore) -> None:
        decision = skills.match("dump the postgres database to /srv/x.tgz and push out the new proxy settings")
        assert all(c.procedure_id != _id(skills, "db-backup") for c in decision.offered)


class TestAliases:
    def test_a_confirmed_wording_replays_directly_next_time(self, skills: sk.SkillStore) -> None:
        deploy = _id(skills, "deploy-proxy")
        payload = skills.replay(ASKED, procedure_id=deploy)  # the caller's answer: this one
        assert payload["status"] == "dry-run" and payload["alias"]["procedure_id"] == deploy
        again = skills.match(ASKED)
        assert again.decision == "match" and again.procedure_id == deploy
        assert any("repeats a confirmed wording" in t for t in again.selected.matched_terms)  # type: ignore[union-attr]
        assert [a.kind for a in skills.aliases(deploy)] == ["alias"]

    def test_literals_become_the_procedures_parameters(self, skills: sk.SkillStore) -> None:
        load = _id(skills, "load-test")
        alias = skills.confirm("hammer staging with 500 simulated users", load)
        assert alias.text == "hammer staging with {{ users }} simulated users"
        decision = skills.match("hammer staging with 800 simulated users")
        assert decision.decision == "match" and decision.procedure_id == load and decision.params == {"users": "800"}

    def test_secrets_are_redacted_from_an_alias(self, skills: sk.SkillStore) -> None:
        alias = skills.confirm("push out the proxy settings, password=hunter2secret", _id(skills, "deploy-proxy"))
        assert "hunter2secret" not in alias.text

    def test_a_confirmation_whose_literals_disagree_is_refused(self, skills: sk.SkillStore) -> None:
        with pytest.raises(sk.UsageError, match="literals disagree"):
            skills.confirm("dump the postgres database to /srv/backup.tgz", _id(skills, "db-backup"))
        assert skills.aliases() == []

    def test_an_alias_never_crosses_task_types(self, skills: sk.SkillStore) -> None:
        """Confirmed for one task type's matches, an alias holds there only: not unscoped, not for another type."""
        deploy = _id(skills, "deploy-proxy")
        skills.confirm(ASKED, deploy, task_type="deploy-proxy")
        assert skills.match(ASKED, task_type="deploy-proxy").decision == "match"
        assert skills.match(ASKED).decision != "match"
        with pytest.raises(sk.UsageError, match="never crosses"):
            skills.confirm(ASKED, deploy, task_type="db-backup")

    def test_forget_removes_it(self, skills: sk.SkillStore) -> None:
        alias = skills.confirm(ASKED, _id(skills, "deploy-proxy"))
        assert skills.forget(alias.id).id == alias.id
        assert skills.aliases() == [] and skills.match(ASKED).decision == "needs-confirmation"
        with pytest.raises(sk.StoreError, match="no alias 'a"):
            skills.forget(alias.id)
        with pytest.raises(sk.StoreError, match="not an alias or rejection id"):
            skills.forget("nonsense")


class TestRejections:
    def test_a_no_is_remembered_and_not_asked_again(self, skills: sk.SkillStore) -> None:
        rejected = skills.reject(ASKED)
        assert [a.procedure_id for a in rejected] == [_id(skills, "deploy-proxy")]
        again = skills.match(ASKED)
        assert again.decision == "no-match" and not again.offered
        assert "a judge said this wording is not about it" in (again.candidates[0].reason or "")
        assert [a.kind for a in skills.aliases()] == ["rejection"]

    def test_a_later_yes_replaces_the_no(self, skills: sk.SkillStore) -> None:
        skills.reject(ASKED)
        skills.confirm(ASKED, _id(skills, "deploy-proxy"))
        assert [a.kind for a in skills.aliases()] == ["alias"] and skills.match(ASKED).decision == "match"


class TestWording:
    @pytest.mark.parametrize(
        ("a", "b"),
        [
            ("run the db migrations on staging", "run the database migrations on staging"),
            ("rebase my feature branch on the latest main", "rebase the feature branch onto latest main"),
            ("sort the imports", "sort imports"),
        ],
    )
    def test_the_same_thing_said_differently(self, a: str, b: str) -> None:
        assert same_wording(key_words(a), key_words(b))

    @pytest.mark.parametrize(
        ("a", "b"),
        [
            ("find files not owned by root", "find files owned by root"),
            ("list files modified before noon", "list files modified after noon"),
            ("run the database migrations", "roll back the database migrations"),
            ("deploy", "deploy"),  # one key word is not enough to be sure of anything
        ],
    )
    def test_what_changes_the_job_stays(self, a: str, b: str) -> None:
        assert not same_wording(key_words(a), key_words(b))
