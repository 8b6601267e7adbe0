"""Defensive learnings reach planning by what the task is about, not only by an exact task type."""

from __future__ import annotations

from pathlib import Path

from sherpa_skills.skills.learnings import relevant_learnings
from sherpa_skills.skills.models import CapturedLearning
from sherpa_skills.skills.store import SkillStore


def store_with_learnings(tmp_path: Path) -> SkillStore:
    store = SkillStore(tmp_path / "store.db")
    for task_type, command, error in [
        ("npm-run", "npm run build", "Type error: Property 'x' does not exist"),
        ("npm-run", "npm run build", "Type error: Property 'x' does not exist"),  # the same lesson: one row, seen twice
        ("tar", "tar -czf backup.tgz /srv/data", "tar: /srv/data: Cannot open: Permission denied"),
        ("docker-compose", "docker compose up -d db", "port 5432 is already allocated"),
        ("deploy-site", "rsync -a public/ web:/var/www", "Permission denied (publickey)"),
    ]:
        store.add_learning(CapturedLearning(task_type=task_type, command=command, error=error, source="session:test"))
    return store


def test_a_planner_for_another_task_type_sees_the_failures_of_what_it_does(tmp_path: Path) -> None:
    """`build-frontend` sees the `npm run build` failures mined under `npm-run`, deduplicated, and nothing about tar."""
    found = relevant_learnings(store_with_learnings(tmp_path), "build the frontend with npm", "build-frontend")
    assert [x.command for x, _ in found] == ["npm run build"] and found[0][0].seen == 2


def test_the_exact_task_type_always_counts(tmp_path: Path) -> None:
    found = relevant_learnings(store_with_learnings(tmp_path), "publish the site", "deploy-site")
    assert [x.command for x, _ in found] == ["rsync -a public/ web:/var/www"]


def test_an_unrelated_task_sees_nothing(tmp_path: Path) -> None:
    assert relevant_learnings(store_with_learnings(tmp_path), "write a haiku about autumn", "poetry") == []
    assert relevant_learnings(SkillStore(tmp_path / "empty.db"), "build the frontend") == []


def test_the_planner_prompt_gets_them(tmp_path: Path) -> None:
    """plan_context puts the relevant learnings where the planning prompt shows them."""
    from sherpa_skills.engine.belief import Belief
    from sherpa_skills.engine.registry import ActionContext
    from sherpa_skills.skills.planner_actions import NoArgs, plan_context

    home = tmp_path / "home"
    home.mkdir()
    store_with_learnings(home)
    belief = Belief(context={"task": "start the database with docker compose", "task_type": "db-up"})
    result = plan_context(NoArgs(), ActionContext(view=belief.view(), state="plan", tick=1, home=home))
    assert [x["command"] for x in result.context["learnings"]] == ["docker compose up -d db"]
