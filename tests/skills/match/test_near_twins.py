"""Near twins: a task that swaps a key word for its opposite ("stop" for "start", "unmount" for "mount"), or drops or
adds a negation, is asked about and never replayed, however close its meaning — through Python, the CLI and MCP. A
verb said with one of its synonyms ("launch" for "start", "remove" for "delete") is the same task."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import sherpa_skills as sk
from sherpa_skills.skills.match.wording import contrast, earlier_key, key_words, opposite, wording_key

SERVER = "start the nginx web server on the proxy host"
MOUNT = "mount the backup disk on the build machine"
OWNED = "list the shared files not owned by root"
TWINS = [
    ("stop the nginx web server on the proxy host", "stop", "start"),
    ("unmount the backup disk on the build machine", "unmount", "mount"),
    ("list the shared files owned by root", "", "not"),
]
SAME = ["launch the nginx web server on the proxy host", "start the nginx web server on the proxy host now"]


class TestWords:
    @pytest.mark.parametrize(
        ("a", "b"),
        [
            ("start", "stop"),
            ("enable", "disable"),
            ("mount", "unmount"),
            ("encrypt", "decrypt"),
            ("add", "delete"),
            ("find", "delete"),  # a verb that looks and one that destroys
            ("list", "kill"),
            ("count", "purge"),
        ],
    )
    def test_opposites_turn_a_task_around(self, a: str, b: str) -> None:
        assert opposite(a, b) and opposite(b, a)

    @pytest.mark.parametrize(
        ("a", "b"), [("start", "launch"), ("list", "find"), ("delete", "kill"), ("redeploy", "deploy"), ("a", "una")]
    )
    def test_other_words_are_not_opposites(self, a: str, b: str) -> None:
        assert not opposite(a, b)

    def test_a_swapped_opposite_and_a_dropped_negation_are_contrasts(self) -> None:
        assert contrast(key_words("stop the web server"), key_words("start the web server")) == ("stop", "start")
        assert contrast(key_words("list files owned by root"), key_words("list files not owned by root")) == ("", "not")
        assert contrast(key_words("list files without a backup"), key_words("list files")) == ("without", "")
        assert contrast(key_words("start the web server"), key_words("launch the web server")) is None

    def test_a_negation_and_an_opposite_together_cancel(self) -> None:
        """ "not older than" says "newer than" the other way round: the same task, no contrast."""
        assert contrast(key_words("find files not older than a day"), key_words("find files newer than a day")) is None
        not_lately, long_ago = (
            key_words("files not accessed in the last 30 days"),
            key_words("files accessed over 30 days ago"),
        )
        assert contrast(not_lately, long_ago) is None
        assert contrast(key_words("find it, not in the .svn tree"), key_words("find it, except the .svn tree")) is None

    def test_verbs_of_one_action_are_one_word(self) -> None:
        assert key_words("remove the old log files") == key_words("delete the old log files")
        assert key_words("display the disk usage") == key_words("show the disk usage")
        assert key_words("list the old log files") != key_words("delete the old log files")

    def test_the_key_answers_had_before_the_fold_is_known(self) -> None:
        assert earlier_key("remove the old logs") == "log old remove"
        assert wording_key("remove the old logs") == "delete log old"


@pytest.fixture
def twins_home(skill_store: sk.SkillStore) -> sk.SkillStore:
    for task_type, description, step in [
        ("start-proxy", SERVER, "echo systemctl start nginx"),
        ("mount-backup", MOUNT, "echo mount /dev/sdb1 /mnt/backup"),
        ("list-files", OWNED, "echo find /srv/shared ! -user root"),
        ("disk-usage", "show the disk usage of the home directory", "echo du -sh ~"),
        ("git-status", "check the git status of the repository", "echo git status"),
    ]:
        for _ in range(3):
            skill_store.capture(task_type, [step], description=description)
    return skill_store


class TestThroughPython:
    @pytest.mark.parametrize(("task", "said", "described"), TWINS)
    def test_a_near_twin_is_never_replayed(
        self, twins_home: sk.SkillStore, task: str, said: str, described: str
    ) -> None:
        decision = twins_home.match(task)
        assert decision.decision != "match", decision.reason
        assert twins_home.replay(task)["status"] != "dry-run"
        twin = next(c for c in decision.candidates if c.contrast)
        assert twin.contrast == [said, described] and "never replayed" in (twin.reason or "")

    @pytest.mark.parametrize("task", SAME)
    def test_the_same_task_in_other_verbs_replays(self, twins_home: sk.SkillStore, task: str) -> None:
        decision = twins_home.match(task)
        assert decision.decision == "match" and decision.selected is not None
        assert decision.selected.description == SERVER

    def test_a_confirmed_twin_wording_does_not_vouch_for_the_opposite(self, twins_home: sk.SkillStore) -> None:
        start = twins_home.procedures("start-proxy")[0].id
        twins_home.confirm("bring the proxy host's web server up", start)
        assert twins_home.match("stop the nginx web server on the proxy host").decision != "match"

    def test_a_rejection_remembered_before_verbs_were_folded_still_holds(self, twins_home: sk.SkillStore) -> None:
        """A home whose rejection was keyed without the fold: "remove" now reads as "delete", and the refusal stands."""
        twins_home.capture("clean-logs", ["echo rm /var/log/app/*.log"], description="delete the app log files")
        twins_home.capture("clean-logs", ["echo rm /var/log/app/*.log"], description="delete the app log files")
        pid = twins_home.procedures("clean-logs")[0].id
        task = "remove the app log files"
        assert twins_home.match(task).procedure_id == pid  # the fold makes it the same task
        twins_home.matcher.answers.add_rejection(pid, task, earlier_key(task), scope=None, by="person")
        decision = twins_home.match(task)
        assert decision.decision != "match" and pid not in {c.procedure_id for c in decision.offered}


def _cli(home: Path, *args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "sherpa_skills", *args, "--json", "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    return json.loads(done.stdout)


class TestLookingAndDestroying:
    """A destroying procedure never replays for a task that asked to look, nor a looking one for a task that asked to
    destroy: "delete files in /var/log modified more than 60 minutes ago" replayed a `find` of them (relevance 0.80)."""

    def test_either_way_it_is_asked_about(self, skill_store: sk.SkillStore) -> None:
        for task_type, description, step in [
            ("old-logs", "Find files in /var/log modified more than 60 minutes ago", "find /var/log -mmin +60"),
            ("kill-py", "kill all python processes on the build host", "pkill python"),
        ]:
            for _ in range(3):
                skill_store.capture(task_type, [step], description=description)
        for task, procedure in [
            ("delete files in /var/log modified more than 60 minutes ago", "old-logs"),
            ("list all python processes on the build host", "kill-py"),
        ]:
            decision = skill_store.match(task)
            assert decision.decision != "match", (task, decision.reason)
            twin = next(c for c in decision.candidates if c.task_type == procedure)
            assert twin.contrast, twin

    def test_looking_and_then_destroying_is_not_a_swap(self, skill_store: sk.SkillStore) -> None:
        """Saying both (find them and delete them) swaps nothing: relevance decides as before."""
        assert contrast(key_words("find the old logs and delete them"), key_words("delete the old logs")) is None


class TestThroughTheDoors:
    def test_the_cli_refuses_a_near_twin_and_replays_a_synonym(self, twins_home: sk.SkillStore) -> None:
        home = twins_home.home
        for task, _, _ in TWINS:
            out = _cli(home, "learn", "replay", task)
            assert out["status"] != "dry-run" and out["steps"] == [], task
        assert _cli(home, "learn", "replay", SAME[0])["status"] == "dry-run"

    def test_mcp_find_procedure_never_answers_a_twin_with_a_dry_run(
        self, twins_home: sk.SkillStore, tmp_path: Path
    ) -> None:
        pytest.importorskip("mcp")
        from mcp import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        env = {"PYTHONPATH": os.pathsep.join(sys.path), "HF_HUB_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        env |= {k: v for k, v in os.environ.items() if k.startswith("SHERPA_SKILLS_") and k != "SHERPA_SKILLS_HOME"}
        server = StdioServerParameters(
            command=sys.executable, args=["-m", "sherpa_skills", "mcp", "--home", str(twins_home.home)], env=env
        )

        async def ask() -> list[dict]:
            with open(os.devnull, "w") as quiet:
                async with stdio_client(server, errlog=quiet) as (read, write), ClientSession(read, write) as session:
                    await session.initialize()
                    answers = []
                    for task in [t for t, _, _ in TWINS] + SAME[:1]:
                        result = await session.call_tool("find_procedure", {"task": task})
                        assert not result.is_error, result.content
                        answers.append(result.structured_content or json.loads(result.content[0].text))  # type: ignore[union-attr]
                    return answers

        *twins, same = asyncio.run(asyncio.wait_for(ask(), timeout=240))
        assert all(a["decision"] != "dry-run" for a in twins), twins
        assert same["decision"] == "dry-run", same
