"""One run's learning, as a run hook: its task matched and replayed, its advice asked, the run captured."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import structlog

from ...engine.hooks import HookReport, RunHook
from ...errors import SherpaError
from ...policy.base import Decision, DecisionContext
from ..decide.examples import record_answers
from ..decide.features import meaning_text
from ..decide.recall import Recall
from ..match.models import MatchDecision
from ..replay.divergence import Divergence
from ..replay.policy import ReplayPolicy
from ..store.models import POLICY_DECIDERS, CapturedProcedure
from ..store.scoring import replay_refusal
from ..store.stats import saved_by
from .learning_state import Confirmation, LearningState
from .lesson import Lesson, teach
from .trajectory import described_task, one_word_inputs
from .wordings import judged_from_run

if TYPE_CHECKING:
    from ...engine.agent import RunResult
    from ...engine.compiler import CompiledMachine
    from ...engine.events import Event
    from ...engine.run.view import RunView
    from ...policy.base import Policy
    from .learning import Learner

log = structlog.get_logger(__name__)

#: The key a learning run's state is kept under with the run (RunRow.hooks).
HOOK_NAME = "learning"


def _task(inputs: dict[str, Any], event: Event | None) -> dict[str, Any]:
    """What a run is asked to do: its inputs, and for a run an event starts (a team member's) what the event carries."""
    if event is None:
        return dict(inputs)
    carried = {k: v for k, v in event.payload.items() if isinstance(v, (str, int, float)) and not isinstance(v, bool)}
    return {**carried, **inputs}


def _valid_decisions(machine: CompiledMachine) -> set[tuple[str, str]]:
    """The (state, trigger) pairs the workflow has now: a decision example recorded on another is unusable."""
    return {(leaf, edge.trigger) for i, leaf in enumerate(machine.leaves) for edge in machine.edges[i]}


class LearningAdvisor:
    """A learning run's advice, asked after the rules and before the LLM: the replay of the procedure its task matched;
    where there is none or it diverged, the workflow's decision memory; where that abstains on the run's first decision
    and the match needed confirmation, the judge's question (its choice is then replayed)."""

    def __init__(self, hook: LearningHook):
        self.hook = hook

    def decide(self, ctx: DecisionContext) -> Decision | None:
        hook = self.hook
        if hook.replay is not None:
            decision = hook.replay.decide(ctx)
            if decision is not None:
                return decision
            diverged = hook.replay.divergence
            if diverged is not None and hook.recall is not None and diverged.get("step") == hook.recall.position(ctx):
                return None  # the decision the replay found no longer fits goes to the LLM, told why
        if hook.recall is not None:
            decision = hook.recall.decide(ctx)
            if decision is not None:
                return decision
        if hook.judge_due() and hook.judge() and hook.replay is not None:
            return hook.replay.decide(ctx)
        return None

    async def adecide(self, ctx: DecisionContext) -> Decision | None:
        return self.decide(ctx)


class LearningHook(RunHook):
    """One run's learning. At start the task is matched and the match kept with the run; the advice (the replay, the
    decision memory, the judge) is the run's advisor; when the run stops final it is captured, its LLM decisions
    become examples of the decision memory, and a replayed procedure's execution is recorded (a run that left it for
    another path and succeeded is the procedure's branch). On resume the kept state rebuilds the advice, which counts
    its position from the run's own trajectory: a run killed mid-replay goes on replaying."""

    name = HOOK_NAME
    learns = True

    def __init__(self, learner: Learner):
        self.learner = learner
        self.active = False  # False for a run that started without learning (resumed by a learning workflow)
        self.task: dict[str, Any] = {}
        self.match: MatchDecision | None = None
        self.procedure: CapturedProcedure | None = None
        self.replay: ReplayPolicy | None = None
        self.recall: Recall | None = None
        self._run: RunView | None = None
        # A model call this hook made (the judge's), added to the run's counters at its next commit (`spent`).
        self._spent: dict[str, int] = {}
        self._advisor = LearningAdvisor(self)
        self._state: LearningState | None = None
        self._stored: tuple[LearningState, dict[str, Any]] | None = None  # the state last given to save, as stored
        self._recall_saved = 0
        self._kept_divergence: dict[str, Any] | None = None
        self._unusable: dict[str, int] = {}
        #: What the finished run taught (None until it stops final or failed).
        self.lesson: Lesson | None = None
        #: The workflow's `learn: {error_bound: δ}` (None: the decision memory's default).
        self.error_bound: float | None = None

    # ------------------------------------------------------------------ the run's hooks

    def on_start(self, *, run: RunView, inputs: dict[str, Any], event: Event | None) -> dict[str, Any] | None:
        self.active, self.task, self._run = True, _task(inputs, event), run
        self.match, proc = self.learner.match(run.workflow, self.task)
        params = dict(self.match.params) if proc is not None else {}
        self._state = LearningState(
            task=self.task,
            procedure=proc.id if proc is not None else None,
            version=proc.version if proc is not None else None,
            params=params,
            score=round(self.match.selected.score, 4) if proc is not None and self.match.selected else None,
            started=time.time(),
            # Asked lazily: only where the decision memory cannot take the run's first decision itself.
            judge="due" if proc is None and self.match.decision == "needs-confirmation" else None,
        )
        if proc is not None:
            self._follow(run, proc, None)
        self._remember(run, {}, {})
        return None

    def judge_due(self) -> bool:
        state = self._state
        return (
            state is not None
            and state.judge == "due"
            and self._run is not None
            and self.recall is not None
            and self.recall.reader.decisions == 0
        )

    def judge(self) -> bool:
        """A plausible match put to the workflow's own model: one multiple-choice question, counted in the run's calls
        and tokens. Its choice becomes an alias (the next such wording replays directly) and is replayed from here,
        its "none of these" a remembered rejection; garbage, a procedure not offered or a failed call is a no, and
        remembers nothing. True when a procedure was chosen."""
        run, state = self._run, self._state
        assert run is not None and state is not None and self.match is not None
        proc, confirmation = self._judge(run)
        self._state = state = state.model_copy(update={"judge": "asked", "confirmation": confirmation})
        if proc is None:
            return False
        self._state = state.model_copy(
            update={"procedure": proc.id, "version": proc.version, "params": one_word_inputs(self.task)}
        )
        self._follow(run, proc, None)
        return True

    def _judge(self, run: RunView) -> tuple[CapturedProcedure | None, Confirmation | None]:
        assert self.match is not None
        workflow, store = run.workflow, self.learner.store
        offered = [store.get(c.procedure_id) for c in self.match.offered]
        offered = [p for p in offered if p.kind == "trajectory" and p.task_type == workflow]
        if not offered or not run.model:
            return None, None
        from ..match.verifier import judge

        text = described_task(self.task)
        verdict = judge(text, offered, run.model, base_dir=str(run.base_dir))
        self._spent["llm_calls"] = self._spent.get("llm_calls", 0) + verdict.calls
        self._spent["tokens"] = self._spent.get("tokens", 0) + verdict.tokens
        by = f"model:{run.model}"
        chosen = next((p for p in offered if p.id == verdict.procedure_id), None)
        try:
            if chosen is not None:
                alias = self.learner.matcher.confirm(text, chosen.id, task_type=workflow, by=by)
                judged_from_run(self.learner, alias, run.run_id)
            elif verdict.answered:
                self.learner.matcher.reject(text, [p.id for p in offered], task_type=workflow, by=by)
        except SherpaError as exc:  # the task's literals disagree with the choice: a no
            log.info("judge_answer_refused", procedure=verdict.procedure_id, reason=str(exc))
            chosen = None
        log.info("match_judged", offered=verdict.offered, chosen=chosen.id if chosen else None, reason=verdict.reason)
        confirmation = Confirmation(
            by=by,
            offered=verdict.offered,
            procedure=chosen.id if chosen is not None else None,
            reason=verdict.reason,
            calls=verdict.calls,
            tokens=verdict.tokens,
        )
        return chosen, confirmation

    def on_resume(self, *, run: RunView, saved: Any) -> None:
        if not isinstance(saved, dict):
            return  # started without learning: it stays so
        state = LearningState.kept(saved, run.run_id)  # a state it cannot read refuses the resume, told why
        self.active, self._state, self.task, self._run = True, state, dict(state.task), run
        self._remember(run, state.asked, state.taken)
        taken = sum(1 for t in run.belief.trajectory if t.decided_by in POLICY_DECIDERS)
        kept = state.divergence
        if kept is not None and kept.get("step") is not None and kept["step"] >= taken:
            # A fork from before its parent diverged: its own run has not left the recording (yet).
            state = self._state = state.model_copy(update={"divergence": None})
        if not state.procedure:
            return
        # The version the run matched, as it is now: replaced or broken meanwhile, the replay stops here, told why.
        procedure_id, version = state.procedure, state.version
        try:
            proc = self.learner.store.get(procedure_id)
        except SherpaError:
            proc = None
        why = None
        if proc is None:
            why = "the procedure was deleted while the run waited"
        elif proc.version != version:
            why = f"version {version} was replaced by version {proc.version} while the run waited"
        elif (refusal := replay_refusal(proc, self.learner.store.health(proc.id))) is not None:
            why = f"it can no longer be replayed: {refusal}"
        if why is not None and state.divergence is None:
            self._kept_divergence = Divergence(
                procedure=procedure_id,
                version=version or 0,
                state=run.state,
                replayed=run.counters.get("replayed_decisions", 0),
                expected=f"procedure {procedure_id} version {version}",
                observed=why,
                reason=f"procedure {procedure_id} version {version}: {why}",
            ).record()
        # A run that diverged before the wait keeps its divergence, and its execution is recorded at the end; one whose
        # procedure changed under it records none (the new version did not fail).
        self._follow(run, proc if why is None else None, state.divergence or self._kept_divergence)

    def advisor(self) -> Policy | None:
        return self._advisor if self.active else None

    def saved(self) -> dict[str, Any] | None:
        state = self._state
        if state is None:
            return None
        divergence = self.replay.divergence if self.replay is not None else None
        if divergence is not state.divergence and divergence != state.divergence:
            state = self._state = state.model_copy(update={"divergence": divergence})
        recall = self.recall
        if recall is not None and len(recall.asked) + len(recall.taken) != self._recall_saved:
            # What the memory was asked and took is kept with the run: a resumed run learns from all of it.
            self._recall_saved = len(recall.asked) + len(recall.taken)
            state = self._state = state.model_copy(update={"asked": dict(recall.asked), "taken": dict(recall.taken)})
        if self._stored is None or self._stored[0] is not state:
            self._stored = (state, state.stored())  # a new object only for a new state: written with this tick
        return self._stored[1]

    def spent(self) -> dict[str, int] | None:
        spent, self._spent = self._spent, {}
        return spent or None

    def on_stop(self, *, run: RunView, result: RunResult) -> HookReport | None:
        if not self.active:
            return None
        sections: dict[str, Any] = {}
        if self.replay is not None:
            if result.status == "final":
                self.replay.finish(
                    result.state,
                    [
                        (t.source, t.trigger, t.decided_by)
                        for t in run.belief.trajectory
                        if t.decided_by in POLICY_DECIDERS
                    ],
                )
            sections["diverged_at"] = self.replay.divergence
        tokens_saved, llm_calls_saved = self._saved(result)
        recall = self.recall
        if recall is not None and result.status == "error" and recall.answers:
            # The run failed after the memory answered: those answers are contradicted, what taught them forgotten.
            recall.contradict_answers(f"the run failed after the memory answered: {result.error or 'error'}")
        if recall is not None and recall.answered and result.status == "final":
            # The memory's answers saved what the same decisions cost when the model took them.
            memory, workflow = self.learner.memory, run.workflow
            tokens = recall.answered * memory.decision_tokens(workflow)
            tokens_saved += tokens
            llm_calls_saved += recall.answered
            record_answers(self.learner.store, workflow, run.run_id, recall.answered, tokens)
        if result.status in ("final", "error"):
            state = self._state
            self.lesson = teach(
                self.learner,
                run,
                result,
                task=self.task,
                procedure=self.procedure,
                replay=self.replay,
                recall=recall,
                started=state.started if state is not None else time.time(),
                replaced=self._kept_divergence is not None,
            )
        sections |= {"tokens_saved": tokens_saved, "llm_calls_saved": llm_calls_saved}
        sections[HOOK_NAME] = self._report(self.lesson.learned() if self.lesson is not None else {})
        return HookReport(sections=sections)

    # ------------------------------------------------------------------ inside

    def _remember(self, run: RunView, asked: dict[int, dict[str, Any]], taken: dict[int, dict[str, Any]]) -> None:
        """The run's questions to its workflow's decision memory, brought up to date with the store."""
        learner, workflow = self.learner, run.workflow
        self._unusable = dict(learner.memory.refresh(workflow, _valid_decisions(run.machine)))
        if self._unusable:
            log.warning("decision_examples_unusable", workflow=workflow, unusable=self._unusable)
        text = meaning_text(self.task)

        def vector() -> tuple[Any, str | None]:
            try:
                return learner.vector(text)
            except Exception as exc:  # no embedder: the memory goes by values alone
                log.warning("decision_memory_no_embedding", error=str(exc))
                return None, None

        self.recall = Recall(learner.memory, workflow, self.task, one_word_inputs(self.task), vector, self.error_bound)
        self.recall.asked = dict(asked)
        self.recall.taken = dict(taken)
        self._recall_saved = len(asked) + len(taken)

    def _report(self, learned: dict[str, Any]) -> dict[str, Any]:
        """What this run's learning did, for its result and its page."""
        state, recall = self._state, self.recall
        confirmation = state.confirmation if state is not None else None
        return {
            "procedure": state.procedure if state is not None else None,
            "version": state.version if state is not None else None,
            "judged": confirmation.model_dump(mode="json") if confirmation is not None else None,
            "memory_answered": recall.answered if recall else 0,
            "memory_abstained": recall.abstained[-10:] if recall else [],
            "memory_ms": [round(ms, 3) for ms in recall.answer_ms] if recall else [],
            "unusable_examples": self._unusable,
            **learned,
        }

    def _follow(self, run: RunView, proc: CapturedProcedure | None, divergence: dict[str, Any] | None) -> None:
        """The replay of `proc`; a stopped one, carrying `divergence`, once the run left it or cannot follow it."""
        state = self._state
        self.procedure = proc
        self.replay = ReplayPolicy(
            proc.decisions if proc is not None and divergence is None else [],
            inputs={**self.task, **(state.params if state is not None else {})},
            procedure_id=(state.procedure if state is not None else None) or "",
            version=(state.version if state is not None else None) or 0,
            registry=run.registry,
            divergence=divergence,
        )

    def _saved(self, result: RunResult) -> tuple[int, int]:
        """(tokens, LLM calls) the replay saved this run: what planning the procedure cost, less what the run spent.
        A run that diverged and finished still saved the decisions replayed before; one that failed saved nothing."""
        proc = self.procedure
        if proc is None or result.status != "final":
            return 0, 0
        return saved_by(proc, result.counters["tokens"], result.counters["llm_calls"])
