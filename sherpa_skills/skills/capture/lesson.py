"""What a finished learning run teaches the skill store, in one function returning a typed report (`teach`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog
from pydantic import BaseModel, Field

from ..decide.examples import add_examples
from ..decide.features import meaning_text
from ..store.branches import add_branch, described_procedure
from ..store.models import CapturedProcedure, Outcome
from ..store.recording import credit_described, credit_or_new_version, record_execution
from ..store.signatures import decision_signature
from .trajectory import capture_decisions, described_task
from .wordings import alias_from_run

if TYPE_CHECKING:
    from ...engine.agent import RunResult
    from ...engine.run.view import RunView
    from ..decide.recall import Recall
    from ..replay.policy import ReplayPolicy
    from .learning import Learner

log = structlog.get_logger(__name__)


class Captured(BaseModel):
    """The procedure the run was captured as: a new one, or a credit to the one that took the same decisions."""

    procedure: str
    new: bool


class Branch(BaseModel):
    """The run left its procedure's routine and succeeded another way: that way is the procedure's branch."""

    procedure: str
    runs: int


class Relearned(BaseModel):
    """The same path in a changed world: the procedure's next version."""

    procedure: str
    version: int


class AliasLearned(BaseModel):
    """The run's wording, which took a stored procedure's path, kept as that procedure's alias."""

    id: str
    procedure: str
    source: str | None


class Lesson(BaseModel):
    """What one finished run taught. Its fields but `execution` are what the run's result reports (`learned`)."""

    #: The execution recorded for the procedure the run replayed (None: it replayed none).
    execution: Outcome | None = Field(default=None, exclude=True)
    examples_saved: int | None = None
    branch: Branch | None = None
    relearned: Relearned | None = None
    alias: AliasLearned | None = None
    captured: Captured | None = None

    def learned(self) -> dict[str, Any]:
        """As the run's result reports it (`RunResult.learning`): only what happened, each part with all its keys (an
        alias a person made carries `source: null`, as before)."""
        return {part: value for part, value in self.model_dump(mode="json").items() if value is not None}


def _checks(decisions: list[Any]) -> list[Any]:
    return [[(c.action, c.features) for c in d.checks] for d in decisions]


def teach(
    learner: Learner,
    run: RunView,
    result: RunResult,
    *,
    task: dict[str, Any],
    procedure: CapturedProcedure | None,
    replay: ReplayPolicy | None,
    recall: Recall | None,
    started: float,
    replaced: bool,
) -> Lesson:
    """What `run`, stopped final or failed as `result`, teaches: the replayed `procedure`'s execution (an error,
    a divergence, a branch, a success), the decision memory's examples from its LLM decisions, and the run captured as
    a new procedure, a credit, a branch, a next version or an alias. `replaced`: the procedure changed while the run
    waited, so the run neither counts against it nor relearns it."""
    store, proc, lesson = learner.store, procedure, Lesson()
    decisions = (
        capture_decisions(run.belief, task, proc.decisions if proc else None) if result.status == "final" else []
    )
    if recall is not None:
        recall.restore_arguments(decisions)
    if proc is not None and replay is not None:
        diverged = replay.divergence
        outcome: Outcome = "error" if result.status == "error" else ("diverged" if diverged else "success")
        if (
            outcome == "diverged"
            and decisions
            and not replaced
            and decision_signature(decisions) != decision_signature(proc.decisions)
        ):
            outcome = "branch"  # left the routine where an exception made it, and succeeded: not its failure
        record_execution(
            store,
            proc,
            started=started,
            outcome=outcome,
            divergence=diverged,
            error=result.error,
            tokens=result.counters["tokens"],
            llm_calls=result.counters["llm_calls"],
            run_id=run.run_id,
        )
        lesson.execution = outcome
    if result.status != "final" or not decisions:
        return lesson  # failed, or nothing a policy decided: nothing to learn
    if recall is not None:
        calls = result.counters["llm_calls"]
        tokens = round(result.counters["tokens"] / calls) if calls else None
        examples = recall.examples(decisions, meaning_text(task), run.run_id, tokens)
        add_examples(store, examples)
        lesson.examples_saved = len(examples)
    if proc is not None and replay is not None and replay.divergence is None:
        return lesson  # followed as recorded: the execution above is its credit
    text = described_task(task)
    if proc is None:
        # The described task's procedure took these very decisions: its credit, what the store would make of it.
        twin = credit_described(store, run.workflow, text[:500], decision_signature(decisions, text[:500]))
        if twin is not None:
            log.info("trajectory_captured", procedure=twin, inserted=False)
            lesson.captured = Captured(procedure=twin, new=False)
            return lesson
        # One description, one procedure: a run of a described task that went another way is its branch.
        proc = described_procedure(store, run.workflow, text[:500])
    if proc is not None and not replaced:
        if decision_signature(decisions) != decision_signature(proc.decisions):
            # An exception: the run left the routine and succeeded another way. That way is the procedure's
            # branch; the routine stays the procedure, and the decision memory learned what separated them.
            divergence = (replay.divergence if replay is not None else None) or {}
            runs = add_branch(
                store,
                proc.id,
                decision_signature(decisions),
                step=divergence.get("step"),
                state=divergence.get("state"),
                reason=str(divergence.get("reason") or "another path"),
                decisions=[d.model_dump(mode="json", exclude={"outcomes", "outcomes_before"}) for d in decisions],
                run_id=run.run_id,
            )
            log.info("trajectory_branch", procedure=proc.id, runs=runs)
            lesson.branch = Branch(procedure=proc.id, runs=runs)
            return lesson
    # The same path in a changed world (a check observes other features): the procedure's next version (its
    # description stays the task's). Otherwise a new procedure, or a credit to its twin. A procedure replaced
    # while the run waited is not relearned from a run that followed an older version.
    relearn = (
        proc.id
        if proc is not None and procedure is not None and not replaced and _checks(decisions) != _checks(proc.decisions)
        else None
    )
    captured, new = credit_or_new_version(
        store,
        CapturedProcedure(
            id="",
            task_type=run.workflow,
            description=text[:500],
            steps=[],
            kind="trajectory",
            decisions=decisions,
            source="run",
            success_count=1,
            planned_tokens=result.counters["tokens"],
            planned_llm_calls=result.counters["llm_calls"],
            context={"run_id": run.run_id},
        ),
        relearn,
    )
    if relearn:
        log.info("trajectory_relearned", procedure=captured.id, version=captured.version)
        lesson.relearned = Relearned(procedure=captured.id, version=captured.version)
        return lesson
    if new:
        learner.matcher.index(captured)
    elif procedure is None and (alias := alias_from_run(learner, captured, text, run.run_id)):
        # The path of a stored procedure, in other words: credited to it, its wording now that procedure's alias.
        lesson.alias = AliasLearned(id=alias.id, procedure=captured.id, source=alias.source)
    log.info("trajectory_captured", procedure=captured.id, inserted=new, alias=lesson.learned().get("alias"))
    lesson.captured = Captured(procedure=captured.id, new=new)
    return lesson
