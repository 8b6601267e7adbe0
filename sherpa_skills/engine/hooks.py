"""Run hooks: the one extension point of a run. An agent is given its hooks (`Agent(..., hooks=[...])`,
`workflow.agent(hooks=[...])`); the engine calls them at fixed points and never imports what they belong to.

Modelled on Burr's lifecycle hooks (`burr/lifecycle/base.py`): a base class whose methods do nothing, a hook overrides
the ones it needs. The library's own hooks (what a workflow learns with, its domain, tracing, the CLI's progress, a
team's relay) are made by those who know them; the engine only calls them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # For the type of `learn=` only: the engine never imports the skill store at run time (tests/test_layout.py).
    from .. import Learner
    from ..policy.base import Policy
    from ..skills.api import SkillStore
    from .agent import RunResult
    from .events import Event
    from .run.view import RunView
    from .runstore import RunStore
    from .workflow import Workflow


@dataclass(frozen=True)
class HookReport:
    """What a hook adds when a run stops: counters added to the result's, and named sections of the result (the
    optional fields a hook fills: `diverged_at`, `tokens_saved`, `llm_calls_saved`, or a section of its own name)."""

    counters: Mapping[str, int | float] = field(default_factory=dict)
    sections: Mapping[str, Any] = field(default_factory=dict)


#: Every name a hook class keeps its section under: a result without that hook reads None there, as a field would.
SECTION_NAMES: set[str] = set()


class RunHook:
    """What a run tells its hooks, and what a hook may give back. Every method is optional.

    A hook sees the run through a read-only `RunView` (`run=`: its id, state, belief, counters), never the Agent, and
    adds to it only by what it returns. Every method is called with keyword arguments. A hook written to the earlier
    signature (`on_start(agent, inputs, event)`, `on_resume(agent, saved)`, `on_stop(agent, result)`) still works: it
    is handed the Agent as before, with a DeprecationWarning once per hook class.

    A hook with a `name` keeps state with the run (`saved`), written in the tick's transaction when it changes and
    handed back to `on_resume` in whichever process continues the run. A run that kept a hook's state can only be
    resumed with that hook given again (`workflow.resume(...)` gives the workflow's hooks back).
    """

    #: The key the hook's saved state is kept under in the run ('' keeps nothing); unique among an agent's hooks.
    name: str = ""
    #: Whether this hook is what the run learns with (`workflow.agent(learn=...)` checks one was made when asked for).
    learns: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.name:
            SECTION_NAMES.add(cls.name)

    def on_start(self, *, run: RunView, inputs: dict[str, Any], event: Event | None) -> dict[str, Any] | None:
        """A new run, before its initial state is entered: context keys to add (the run's own inputs win a clash).
        `event` is the event that starts it, for a run started by one (a team member's). What it raises fails the
        run's start."""
        return None

    def on_resume(self, *, run: RunView, saved: Any) -> None:
        """A run rebuilt from the store: what this hook saved with it (None if it saved nothing). What it raises
        refuses the resume."""

    def advisor(self) -> Policy | None:
        """A policy asked after the agent's own policies that ask no model (rules) and before those that do (the
        LLM), for each decision; None when it has nothing to say this run. Asked once the run has started or resumed.
        It may set `ctx.divergence` for the policies after it (the LLM's prompt shows it)."""
        return None

    def saved(self) -> Any:
        """The state to keep with the run (JSON-able; redacted like everything stored), asked at each commit.
        Return the same object while nothing changed: only a new object is written."""
        return None

    def spent(self) -> Mapping[str, int | float] | None:
        """Counters to add to the run's (a model call the hook made: `llm_calls`, `tokens`, `cost`) since it was last
        asked; asked before each commit, so what it spent is stored with the tick."""
        return None

    def on_decision(self, *, run: RunView, state: str, trigger: str, decided_by: str, reason: str | None) -> None:
        """A decision taken (by a rule, the LLM, a replay, a user or an event), before its transition is taken."""

    def on_transition(
        self, *, run: RunView, state: str, trigger: str | None, source: str | None, decided_by: str, tick: int
    ) -> None:
        """A transition taken from `source` into `state` (the start: `trigger` and `source` None)."""

    def on_action(
        self, *, run: RunView, action: str, status: str, duration_ms: float, error: str | None, state: str
    ) -> None:
        """An action returned (or failed: `status` 'error')."""

    def on_event(self, *, run: RunView, event: dict[str, Any]) -> None:
        """An event the run emitted (into its outbox)."""

    def on_stop(self, *, run: RunView, result: RunResult) -> HookReport | None:
        """Each time a run stops (final, waiting or error; a refused resume is not a stop): what the hook adds to the
        result. What it raises is logged and never fails the run."""
        return None


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
