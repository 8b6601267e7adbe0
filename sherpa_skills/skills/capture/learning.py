"""Learning for any workflow, as a run hook: match a run's task to a trajectory procedure, replay it, capture the run
when it succeeds. What the run matched and where its replay stands are kept with the run, so whichever process
continues it (a resume after a wait or a crash) replays from there and captures it."""

from __future__ import annotations

from typing import Any

from ...engine.hooks import HookRequest
from ...errors import UsageError
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
        self._vectors: dict[str, Any] = {}

    def vector(self, text: str) -> tuple[Any, str | None]:
        """The task wording's embedding (made once per wording in this process) and the embedder's name."""
        embedder = self.matcher.embedder
        name = getattr(embedder, "name", None)
        if text not in self._vectors:
            if len(self._vectors) > 1024:
                self._vectors.clear()
            self._vectors[text] = embedder.embed([text])[0]
        return self._vectors[text], name

    def hook(self) -> LearningHook:
        return LearningHook(self)

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


def learner_for(request: HookRequest) -> Learner | None:
    """The Learner `workflow.agent(learn=...)` means: None for False; the one given; the skill store given
    (`SkillStore`, or its database); for True the skill store of the run's home (`home=`, else the run store's folder,
    else the user's home, as the CLI resolves it)."""
    learn = request.learn
    if learn is False:
        return None
    if isinstance(learn, Learner):
        return learn
    if isinstance(learn, ProcedureDatabase):
        return Learner(learn)
    make = getattr(learn, "learner", None)  # the public SkillStore (skills/api.py, a layer above this one)
    if callable(make):
        learner: Learner = make()
        return learner
    if learn is not True:
        raise UsageError(f"learn must be True, False, a SkillStore or a Learner, not {learn!r}")
    return Learner(skill_store(request.home), skill_matcher(request.home))


def learning_hook(request: HookRequest) -> LearningHook | None:
    """The hook maker `sherpa_skills.load_workflow` gives every workflow: a learning hook when the agent learns."""
    learner = learner_for(request)
    if learner is None:
        return None
    hook = learner.hook()
    learn = request.workflow.spec.policy.learn
    hook.error_bound = getattr(learn, "error_bound", None)
    return hook
