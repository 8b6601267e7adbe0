"""Actions and guards of statemachines/replay.yaml: match → select → preflight → (confirm) → steps → record."""

from __future__ import annotations

import os
import time
from typing import Any

from pydantic import BaseModel, ValidationError

from ...engine.belief import thaw
from ...engine.registry import ActionContext, ActionResult, default_registry
from ...errors import UsageError
from ...redact import redact
from ..match.matcher import Matcher
from ..match.verifier import MODEL_ENV as VERIFY_MODEL_ENV
from ..match.verifier import Verifier
from ..store.answers import Answers
from ..store.database import current_user
from ..store.models import STORED, CapturedLearning, Outcome, ProcedureStep
from ..store.recording import record_execution
from ..store.scoring import replay_refusal
from .divergence import Divergence, output_tail, why
from .runtime import (
    StepOutcome,
    failure_finder,
    render_command,
    run_in_session,
    run_step,
    skill_matcher,
    skill_store,
)
from .shell_session import end_session, session_for

STEP_RESULT = "step_result_"


class NoArgs(BaseModel):
    pass


def step_results(context: Any) -> list[dict[str, Any]]:
    """The executed steps' outcomes, in order, from a replay's context."""
    found = [(int(k[len(STEP_RESULT) :]), v) for k, v in context.items() if k.startswith(STEP_RESULT)]
    return [v for _, v in sorted(found)]


def _matcher(ctx: ActionContext) -> Matcher:
    return skill_matcher(ctx.home)


def _threshold(view: Any) -> float | None:
    """The caller's floor on confidence, or None for the replay rule's own; 0 is a real value (accepts any)."""
    value = view.get("min_confidence")
    return None if value is None else float(value)


@default_registry.action("skill_match")
def skill_match(args: NoArgs, ctx: ActionContext) -> ActionResult:
    """Decide which procedure the task is about (or take the one named by procedure_id); the decision says why not."""
    store = skill_store(ctx.home)
    view = ctx.view
    given = dict(view.get("params") or {})
    if view.get("procedure_id"):
        proc = store.get(view.get("procedure_id"))
        query = (view.get("query") or "").strip()
        from_task = _matcher(ctx).params_for(query, proc) if query else {}  # a confirmed task's literals fill it
        matches = [
            {
                "procedure_id": proc.id,
                "task_type": proc.task_type,
                "version": proc.version,
                "confidence": proc.confidence,
                "score": None,
                "reason": None,
            }
        ]
        by_id: dict[str, Any] = {"matches": matches, "match_mode": "by-id", "degraded": None, "match_decision": "by-id"}
        if from_task:
            by_id["params"] = {**from_task, **given}
            by_id["params_from_task"] = {k: v for k, v in from_task.items() if k not in given}
        return ActionResult(outputs=matches, context=by_id)
    query = view.get("query") or ""
    if not query.strip():
        raise UsageError("replay needs a query (what to do) or a procedure id")
    model = view.get("verify") or os.environ.get(VERIFY_MODEL_ENV, "").strip()
    decision = _matcher(ctx).match(
        query,
        task_type=view.get("task_type"),
        params=given,
        min_confidence=_threshold(view),
        verify=Verifier(model) if model else None,
        by=view.get("by"),
    )
    matches = [c.model_dump(mode="json") for c in decision.candidates]
    context: dict[str, Any] = {
        "matches": matches,
        "match_mode": decision.mode,
        "degraded": decision.degraded,
        "match_decision": decision.decision,
        "match_reason": decision.reason,
        "verification": decision.verification.model_dump(mode="json") if decision.verification else None,
    }
    if decision.offered:
        context["offered"] = [
            {"procedure_id": c.procedure_id, "description": c.description, "score": c.score, "params": c.params}
            for c in decision.offered
        ]
    if decision.selected is not None:
        if decision.floor <= decision.selected.score < 1.0:  # chosen by relevance alone: not a wording, nor a judge
            context["relevance_point"] = decision.selected.score
        context["matched_id"] = decision.selected.procedure_id
        context["judged_by"] = decision.judged_by
        context["params"] = {**decision.params, **given}
        context["params_from_task"] = {k: v for k, v in decision.params.items() if k not in given}
    return ActionResult(
        outputs={"decision": decision.decision, "selected": decision.procedure_id, "reason": decision.reason},
        context=context,
        tokens=decision.tokens,
        llm_calls=decision.llm_calls,
    )


@default_registry.action("skill_select")
def skill_select(args: NoArgs, ctx: ActionContext) -> ActionResult:
    """The matched procedure, when it is confident enough and not broken; otherwise say why none qualifies."""
    store = skill_store(ctx.home)
    view = ctx.view
    threshold = _threshold(view)
    if view.get("match_decision") == "by-id":
        pid = view.get("matches")[0]["procedure_id"]
    elif view.get("matched_id"):
        pid = view.get("matched_id")
    else:
        return ActionResult(
            outputs={"procedure_id": None},
            context={"select_reason": view.get("match_reason") or "no stored procedure is about this task"},
        )
    proc = store.get(pid)
    health = store.health(proc.id)
    refusal = replay_refusal(proc, health, threshold)  # the gate matching and `learn promote` use too
    if refusal:
        return ActionResult(
            outputs={"procedure_id": None}, context={"select_reason": f"{proc.id} is not replayable: {refusal}"}
        )
    chosen = {
        "id": proc.id,
        "version": proc.version,
        "task_type": proc.task_type,
        "description": proc.description,
        "confidence": proc.confidence,
        "health": health.status,
        "replayed": store.success_replays(proc.id),
        "planned_tokens": proc.planned_tokens,
        "planned_llm_calls": proc.planned_llm_calls,
        "steps": [s.model_dump() for s in proc.steps],
        "preconditions": proc.preconditions,
        "postconditions": proc.postconditions,
    }
    return ActionResult(outputs={"procedure_id": proc.id}, context={"procedure": chosen, "select_reason": None})


@default_registry.action("skill_preflight")
def skill_preflight(args: NoArgs, ctx: ActionContext) -> ActionResult:
    """Render every step with the parameters; check environment variable names;
    run preconditions only when executing."""
    proc = ctx.view.get("procedure")
    params = dict(ctx.view.get("params") or {})
    problems: list[str] = []
    rendered: list[str] = []
    for step in proc["steps"]:
        try:
            rendered.append(render_command(step["command"], params))
        except UsageError as exc:
            problems.append(str(exc))
            rendered.append(step["command"])
    missing_env = sorted({n for step in proc["steps"] for n in step.get("env_vars", []) if n not in os.environ})
    if missing_env:
        problems.append(f"environment variables not set: {', '.join(missing_env)}")
    if ctx.view.get("execute") and not problems:
        for check in proc.get("preconditions") or []:
            outcome = run_step(
                ProcedureStep(command=check, timeout_secs=30),
                render_command(check, params),
                0,
                ctx.view.get("cwd"),
                ctx.secrets,
            )
            if not outcome.passed:
                problems.append(f"precondition failed: {check} ({outcome.reason})")
    context = {
        "rendered": rendered,
        "preflight_ok": not problems,
        "preflight_problems": problems,
        "step_index": 0,
        "more_steps": bool(rendered),
        "step_ok": True,
        "started_at": time.time(),
    }
    return ActionResult(outputs={"rendered": rendered, "problems": problems}, context=context)


class EditArgs(BaseModel):
    params: dict[str, Any] = {}


@default_registry.action("skill_set_params")
def skill_set_params(args: EditArgs, ctx: ActionContext) -> ActionResult:
    """A human edited parameters at the confirmation step."""
    params = {**(ctx.view.get("params") or {}), **args.params}
    return ActionResult(outputs=params, context={"params": params})


class EditStepsArgs(BaseModel):
    steps: list[str]


@default_registry.action("skill_set_steps")
def skill_set_steps(args: EditStepsArgs, ctx: ActionContext) -> ActionResult:
    """A person rewrote the steps at the confirmation: a line left as shown keeps its step (template, expected exit
    code and pattern); a new or changed line is a new step, checked now as a capture checks a step."""
    from ...engine.shell_template import check_shell_template
    from ..store.models import step_problem
    from .runtime import as_template

    if not args.steps:
        raise UsageError("the edited steps are empty: nothing to run")
    proc = thaw(ctx.view.get("procedure"))
    shown = list(ctx.view.get("rendered") or [])
    kept: list[dict[str, Any]] = []
    changed: list[int] = []
    unused = list(range(len(shown)))
    for number, command in enumerate(args.steps, 1):
        same = next((i for i in unused if shown[i] == command), None)
        if same is not None:
            unused.remove(same)
            kept.append(proc["steps"][same])
            continue
        try:
            step = ProcedureStep(command=command)
            check_shell_template(as_template(step.command))
        except ValidationError as exc:
            raise UsageError(step_problem(number, exc)) from None
        except UsageError as exc:
            raise UsageError(f"step {number} ({command!r}): {exc}") from None
        kept.append(step.model_dump())
        changed.append(number)
    if kept == proc["steps"]:
        return ActionResult(outputs={"changed": []})  # the same steps in the same order: nothing to keep
    edited = {"from_version": proc["version"], "changed": changed, "removed": len(unused)}
    return ActionResult(outputs=edited, context={"procedure": {**proc, "steps": kept}, "edited_steps": edited})


def observed(outcome: StepOutcome, step: ProcedureStep | None = None) -> str:
    """What the command did, in the words `expected` uses, each thing said once (the why is in the reason)."""
    if outcome.timed_out:
        return outcome.reason or "timed out"
    said = f"exit code {outcome.exit_code}"
    if step is not None and step.expected_output_pattern and outcome.exit_code == step.expected_exit_code:
        said += f", output not matching /{step.expected_output_pattern}/"
    return said


@default_registry.action("skill_run_step", side_effects=True)
def skill_run_step(args: NoArgs, ctx: ActionContext) -> ActionResult:
    """Run the next step and compare it with what was recorded; a mismatch or a timeout is a divergence."""
    view = ctx.view
    proc, index = view.get("procedure"), int(view.get("step_index") or 0)
    step = ProcedureStep.model_validate(proc["steps"][index], context=STORED)  # as stored, even before a limit
    # One shell for the whole replay: a step's `cd` and `export` hold for the steps after it.
    env_names = sorted({n for s in proc["steps"] for n in s.get("env_vars", [])})
    session, fresh = session_for(
        ctx.run_id or f"replay-{id(view)}", view.get("shell_cwd") or view.get("cwd"), env_names
    )
    outcome = run_in_session(session, step, view.get("rendered")[index], index + 1, ctx.secrets)
    # One key per step: rewriting a growing list at every step would make each step cost more than the last.
    context: dict[str, Any] = {
        f"{STEP_RESULT}{index + 1}": outcome.to_dict(),
        "step_ok": outcome.passed,
        "step_index": index + 1,
        "more_steps": index + 1 < len(proc["steps"]),
        "shell_cwd": session.cwd,
    }
    if fresh and index and view.get("shell_cwd"):
        context[f"{STEP_RESULT}{index + 1}"]["note"] = (
            "resumed in a new shell in the directory the last step left; "
            "variables exported by earlier steps are not carried over"
        )
    if not outcome.passed:
        context["diverged_step"] = index + 1
        pattern = step.expected_output_pattern
        tail = output_tail(outcome.stderr)
        context["divergence"] = Divergence(
            procedure=proc["id"],
            version=proc["version"],
            step=index + 1,
            replayed=index,
            expected=f"exit code {step.expected_exit_code}" + (f", output matching /{pattern}/" if pattern else ""),
            observed=observed(outcome, step),
            reason=why(outcome.reason or "", tail),
            command=outcome.command,
            replayed_commands=view.get("rendered")[:index],
            expected_exit_code=step.expected_exit_code,
            expected_output_pattern=pattern,
            observed_exit_code=outcome.exit_code,
            observed_output=redact((outcome.stdout + outcome.stderr)[-1500:]),
            stderr_tail=tail,
        ).record()
    return ActionResult(outputs=outcome.to_dict(), context=context, status="ok" if outcome.passed else "failed")


@default_registry.action("skill_postconditions", side_effects=True)
def skill_postconditions(args: NoArgs, ctx: ActionContext) -> ActionResult:
    proc = ctx.view.get("procedure")
    params = dict(ctx.view.get("params") or {})
    for check in proc.get("postconditions") or []:
        outcome = run_step(
            ProcedureStep(command=check, timeout_secs=30),
            render_command(check, params),
            0,
            ctx.view.get("shell_cwd") or ctx.view.get("cwd"),
            ctx.secrets,
        )
        if not outcome.passed:
            tail = output_tail(outcome.stderr)
            divergence = Divergence(
                procedure=proc["id"],
                version=proc["version"],
                replayed=len(proc["steps"]),
                expected=f"postcondition `{check}` passes",
                observed=observed(outcome),
                reason=why(f"postcondition failed: {outcome.reason}", tail),
                command=check,
                observed_exit_code=outcome.exit_code,
                observed_output=redact((outcome.stdout + outcome.stderr)[-1500:]),
                stderr_tail=tail,
            ).record()
            return ActionResult(outputs={"failed": check}, context={"post_ok": False, "divergence": divergence})
    return ActionResult(outputs={"failed": None}, context={"post_ok": True})


class RecordArgs(BaseModel):
    outcome: Outcome


@default_registry.action("skill_record")
def skill_record(args: RecordArgs, ctx: ActionContext) -> ActionResult:
    """Record how the replay ended; a divergence also becomes a defensive learning for planning."""
    store = skill_store(ctx.home)
    view = ctx.view
    if ctx.run_id:
        end_session(ctx.run_id)
    proc = view.get("procedure")
    divergence = view.get("divergence") or {}
    if view.get("edited_steps"):
        return _record_edited(args, ctx, proc, divergence)
    execution = record_execution(
        store,
        proc,
        started=view.get("started_at") or time.time(),
        outcome=args.outcome,
        divergence=divergence,
        run_id=ctx.run_id,
    )
    if args.outcome == "diverged" and divergence.get("command"):
        _learn_from(divergence, proc, store, ctx)
    if args.outcome == "success" and view.get("relevance_point") is not None and execution.id is not None:
        Answers(store).add_held_replay(
            execution.id,
            proc["id"],
            view.get("task_type"),
            float(view.get("relevance_point")),
            view.get("by") or current_user(),
        )
    return ActionResult(outputs=execution.model_dump(), context={"execution_id": execution.id})


def _learn_from(divergence: Any, proc: Any, store: Any, ctx: ActionContext) -> None:
    """The diverged command becomes a defensive learning, with its vector, so the re-plan that follows finds it."""
    store.add_learning(
        CapturedLearning(
            task_type=proc["task_type"],
            procedure_id=proc["id"],
            command=divergence["command"],
            about=str(proc.get("description") or "")[:300],
            error=_learned_error(divergence),
            exit_code=divergence.get("observed_exit_code"),
            source="replay",
        )
    )
    failure_finder(ctx.home).sync()


def _record_edited(args: RecordArgs, ctx: ActionContext, proc: Any, divergence: Any) -> ActionResult:
    """Steps a person rewrote: passed, they are the procedure's next version (a person's capture, one success; the old
    version is kept); diverged, nothing is counted against the stored version, which did not run, and the failure is
    kept as a learning."""
    from ...errors import StoreError

    store = skill_store(ctx.home)
    edited = thaw(ctx.view.get("edited_steps"))
    if args.outcome == "success":
        steps = [ProcedureStep.model_validate(s, context=STORED) for s in proc["steps"]]
        try:
            updated = store.add_version(proc["id"], steps, source="manual")
        except StoreError as exc:  # the rewritten steps are another procedure's: nothing to add
            edited["not_kept"] = str(exc)
            return ActionResult(outputs=edited, context={"edited_steps": edited})
        edited["new_version"] = updated.version
        warning = _matcher(ctx).index(updated)
        if warning:
            edited["index_warning"] = warning
        return ActionResult(outputs=edited, context={"edited_steps": edited})
    if divergence.get("command"):
        _learn_from(divergence, proc, store, ctx)
    return ActionResult(outputs=edited)


def _learned_error(divergence: dict[str, Any]) -> str:
    """The reason and the end of the output (redacted, escapes removed: `learn failures` prints it), without saying
    twice the line the reason already quotes."""
    reason = str(divergence.get("reason") or "")
    lines = (output_tail(str(divergence.get("observed_output") or ""), chars=300) or "").splitlines()
    if lines and reason.endswith(lines[-1].strip()):
        lines.pop()
    return f"{reason}: " + "\n".join(lines) if lines else reason
