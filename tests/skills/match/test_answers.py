"""The three answers through the Python API on a real store, and what judges' answers leave behind: a confirmed
wording replays directly next time (an alias), a refused one is never offered again, neither crosses task types."""

from __future__ import annotations

import pytest

import sherpa_skills as sk
from sherpa_skills.skills.match.vouch import Evidence, repeated, vouched
from sherpa_skills.skills.match.wording import key_words, same_wording

DEPLOY = "deploy the proxy configuration and restart the service"
ASKED = "push out the new proxy settings and bounce it"  # plausible, not sure


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


class TestAliasesVouch:
    """A confirmed wording vouches for other wordings said in words of their own (`match.vouch`); a wording that
    repeats the procedure's words but changes them, or one from another scope, is not vouched for."""

    def test_another_wording_in_other_words_replays_directly(self, skills: sk.SkillStore) -> None:
        load = _id(skills, "load-test")
        task = "see if staging survives lots of traffic"
        assert skills.match(task).decision != "match"
        alias = skills.confirm("hammer staging with 500 simulated users", load)
        decision = skills.match(task)
        assert decision.decision == "match" and decision.procedure_id == load
        assert decision.selected is not None and decision.selected.alias_id == alias.id
        assert f"a confirmed wording ({alias.id}) vouches for {load}" in (decision.reason or "")

    def test_a_wording_that_changes_the_descriptions_words_is_not_vouched_for(self, skills: sk.SkillStore) -> None:
        """ "roll back the proxy configuration" is close in meaning to the confirmed "push out the new proxy settings",
        but repeats the description's words and changes what is done: a near miss, asked about at most."""
        skills.confirm(ASKED, _id(skills, "deploy-proxy"))
        decision = skills.match("roll back the proxy configuration")
        assert decision.decision != "match" and decision.selected is None

    def test_a_wording_that_changes_the_aliass_words_is_not_vouched_for(self, skills: sk.SkillStore) -> None:
        backup = _id(skills, "db-backup")
        skills.confirm("back up the app data", backup)
        assert skills.match("make a backup of our data").procedure_id == backup
        assert skills.match("restore the app data").decision != "match"

    def test_an_agents_wording_replays_itself_and_vouches_for_nothing(self, skills: sk.SkillStore) -> None:
        """An MCP agent's answer is a claim: its own wording replays for it (its next call), no other wording is widened
        into the procedure, and nobody else sharing the store replays on its word (test_agent_answers.py)."""
        load = _id(skills, "load-test")
        skills.confirm("hammer staging with 500 simulated users", load, by="agent:ops")
        assert skills.match("hammer staging with 500 simulated users", by="agent:ops").procedure_id == load
        assert skills.match("hammer staging with 500 simulated users").decision != "match"
        assert skills.match("see if staging survives lots of traffic", by="agent:ops").decision != "match"

    def test_a_wording_that_leaves_out_the_descriptions_place_is_not_vouched_for(self, skills: sk.SkillStore) -> None:
        """NL2Bash dev stream (bench/match_floor_bench.py): "…in the current directory tree" was vouched into a chmod of
        /path/to/base/dir by an alias naming that folder. Where the work happens is not for meaning to guess."""
        described = "Find all directories under /path/to/base/dir and change their permission to 755"
        for _ in range(3):
            skills.capture(
                "fix-perms", ["find /path/to/base/dir -type d -print0 | xargs -0 chmod 755"], description=described
            )
        perms = _id(skills, "fix-perms")
        skills.confirm("Give all directories in the /path/to/base/dir tree read and execute privileges", perms)
        for task in (
            "Make all directories in the current directory tree accessible to anybody",
            "Make every folder in this tree accessible to anybody",
        ):
            decision = skills.match(task)
            assert decision.decision != "match", (task, decision.reason)

    def test_unrelated_is_not_vouched_for(self, skills: sk.SkillStore) -> None:
        skills.confirm("hammer staging with 500 simulated users", _id(skills, "load-test"))
        assert skills.match("what's the capital of australia").decision == "no-match"

    def test_an_alias_vouches_only_in_its_scope(self, skills: sk.SkillStore) -> None:
        load = _id(skills, "load-test")
        skills.confirm("hammer staging with 500 simulated users", load, task_type="load-test")
        task = "see if staging survives lots of traffic"
        assert skills.match(task, task_type="load-test").procedure_id == load
        assert skills.match(task).decision != "match"


class TestVouchRule:
    """The rule itself, as a plain function over each candidate's evidence."""

    @staticmethod
    def _vouched(
        *evidence: Evidence, floor: float = 0.35, gap: float = 0.05, words: float = 0.34, described: float = 0.35
    ) -> str | None:
        found = vouched(list(evidence), floor, gap, words, described)
        return found.procedure_id if found else None

    def test_both_tellings_close_and_clear_of_the_rest(self) -> None:
        assert self._vouched(Evidence("a", 0.5, 0.6, 0.2), Evidence("b", 0.4, None, 0.0)) == "a"

    def test_without_an_alias_nothing_is_vouched_for(self) -> None:
        assert self._vouched(Evidence("a", 0.9, None, 0.0)) is None

    def test_one_telling_alone_is_not_enough(self) -> None:
        assert self._vouched(Evidence("a", 0.3, 0.9, 0.2)) is None
        assert self._vouched(Evidence("a", 0.9, 0.3, 0.2)) is None

    def test_a_close_alias_needs_the_description_only_nearby(self) -> None:
        """The confirmed wording is how people ask; the description, often worded as the capture's author saw it, has
        to be in the same neighbourhood (`described`), not as close — and below that it is not enough."""
        assert self._vouched(Evidence("a", 0.27, 0.45, 0.2), described=0.25) == "a"
        assert self._vouched(Evidence("a", 0.27, 0.45, 0.2), described=0.3) is None
        assert self._vouched(Evidence("a", 0.2, 0.9, 0.2), described=0.25) is None

    def test_a_close_rival_is_asked_about(self) -> None:
        assert self._vouched(Evidence("a", 0.5, 0.6, 0.2), Evidence("b", 0.58, None, 0.0)) is None
        assert self._vouched(Evidence("a", 0.5, 0.6, 0.2), Evidence("b", 0.2, 0.57, 0.0)) is None

    def test_repeating_the_procedures_words_is_a_near_miss(self) -> None:
        assert self._vouched(Evidence("a", 0.7, 0.8, 0.5)) is None

    def test_saying_none_of_the_procedures_words_is_not_enough(self) -> None:
        """Cosine alone puts unrelated short questions past both floors ("Do you sell refurbished phones?" to a
        refund's confirmed "Order came damaged, requesting money back": 0.42): asked about at most."""
        SET = {"floor": 0.3, "described": 0.25, "words": 0.25}  # relevance.json's
        assert self._vouched(Evidence("a", 0.33, 0.42, 0.0), Evidence("b", 0.17, None, 0.0, 0.34), **SET) is None
        assert self._vouched(Evidence("a", 0.33, 0.42, 0.25), Evidence("b", 0.17, None, 0.0, 0.34), **SET) == "a"

    def test_repeated_is_the_largest_share_of_one_wording(self) -> None:
        said = key_words("restore my home folder from the external drive")
        assert repeated(said, [key_words("archive my home folder to the external drive"), frozenset()]) == 0.8
        assert repeated(said, []) == 0.0


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
