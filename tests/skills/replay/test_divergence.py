"""One divergence record for both kinds of replay, and one prompt block that shows it to the LLM."""

from __future__ import annotations

from pathlib import Path

from sherpa_skills.data import data_dir
from sherpa_skills.policy.llm import _template_env
from sherpa_skills.skills.replay.divergence import Divergence

PROMPTS = data_dir("policies") / "prompts"

SHELL = Divergence(
    procedure="build-1",
    version=2,
    step=2,
    command="tar -czf build/n.tar.gz notes",
    replayed=1,
    replayed_commands=["mkdir -p build"],
    expected="exit code 0",
    observed="exit code 2",
    reason="exit code 2, expected 0",
    observed_output="tar: notes: Cannot stat\n",
)
TRAJECTORY = Divergence(
    procedure="ticket-1",
    version=1,
    step=1,
    state="checked",
    replayed=1,
    expected="trigger 'close' available",
    observed="available: escalate",
    reason="expected trigger 'close' available, observed available: escalate",
)


def _render(name: str, **values: object) -> str:
    return _template_env(Path(PROMPTS)).get_template(name).render(values)


def test_both_prompts_include_the_one_divergence_block() -> None:
    for name in ("plan.user.j2", "choose_transition.user.j2"):
        assert '{% include "_divergence.j2" %}' in (PROMPTS / name).read_text(), name


def test_the_planner_prompt_shows_a_shell_divergence() -> None:
    text = _render(
        "plan.user.j2",
        vars={
            "task": "pack notes",
            "task_type": "pack",
            "replay_outcome": "diverged",
            "commands_run": [],
            "learnings": [],
            "stop_reason": None,
            "divergence": SHELL.model_dump(),
        },
        triggers=["run", "give_up"],
    )
    block = _render("_divergence.j2", divergence=SHELL.model_dump())
    assert block.strip() and block.strip() in text
    assert "procedure build-1 v2" in text and "step 2" in text and "tar -czf build/n.tar.gz notes" in text
    assert "expected: exit code 0" in text and "observed: exit code 2" in text and "Cannot stat" in text
    assert "replayed before it: mkdir -p build" in text


def test_the_transition_prompt_shows_a_trajectory_divergence() -> None:
    values = {
        "state": "checked",
        "state_description": "",
        "trajectory": [],
        "actions": [],
        "options": [],
        "triggers": ["escalate"],
        "context": "{}",
        "vars": {},
    }
    text = _render("choose_transition.user.j2", replay=TRAJECTORY.model_dump(), **values)
    assert _render("_divergence.j2", divergence=TRAJECTORY.model_dump()).strip() in text
    assert "procedure ticket-1 v1" in text and "in state checked" in text
    assert "expected: trigger 'close' available" in text and "observed: available: escalate" in text
    assert "Divergence" not in _render("choose_transition.user.j2", replay=None, **values)


def test_a_planner_prompt_without_a_divergence_says_none() -> None:
    text = _render(
        "plan.user.j2",
        vars={
            "task": "t",
            "task_type": "x",
            "replay_outcome": "not tried",
            "commands_run": [],
            "learnings": [],
            "stop_reason": None,
            "divergence": None,
        },
        triggers=[],
    )
    assert "Divergence: none" in text
