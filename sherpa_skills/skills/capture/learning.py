"""Learning for any workflow, as a run hook: match a run's task to a trajectory procedure, replay it, capture the run
when it succeeds. What the run matched and where its replay stands are kept with the run, so whichever process
continues it (a resume after a wait or a crash) replays from there and captures it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ...engine.hooks import HookRequest
from ...errors import UsageError
from ...home import per_home
from ..decide.memory import DecisionMemory
from ..match.matcher import Matcher
from ..match.models import MatchDecision
from ..replay.runtime import skill_matcher, skill_store
from ..store.database import ProcedureDatabase
from ..store.models import CapturedProcedure
from .run_hook import LearningHook
from .trajectory import described_task, one_word_inputs


class Learner:
    """The skill store and its matcher, shared by every run that learns in it; each run gets its own hook."""

    def __init__(self, store: ProcedureDatabase, matcher: Matcher | None = None):
        self.store = store
        self.matcher = matcher or Matcher(store)
        self.memory = DecisionMemory(store)

    def vector(self, text: str) -> tuple[Any, str | None]:
        """The task wording's embedding (made once per wording lately asked: the match embedded it already) and the
        embedder's name."""
        embedder = self.matcher.embedder
        return self.matcher.embed_one(text, embedder), getattr(embedder, "name", None)

    def hook(self) -> LearningHook:
        """One run's learning in this store (each run gets its own hook)."""
        return LearningHook(self)

    def learner(self) -> Learner:
        """Itself: a Learner is what to learn with, as a SkillStore is (`workflow.agent(learn=...)`)."""
        return self

    def match(self, workflow: str, task: dict[str, Any]) -> tuple[MatchDecision, CapturedProcedure | None]:
        """The relevance decision for this task among workflow `workflow`'s procedures only;
        a shell procedure is never followed."""
        given = one_word_inputs(task)
        # The task is described as procedures are (its one-word inputs as {{ name }}), so a new order number is a
        # parameter, not a literal that disagrees; the values themselves are given as the parameters.
        decision = self.matcher.match(described_task(task), task_type=workflow, params=given)
        if decision.decision != "match" or decision.selected is None:
            return decision, None
        proc = self.store.get(decision.selected.procedure_id)
        if proc.kind != "trajectory" or proc.task_type != workflow:
            return decision, None
        return decision, proc


def _new_learner(home: Path) -> Learner:
    return Learner(skill_store(home), skill_matcher(home))


def home_learner(home: str | Path | None) -> Learner:
    """The home's Learner, one per thread as its store and matcher are: its decision memory and task vectors outlive a
    run, so each run reads only the examples that are new (rebuilt per run, a request cost more as examples grew)."""
    return per_home(_new_learner, home)


@runtime_checkable
class _GivesLearner(Protocol):
    """What to learn with, known by what it offers: the public SkillStore sits a layer above this module."""

    def learner(self) -> Learner: ...


def learner_for(request: HookRequest) -> Learner | None:
    """The Learner `workflow.agent(learn=...)` means: None for False; the one given; the skill store given
    (`SkillStore`, or its database); for True the skill store of the run's home (`home=`, else the run store's folder,
    else the user's home, as the CLI resolves it). Anything else is refused, naming what was given."""
    learn: object = request.learn  # typed, but called from anywhere: checked, not trusted
    if learn is False:
        return None
    if learn is True:
        return home_learner(request.home)
    if isinstance(learn, Learner):
        return learn
    if isinstance(learn, ProcedureDatabase):
        return Learner(learn)
    if isinstance(learn, _GivesLearner) and not isinstance(learn, type):
        made = learn.learner()
        if isinstance(made, Learner):
            return made
    raise UsageError(f"learn must be True, False, a SkillStore or a Learner, not {_shown(learn)}")


def _shown(value: object) -> str:
    """A wrong `learn=` as the refusal names it: the value and its type, or the class given for an instance."""
    if isinstance(value, type):
        return f"the class {value.__name__} (give an instance of it)"
    shown = repr(value)
    return f"{shown[:80]}{'…' if len(shown) > 80 else ''} ({type(value).__name__})"


def learning_hook(request: HookRequest) -> LearningHook | None:
    """The hook maker `sherpa_skills.load_workflow` gives every workflow: a learning hook when the agent learns."""
    learner = learner_for(request)
    if learner is None:
        return None
    hook = learner.hook()
    learn = request.workflow.spec.policy.learn
    hook.error_bound = getattr(learn, "error_bound", None)
    return hook
