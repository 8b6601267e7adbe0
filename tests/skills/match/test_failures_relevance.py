"""Defensive learnings reach planning by meaning — the procedures' scores,
a floor calibrated for learnings — deduplicated,
and never for a task they are not about. Real store, real chromadb companion, the real MiniLM embedder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from sherpa_skills.cli import main
from sherpa_skills.skills.match.failures import COLLECTION, FLOOR, FailureFinder
from sherpa_skills.skills.mine.mining import mine
from sherpa_skills.skills.store.database import ProcedureDatabase
from sherpa_skills.skills.store.models import CapturedLearning

_ids = iter(range(1, 100_000))


def failed(command: str, output: str, description: str | None = None, cwd: str | None = None) -> Any:
    """A failed command as the session store hands it to mining (a Claude Code log: the agent says what it was for)."""
    n = next(_ids)
    return SimpleNamespace(
        id=n,
        source="claude-code",
        source_file="f.jsonl",
        session_id="s1",
        seq=n,
        timestamp=1000.0 + n,
        cwd=cwd,
        command=command,
        outcome="failure",
        exit_code=1,
        output=output,
        agent=None,
        description=description,
    )


def mined_store(home: Path, *, tar: bool = False) -> ProcedureDatabase:
    """Failures mined from sessions (`npm run build` under task type `npm-run`,
    twice the same lesson) and a few others."""
    home.mkdir(parents=True, exist_ok=True)
    store = ProcedureDatabase(path=home / "store.db")
    build = "Type error: Property 'total' does not exist on type 'Cart'"
    commands = [
        failed("npm run build", build, "Build the frontend for production", "/home/ana/shop/frontend"),
        failed(
            "npm run build", build, "Build the frontend for production", "/home/ana/shop/frontend"
        ),  # the same lesson again
        failed(
            "docker compose up -d db",
            "Bind for 0.0.0.0:5432 failed: port is already allocated",
            "Start the postgres container",
            "/home/ana/shop",
        ),
        failed(
            "git push origin main",
            "! [rejected] main -> main (non-fast-forward)",
            "Push the release commit",
            "/home/ana/shop",
        ),
        failed("pytest -x tests/api", "2 failed, 40 passed", "Run the API tests", "/home/ana/shop/backend"),
    ]
    if tar:
        commands.append(
            failed(
                "tar -czf /mnt/backup/photos.tgz ~/Pictures",
                "tar: /mnt/backup: Cannot open: No such file or directory",
                "Archive the pictures folder to the backup disk",
                "/home/ana",
            )
        )
    assert mine(commands, store).learnings == len(commands)
    store.add_learning(
        CapturedLearning(
            task_type="deploy-site",
            command="rsync -a public/ web:/var/www",
            error="Permission denied (publickey)",
            about="Publish the site",
            source="run",
        )
    )
    return store


@pytest.fixture
def store(home: Path) -> ProcedureDatabase:
    return mined_store(home)


def commands(found: Any) -> list[str]:
    return [x.learning.command for x in found.found]


class TestByMeaning:
    def test_build_the_frontend_finds_the_npm_run_build_failures_mined_under_npm_run(
        self, store: ProcedureDatabase
    ) -> None:
        """Another task type, no shared task-type word: found by what the task means, once, with its count."""
        found = FailureFinder(store).find("build the frontend", "build-frontend")
        assert found.mode == "semantic" and found.degraded is None
        assert commands(found) == ["npm run build"]
        (x,) = found.found
        assert x.learning.task_type == "npm-run" and x.learning.seen == 2
        assert x.relevance >= FLOOR and x.semantic is not None and f"floor {FLOOR:g}" in x.why

    @pytest.mark.parametrize(
        "task", ["compile the frontend for production", "create a production build of the frontend"]
    )
    def test_a_paraphrase_finds_them(self, store: ProcedureDatabase, task: str) -> None:
        assert commands(FailureFinder(store).find(task)) == ["npm run build"]

    @pytest.mark.parametrize(
        "task", ["back up the photos with tar", "write a haiku about autumn", "translate this letter into German"]
    )
    def test_an_unrelated_task_gets_none(self, store: ProcedureDatabase, task: str) -> None:
        """Nothing shown is better than a wrong lesson: the floor refuses every stored learning."""
        found = FailureFinder(store).find(task, "photos-backup")
        assert found.found == [] and found.mode == "semantic" and found.considered > 0

    def test_a_store_that_holds_the_lesson_shows_only_it(self, tmp_path: Path) -> None:
        """With a tar failure stored, the backup task sees that one, and still nothing about npm, docker or git."""
        found = FailureFinder(mined_store(tmp_path / "home", tar=True)).find("back up the photos with tar")
        assert commands(found) == ["tar -czf /mnt/backup/photos.tgz ~/Pictures"]

    def test_the_exact_task_type_always_counts(self, store: ProcedureDatabase) -> None:
        """A task type's own learnings are shown whatever the task's words, first, at relevance 1.0, saying why."""
        found = FailureFinder(store).find("write a haiku about autumn", "deploy-site")
        assert commands(found) == ["rsync -a public/ web:/var/www"]
        assert found.found[0].relevance == 1.0 and found.found[0].why == "learned under this task type (deploy-site)"

    def test_nothing_to_find(self, tmp_path: Path) -> None:
        empty = ProcedureDatabase(path=tmp_path / "empty.db")
        assert FailureFinder(empty).find("build the frontend").found == []
        assert FailureFinder(mined_store(tmp_path / "home")).find("   ").found == []


class TestIndex:
    def test_new_learnings_are_embedded_on_write_and_found_at_once(self, store: ProcedureDatabase) -> None:
        """The finder keeps the companion current: a learning written after the first lookup is found by meaning."""
        finder = FailureFinder(store)
        assert finder.find("renew the TLS certificate").found == []
        new = store.add_learning(
            CapturedLearning(
                task_type="certbot",
                command="certbot renew",
                error="too many requests",
                about="Renew the TLS certificates",
            )
        )
        assert commands(finder.find("renew the TLS certificate")) == ["certbot renew"]
        # Two views of it are indexed: what ran, and what it was for.
        assert {str(new.id), f"{new.id}.about"} <= finder.companion().ids(COLLECTION)

    def test_the_index_is_rebuilt_after_the_companion_folder_is_deleted(
        self, store: ProcedureDatabase, capsys: Any
    ) -> None:
        """SQLite is the truth: with the companion folder gone, `learn reindex` (or the next lookup)
        rebuilds the vectors."""
        home = store.path.parent
        assert commands(FailureFinder(store).find("build the frontend")) == ["npm run build"]
        shutil.rmtree(home / "companion")
        assert main(["learn", "reindex", "--home", str(home), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["learnings"] == store.learnings_version()[0] == 5
        found = FailureFinder(store).find("build the frontend")
        assert commands(found) == ["npm run build"] and found.degraded is None
        shutil.rmtree(home / "companion")
        found = FailureFinder(store).find("build the frontend")  # no reindex: the lookup heals the index itself
        assert commands(found) == ["npm run build"] and found.degraded is None

    def test_without_meaning_key_terms_decide_and_say_so(
        self, store: ProcedureDatabase, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The hashing embedder matches words only: learnings are found by key terms, at the lexical floor, flagged."""
        monkeypatch.setenv("SHERPA_SKILLS_EMBEDDER", "hashing")
        finder = FailureFinder(store, companion_path=store.path.parent / "companion-hashing")
        found = finder.find("the npm build fails on the frontend")
        assert found.mode == "lexical" and "matches words, not meaning" in (found.degraded or "")
        assert commands(found) == ["npm run build"]
        assert finder.find("write a haiku about autumn").found == []


def test_mining_keeps_what_a_failed_command_was_for(tmp_path: Path) -> None:
    """The agent's description and the folder's last two parts: the meaning a bare `npm run build` lacks."""
    (npm, *_) = [x for x in mined_store(tmp_path / "home").learnings() if x.command == "npm run build"]
    assert npm.about == "Build the frontend for production in shop/frontend"


def test_the_planner_prompt_gets_them_with_relevance(home: Path) -> None:
    """plan_context puts the relevant learnings, with why each was taken, where the planning prompt shows them."""
    from sherpa_skills.engine.belief import Belief
    from sherpa_skills.engine.registry import ActionContext
    from sherpa_skills.skills.capture.planner import NoArgs, plan_context

    mined_store(home)
    belief = Belief(context={"task": "build the frontend", "task_type": "build-frontend"})
    result = plan_context(NoArgs(), ActionContext(view=belief.view(), state="plan", tick=1, home=home))
    (shown,) = result.context["learnings"]
    assert shown["command"] == "npm run build" and shown["seen"] == 2 and shown["relevance"] >= FLOOR and shown["why"]
    belief = Belief(context={"task": "back up the photos with tar", "task_type": "photos-backup"})
    assert (
        plan_context(NoArgs(), ActionContext(view=belief.view(), state="plan", tick=1, home=home)).context["learnings"]
        == []
    )


class TestCli:
    def test_failures_for_a_task_say_relevance_and_why(self, store: ProcedureDatabase, capsys: Any) -> None:
        home = str(store.path.parent)
        assert (
            main(
                [
                    "learn",
                    "failures",
                    "--task",
                    "build the frontend",
                    "--task-type",
                    "build-frontend",
                    "--home",
                    home,
                    "--json",
                ]
            )
            == 0
        )
        out = json.loads(capsys.readouterr().out)
        assert out["mode"] == "semantic" and out["floor"] == FLOOR and out["query"] == "build the frontend"
        (x,) = out["learnings"]
        assert x["command"] == "npm run build" and x["seen"] == 2 and x["relevance"] >= FLOOR and "floor" in x["why"]
        assert main(["learn", "failures", "--task", "back up the photos with tar", "--home", home, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["learnings"] == []

    def test_an_empty_task_is_bad_usage(self, store: ProcedureDatabase, capsys: Any) -> None:
        assert main(["learn", "failures", "--task", " ", "--home", str(store.path.parent)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("sherpa-skills: --task needs") and "Traceback" not in err
