"""A task said with fewer words than a stored description — a pronoun for the object, "config" for "configuration",
the trailing clause left out — is sure when its key words are all the description's and keep its lead and at least
half of it; one that adds or swaps a key word, drops a word that turns the job around, leaves a stated literal
unsaid, or fits another stored description as well is not replayed. Through the public API on a real home."""

from __future__ import annotations

import pytest

import sherpa_skills as sk
from sherpa_skills.skills.match.wording import key_words, says_less
from sherpa_skills.skills.store.models import CapturedProcedure

DEPLOY = "deploy the proxy configuration and restart the service"
DEPLOY_STEPS = ["echo cp proxy.conf /etc/proxy/", "echo systemctl restart proxy"]
SHORTER = [
    "deploy it and restart the service",  # a pronoun for the object
    "deploy the proxy config",  # "config" for "configuration", the trailing clause left out
    "deploy the proxy configuration",  # the trailing clause left out
]
NEAR_MISSES = [
    "deploy the proxy configuration and restart the database",  # swaps a key word
    "deploy the nginx config and restart the service",  # a different object
    "deploy the proxy configuration and notify the team",  # adds key words of its own
    "roll back the proxy configuration",  # another job on the same object
    "restart the service",  # one step of two, without the description's lead ("deploy")
    "deploy the proxy",  # two of five key words: too few to be sure which task
    "restart it",
]


def _capture(skills: sk.SkillStore, task_type: str, description: str, steps: list[str], times: int = 2) -> str:
    for _ in range(times):
        skills.capture(task_type, steps, description=description)
    return skills.procedures(task_type)[0].id


@pytest.fixture
def one(skill_store: sk.SkillStore) -> sk.SkillStore:
    """A store holding one procedure, captured twice (the issue's store)."""
    _capture(skill_store, "deploy-proxy", DEPLOY, DEPLOY_STEPS)
    return skill_store


@pytest.fixture
def several(skill_store: sk.SkillStore) -> sk.SkillStore:
    for task_type, description, steps in [
        ("deploy-proxy", DEPLOY, DEPLOY_STEPS),
        ("db-backup", "dump the postgres database to a compressed file", ["echo pg_dump app", "echo gzip app.sql"]),
        ("load-test", "run the load test against staging", ["echo locust --host staging"]),
        ("clean-cache", "clear the redis cache", ["echo redis-cli FLUSHALL"]),
        ("rotate-logs", "rotate the nginx logs and reload the web server", ["echo logrotate -f nginx"]),
    ]:
        _capture(skill_store, task_type, description, steps, times=3)
    return skill_store


class TestShorterIsSure:
    @pytest.mark.parametrize("task", SHORTER)
    def test_in_a_store_of_one_it_dry_runs(self, one: sk.SkillStore, task: str) -> None:
        deploy = one.procedures("deploy-proxy")[0].id
        decision = one.match(task)
        assert decision.decision == "match" and decision.procedure_id == deploy, decision.reason
        assert "says less than the description, nothing else" in (
            decision.selected.matched_terms if decision.selected else []
        )
        payload = one.replay(task)
        assert payload["status"] == "dry-run" and payload["procedure_id"] == deploy

    @pytest.mark.parametrize("task", SHORTER)
    def test_in_a_larger_store_too(self, several: sk.SkillStore, task: str) -> None:
        decision = several.match(task)
        assert decision.decision == "match" and decision.procedure_id == several.procedures("deploy-proxy")[0].id


class TestNearMissesStayRefused:
    @pytest.mark.parametrize("task", NEAR_MISSES)
    def test_in_a_store_of_one(self, one: sk.SkillStore, task: str) -> None:
        assert one.match(task).decision != "match"
        assert one.replay(task)["status"] != "dry-run"

    @pytest.mark.parametrize("task", NEAR_MISSES)
    def test_in_a_larger_store(self, several: sk.SkillStore, task: str) -> None:
        assert several.match(task).decision != "match"

    def test_dropping_a_negation_turns_the_job_around(self, several: sk.SkillStore) -> None:
        _capture(several, "list-files", "list the shared files not owned by root", ["echo find . ! -user root"])
        assert several.match("list the shared files owned by root").decision != "match"

    def test_dropping_a_negation_is_not_saying_less(self, several: sk.SkillStore) -> None:
        _capture(several, "list-files", "list the shared files not owned by root", ["echo find . ! -user root"])
        decision = several.match("list the shared files owned by root")
        assert all("says less than the description, nothing else" not in c.matched_terms for c in decision.candidates)
        control = several.match("list the shared files not owned")
        assert control.decision == "match" and control.procedure_id == several.procedures("list-files")[0].id

    def test_a_literal_that_disagrees_is_not_replayed(self, skill_store: sk.SkillStore) -> None:
        _capture(skill_store, "ship-logs", "archive the logs under /var/log and upload them", ["echo tar /var/log"])
        assert skill_store.match("archive the logs under /tmp").decision != "match"

    def test_a_literal_the_description_states_must_be_said(self, skill_store: sk.SkillStore) -> None:
        """ "archive the logs" may mean logs elsewhere than the /var/log the procedure archives: asked, not run."""
        _capture(skill_store, "ship-logs", "archive the logs under /var/log and upload them", ["echo tar /var/log"])
        assert skill_store.match("archive the logs").decision != "match"
        assert skill_store.match("archive the logs under /var/log").decision == "match"  # the control

    def test_two_descriptions_holding_all_its_words_are_asked_about(self, skill_store: sk.SkillStore) -> None:
        """ "deploy the proxy config" fits both: which one is for the person to say."""
        deploy = _capture(skill_store, "deploy-proxy", DEPLOY, DEPLOY_STEPS)
        firewall = _capture(
            skill_store,
            "deploy-proxy-firewall",
            "deploy the proxy configuration and reload the firewall rules",
            ["echo cp proxy.conf /etc/proxy/", "echo ufw reload"],
        )
        decision = skill_store.match("deploy the proxy config")
        assert decision.decision == "needs-confirmation" and decision.offered[0].procedure_id == deploy
        assert firewall in {c.procedure_id for c in decision.candidates}
        assert skill_store.match("deploy it and restart the service").procedure_id == deploy  # only one holds these

    def test_a_description_said_whole_wins_over_one_it_is_part_of(self, skill_store: sk.SkillStore) -> None:
        short = _capture(skill_store, "deploy-only", "deploy the proxy configuration", ["echo cp proxy.conf /etc/"])
        _capture(skill_store, "deploy-proxy", DEPLOY, DEPLOY_STEPS)
        assert skill_store.match("deploy the proxy configuration").procedure_id == short

    def test_a_request_a_decision_was_learned_from_is_not_said_less(self, skill_store: sk.SkillStore) -> None:
        """A trajectory's description is a request as someone wrote it: the clause left out ("it arrived damaged")
        may be why it was decided as it was."""
        skill_store.store.add_procedure(
            CapturedProcedure(
                id="",
                task_type="tickets",
                kind="trajectory",
                description="Please refund my order, it arrived damaged and the box was crushed",
                steps=[],
                success_count=5,
            )
        )
        decision = skill_store.match("please refund my order, it arrived", task_type="tickets")
        assert decision.decision != "match"
        assert all("says less than the description, nothing else" not in c.matched_terms for c in decision.candidates)


class TestSaysLess:
    """The rule over key words alone (literals, rivals and cosines are the matcher's)."""

    @pytest.mark.parametrize("task", SHORTER)
    def test_shorter_wordings(self, task: str) -> None:
        assert says_less(key_words(task), DEPLOY)

    @pytest.mark.parametrize(
        "task",
        [
            DEPLOY,  # the same words: `same_wording`, not this rule
            "deploy the proxy config and restart the database",  # a word of its own
            "restart the service",  # the lead dropped
            "deploy the proxy",  # under half
            "deploy",  # one word says nothing
        ],
    )
    def test_not_shorter_wordings(self, task: str) -> None:
        assert not says_less(key_words(task), DEPLOY)

    def test_a_dropped_negation_or_direction_is_not_saying_less(self) -> None:
        assert not says_less(key_words("list files owned by root"), "list files not owned by root")
        assert not says_less(key_words("scale the web workers"), "scale the web workers down")

    def test_a_dropped_scope_is_not_saying_less(self) -> None:
        """ "excluding the vendor folder" narrows what is acted on; "and restart it" is a further step."""
        assert not says_less(key_words("lint the python files"), "lint the python files excluding the vendor folder")
        assert not says_less(key_words("delete the cache files"), "delete the cache files including hidden ones")
        assert says_less(key_words("lint the python files"), "lint the python files and commit the fixes")
