"""Learning for any workflow: match a run's task to a trajectory procedure, replay it,
capture the run when it succeeds."""

from __future__ import annotations

import copy
import time
from typing import Any, cast

import structlog

from ...engine.agent import Agent, RunResult
from ...engine.workflow import Workflow
from ...errors import UsageError
from ...policy.base import ChainPolicy, Policy
from ...policy.llm import LLMPolicy
from ...policy.rule import RulePolicy
from ..match.matcher import MatchDecision, Matcher
from ..replay.policy import ReplayPolicy
from ..replay.runtime import skill_matcher, skill_store
from ..store.database import ProcedureDatabase, decision_signature
from ..store.models import POLICY_DECIDERS, CapturedProcedure, Outcome
from ..store.recording import credit_or_new_version, record_execution
from ..store.stats import saved_by
from .trajectory import capture_decisions, described_task, one_word_inputs

log = structlog.get_logger(__name__)


class Learner:
    """What `workflow.agent(learn=Learner(store))` needs: the skill store and its matcher, shared by every run."""

    def __init__(self, store: ProcedureDatabase, matcher: Matcher | None = None):
        self.store = store
        self.matcher = matcher or Matcher(store)

    def agent(self, workflow: Workflow, **kwargs: Any) -> LearningAgent:
        return LearningAgent(workflow, self, **kwargs)

    def match(self, workflow: Workflow, inputs: dict[str, Any]) -> tuple[MatchDecision, CapturedProcedure | None]:
        """The relevance decision for this task among this workflow's procedures only;
        a shell procedure is never followed."""
        given = one_word_inputs(inputs)
        # The task is described as procedures are (its one-word inputs as {{ name }}), so a new order number is a
        # parameter, not a literal that disagrees; the values themselves are given as the parameters.
        decision = self.matcher.match(described_task(inputs), task_type=workflow.spec.name, params=given)
        if decision.decision != "match" or decision.selected is None:
            return decision, None
        proc = self.store.get(decision.selected.procedure_id)
        if proc.kind != "trajectory" or proc.task_type != workflow.spec.name:
            return decision, None
        return decision, proc


def learner_for(learn: Any, kwargs: dict[str, Any]) -> Learner:
    """The Learner `workflow.agent(learn=...)` means:
    the one given, else (`learn=True`) the skill store given as `store=`,
    else the skill store of the run's home (`home=`, the run store's folder, else the user's home,
    as the CLI resolves it)."""
    if isinstance(learn, Learner):
        return learn
    if learn is not True:
        raise UsageError(f"learn must be True, False or a Learner, not {learn!r}")
    given = kwargs.get("store")
    make = getattr(given, "learner", None)
    if callable(make):  # the public SkillStore (skills/api.py, a layer above this one)
        kwargs.pop("store")
        learner: Learner = make()
        return learner
    if isinstance(given, ProcedureDatabase):
        kwargs.pop("store")
        return Learner(given)
    home = kwargs.get("home") or (given.path.parent if given is not None and hasattr(given, "path") else None)
    return Learner(skill_store(home), skill_matcher(home))


def learning_agent(workflow: Workflow, learn: Any, **kwargs: Any) -> LearningAgent:
    """What `workflow.agent(learn=...)` returns (the engine imports this module by name, never by an import edge)."""
    return learner_for(learn, kwargs).agent(workflow, **kwargs)


def _checks(decisions: list[Any]) -> list[Any]:
    return [[(c.action, c.features) for c in d.checks] for d in decisions]


def _with_replay(policy: Policy, replay: ReplayPolicy) -> Policy:
    """The workflow's policy with the replay asked after the rules and before the LLM,
    whose own copy reports the divergence."""
    members = list(policy.policies) if isinstance(policy, ChainPolicy) else [policy]
    # A rule table with no rules (`rules: []`) never decides: asking it on every replayed decision only costs time.
    members = [p for p in members if not (isinstance(p, RulePolicy) and not p.triggers)]
    at = next((i for i, p in enumerate(members) if isinstance(p, LLMPolicy)), len(members))
    if at < len(members):
        llm = copy.copy(cast(LLMPolicy, members[at]))  # found by isinstance above
        llm.replay = replay
        members[at] = llm
    return ChainPolicy(*members[:at], replay, *members[at:])


class LearningAgent:
    """One run of a workflow that follows a proven procedure when the task matches one,
    and teaches the store when it succeeds.

    `run` starts the run (and continues it, when it waited); the capture happens once the run reaches a final state.
    """

    def __init__(self, workflow: Workflow, learner: Learner, **kwargs: Any):
        self.workflow, self.learner = workflow, learner
        self._policy = kwargs.pop("policy", workflow.policy)
        # Built now, so its run id and observers exist before the run (the CLI names the log after it); its policy is
        # set when the run starts, once the task is matched.
        self.agent: Agent = workflow.agent(policy=self._policy, learn=False, **kwargs)
        self._begun = False
        self.replay: ReplayPolicy | None = None
        self.procedure: CapturedProcedure | None = None
        self.match: MatchDecision | None = None
        self.inputs: dict[str, Any] = {}
        self._started = 0.0

    @property
    def run_id(self) -> str:
        return self.agent.run_id

    def observe(self, observer: Any) -> None:
        self.agent.observe(observer)

    def run(self, inputs: dict[str, Any] | None = None, **kwargs: Any) -> RunResult:
        if not self._begun:
            self._begun = True
            self.inputs, self._started = dict(inputs or {}), time.time()
            self.match, self.procedure = self.learner.match(self.workflow, self.inputs)
            if self.procedure is not None:
                self.replay = ReplayPolicy(
                    self.procedure.decisions,
                    inputs=self.inputs | dict(self.match.params),
                    procedure_id=self.procedure.id,
                    version=self.procedure.version,
                    registry=self.agent.registry,
                )
                self.agent.policy = _with_replay(self._policy, self.replay)
        result = self.agent.run(inputs, **kwargs)
        if self.replay is not None and result.status == "final":
            self.replay.finish(
                result.state,
                [
                    (t.source, t.trigger, t.decided_by)
                    for t in self.agent.belief.trajectory
                    if t.decided_by in POLICY_DECIDERS
                ],
            )
        if self.replay is not None:
            result.diverged_at = self.replay.divergence
        result.tokens_saved, result.llm_calls_saved = self._saved(result)
        if result.status in ("final", "error"):
            self._learn(result)
        return result

    def _saved(self, result: RunResult) -> tuple[int, int]:
        """(tokens, LLM calls) the replay saved this run: what planning the procedure cost, less what the run spent.
        A run that diverged and finished still saved the decisions replayed before; one that failed saved nothing."""
        proc = self.procedure
        if proc is None or result.status != "final":
            return 0, 0
        return saved_by(proc, result.counters["tokens"], result.counters["llm_calls"])

    def _learn(self, result: RunResult) -> None:
        store, proc, replay = self.learner.store, self.procedure, self.replay
        if proc is not None and replay is not None:
            diverged = replay.divergence
            outcome: Outcome = "error" if result.status == "error" else ("diverged" if diverged else "success")
            record_execution(
                store,
                proc,
                started=self._started,
                outcome=outcome,
                divergence=diverged,
                error=result.error,
                tokens=result.counters["tokens"],
                llm_calls=result.counters["llm_calls"],
                run_id=self.agent.run_id,
            )
        if result.status != "final":
            return
        decisions = capture_decisions(self.agent.belief, self.inputs, proc.decisions if proc else None)
        if not decisions:
            return  # nothing a policy decided: nothing to learn
        if proc is not None and replay is not None and replay.divergence is None:
            return  # followed as recorded: the execution above is its credit
        # Diverged and took another path, or the same one in a changed world (a check observes other features): the
        # procedure's next version (its description stays the task's). Otherwise a new procedure, or a credit to its
        # twin.
        relearn = (
            proc.id
            if proc is not None
            and (
                decision_signature(decisions) != decision_signature(proc.decisions)
                or _checks(decisions) != _checks(proc.decisions)
            )
            else None
        )
        text = described_task(self.inputs)
        captured, new = credit_or_new_version(
            store,
            CapturedProcedure(
                id="",
                task_type=self.workflow.spec.name,
                description=text[:500],
                steps=[],
                kind="trajectory",
                decisions=decisions,
                source="run",
                success_count=1,
                planned_tokens=result.counters["tokens"],
                planned_llm_calls=result.counters["llm_calls"],
                context={"run_id": self.agent.run_id},
            ),
            relearn,
        )
        if relearn:
            log.info("trajectory_relearned", procedure=captured.id, version=captured.version)
            return
        if new:
            self.learner.matcher.index(captured)
        log.info("trajectory_captured", procedure=captured.id, inserted=new)
