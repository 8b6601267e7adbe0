"""Run hooks: the one extension point of a run. An agent is given its hooks (`Agent(..., hooks=[...])`,
`workflow.agent(hooks=[...])`); the engine calls them at fixed points and never imports what they belong to.

Modelled on Burr's lifecycle hooks (`burr/lifecycle/base.py`): a base class whose methods do nothing, a hook overrides
the ones it needs. The library ships two, made for each agent by the loader that knows them
(`sherpa_skills.load_workflow`): learning (`skills/capture/learning.py`) and domains (`actions/domain.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # For the type of `learn=` only: the engine never imports the skill store at run time (tests/test_layout.py).
    from ..policy.base import Policy
    from ..skills.api import SkillStore
    from ..skills.capture.learning import Learner
    from .agent import Agent, RunResult
    from .events import Event
    from .runstore import RunStore
    from .workflow import Workflow


class RunHook:
    """What a run tells its hooks, and what a hook may give back. Every method is optional.

    A hook with a `name` keeps state with the run (`saved`), written in the tick's transaction when it changes and
    handed back to `on_resume` in whichever process continues the run. A run that kept a hook's state can only be
    resumed with that hook given again (`workflow.resume(...)` gives the workflow's hooks back).
    """

    #: The key the hook's saved state is kept under in the run ('' keeps nothing); unique among an agent's hooks.
    name: str = ""
    #: Whether this hook is the run's learning (`workflow.agent(learn=...)` checks one was made when asked for).
    learns: bool = False

    def on_start(self, agent: Agent, inputs: dict[str, Any], event: Event | None) -> dict[str, Any] | None:
        """A new run, before its initial state is entered: context keys to add (the run's own inputs win a clash).
        `event` is the event that starts it, for a run started by one (a team member's)."""
        return None

    def on_resume(self, agent: Agent, saved: Any) -> None:
        """An agent rebuilt from the store: what this hook saved with the run (None if it saved nothing)."""

    def advisor(self) -> Policy | None:
        """A policy asked after the agent's own policies that ask no model (rules) and before those that do (the
        LLM), for each decision; None when it has nothing to say this run. Asked once the run has started or resumed.
        It may set `ctx.divergence` for the policies after it (the LLM's prompt shows it)."""
        return None

    def saved(self) -> Any:
        """The state to keep with the run (JSON-able; redacted like everything stored), asked at each commit.
        Return the same object while nothing changed: only a new object is written."""
        return None

    def on_stop(self, agent: Agent, result: RunResult) -> None:
        """Each time a run stops (final, waiting or error; a refused resume is not a stop). A hook may add to the
        result (a learning run's savings); what it raises is logged and never fails the run."""


@dataclass(frozen=True)
class HookRequest:
    """What an agent is being built with, for the hook makers a workflow was loaded with."""

    workflow: Workflow
    #: `workflow.agent(learn=...)`, the workflow's default put in for None: True, False, or what to learn with.
    learn: bool | SkillStore | Learner
    store: RunStore | None
    home: Path | None


#: Makes one agent's hook, or None when the hook has nothing to do for it (a workflow with no domain).
HookMaker = Callable[[HookRequest], RunHook | None]
