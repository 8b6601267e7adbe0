"""Actions and guards of statemachines/capture.yaml: collect → filter → check → dedupe → crystallise → index."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ValidationError

from ...engine.registry import ActionContext, ActionResult, default_registry
from ...engine.shell_template import check_shell_template
from ...errors import UsageError
from ..match.matcher import Matcher
from ..replay.runtime import as_template, failure_finder, skill_store
from ..store.models import CapturedLearning, CapturedProcedure, ProcedureStep, step_problem
from ..store.recording import credit_or_new_version
from ..store.signatures import step_signature

# Commands that only look around: a procedure made of them alone is not worth replaying.
NO_OP_PROGRAMS = frozenset(
    "ls ll la pwd cd cat less more head tail clear history whoami which type echo true date env printenv "
    "man help exit tree file stat wc".split()
)
_SUCCESS_LINE = re.compile(
    r"\b(ok|passed|pass|success|successful|succeeded|built|done|complete|completed|created|installed|finished)\b",
    re.IGNORECASE,
)


def program(command: str) -> str:
    first = command.strip().split(None, 1)[0] if command.strip() else ""
    return first.rsplit("/", 1)[-1]


def is_no_op(command: str) -> bool:
    """A single look-around command (`ls`, `cd x`, `cat f`); pipelines and chains are kept."""
    return program(command) in NO_OP_PROGRAMS and not re.search(r"[|;&>]", command)


class NoArgs(BaseModel):
    pass


@default_registry.action("capture_collect")
def capture_collect(args: NoArgs, ctx: ActionContext) -> ActionResult:
    """The shell steps of a finished run (from the run store), or the steps given explicitly."""
    view = ctx.view
    raw: list[dict[str, Any]] = []
    planned_tokens = int(view.get("planned_tokens") or 0)
    planned_calls = int(view.get("planned_llm_calls") or 0)
    if view.get("run_id"):
        from ...engine.runstore import RunStore

        store = RunStore(home=ctx.home)
        try:
            row = store.get_run(view.get("run_id"))
            belief = store.load_belief(row.run_id)
        finally:
            store.close()
        for entry in belief.log:
            if entry.action == "shell":
                out = entry.outputs or {}
                raw.append(
                    {
                        "command": entry.inputs.get("command", ""),
                        "status": entry.status,
                        "exit_code": out.get("exit_code"),
                        "stdout": out.get("stdout", ""),
                        "timeout_secs": entry.inputs.get("timeout_secs", 60),
                        "cwd": entry.inputs.get("cwd"),
                        "literal": True,
                    }
                )
        planned_tokens = planned_tokens or sum(e.tokens for e in belief.log)
        planned_calls = planned_calls or int(row.counters.get("llm_calls", 0))
    for number, step in enumerate(view.get("steps") or [], 1):
        try:
            given = ProcedureStep(**step)
        except ValidationError as exc:
            raise UsageError(step_problem(number, exc)) from None
        try:  # a step replay could not render safely is refused now, not at its first replay
            check_shell_template(as_template(given.command))
        except UsageError as exc:
            raise UsageError(f"step {number} ({given.command!r}): {exc}") from None
        # Given explicitly: kept as given (no step dropped, patterns kept, one step is enough).
        raw.append({**given.model_dump(), "status": "ok", "stdout": "", "explicit": True})
    return ActionResult(
        outputs={"collected": len(raw)},
        context={"raw_steps": raw, "planned_tokens": planned_tokens, "planned_llm_calls": planned_calls},
    )


_MARKER_NAME = re.compile(
    r"(?:\b([A-Za-z_][A-Za-z0-9_]*)\s*[=:]\s*|--([A-Za-z][\w-]*)[= ])[\"']?(?:Bearer |Basic |token )?$"
)


def secrets_to_env(command: str, taken: set[str]) -> tuple[str, list[str]]:
    """A literal secret in a step the user gave becomes an environment variable reference, so the procedure stays
    replayable and the value is never stored: `TOKEN=abc123...` → `TOKEN=${TOKEN}` with TOKEN required at replay."""
    from ...redact import REDACTED, redact

    redacted = redact(command)
    if REDACTED not in redacted:
        return command, []
    out, names, rest = "", [], redacted
    while REDACTED in rest:
        before, rest = rest.split(REDACTED, 1)
        context = (out + before)[-60:]
        found = _MARKER_NAME.search(context)
        name = (found.group(1) or found.group(2)) if found else ""
        name = re.sub(r"\W+", "_", name).upper().strip("_")
        if not name or name in taken:
            name = f"SECRET_{len(taken) + 1}"
        taken.add(name)
        names.append(name)
        inside_single = (out + before).count("'") % 2 == 1
        out += before + (f"'\"${{{name}}}\"'" if inside_single else f"${{{name}}}")
    return out + rest, names


@default_registry.action("capture_filter")
def capture_filter(args: NoArgs, ctx: ActionContext) -> ActionResult:
    """Runs and sessions: redact secrets, drop look-around commands, and with drop_failed turn failed attempts into
    defensive learnings. Steps given explicitly are kept as given; a literal secret in one becomes an env var."""
    from ...redact import redact

    view = ctx.view
    kept, filtered, failed = [], [], 0
    secrets: list[str] = []
    store = skill_store(ctx.home)
    for step in view.get("raw_steps") or []:
        if step.get("explicit"):
            command, names = secrets_to_env(step["command"].strip(), set(secrets))
            secrets += names
            env_vars = list(dict.fromkeys([*(step.get("env_vars") or []), *names]))
            kept.append({**step, "command": command, "env_vars": env_vars})
            continue
        command = redact(step["command"]).strip()
        if not command:
            filtered.append({"command": step["command"][:200], "reason": "empty"})
            continue
        if is_no_op(command):
            filtered.append(
                {"command": command, "reason": f"look-around command ({program(command)}): nothing to replay"}
            )
            continue
        if step["status"] != "ok" and view.get("drop_failed"):
            failed += 1
            filtered.append(
                {"command": command, "reason": f"failed (exit {step.get('exit_code')}): kept as a defensive learning"}
            )
            store.add_learning(
                CapturedLearning(
                    task_type=view.get("task_type"),
                    procedure_id=view.get("procedure_id"),
                    command=command,
                    about=redact(str(view.get("description") or view.get("task") or ""))[:300],
                    error=redact(str(step.get("stdout", ""))[-300:]),
                    exit_code=step.get("exit_code"),
                    source="run",
                )
            )
            continue
        kept.append({**step, "command": command, "stdout": redact(step.get("stdout") or "")})
    if failed:
        failure_finder(ctx.home).sync()  # the new learnings' vectors, so the next plan finds them by meaning
    return ActionResult(
        outputs={"kept": len(kept), "filtered": filtered, "failed_dropped": failed, "secrets_to_env": secrets},
        context={"steps_filtered": kept, "filtered": filtered, "secrets_to_env": secrets},
    )


class MinStepsArgs(BaseModel):
    min: int = 2


@default_registry.guard("capture_all_succeeded")
def capture_all_succeeded(view: Any, args: Any = None) -> bool:
    """Every kept step finished as recorded (status ok)."""
    return all(s["status"] == "ok" for s in view.get("steps_filtered") or [])


def _min_steps(view: Any, wanted: int) -> int:
    """Steps the user gave explicitly make a procedure even alone; a run or session needs `wanted`."""
    steps = view.get("steps_filtered") or []
    return 1 if steps and all(s.get("explicit") for s in steps) else wanted


@default_registry.guard("capture_enough_steps")
def capture_enough_steps(view: Any, args: MinStepsArgs) -> bool:
    """A procedure from a run is at least `min` steps (one command needs no procedure); given steps, at least one."""
    return len(view.get("steps_filtered") or []) >= _min_steps(view, args.min)


@default_registry.guard("capture_no_secrets")
def capture_no_secrets(view: Any, args: Any = None) -> bool:
    """Nothing that looks like a secret is left in the steps."""
    from ...redact import contains_secret

    return not any(contains_secret(s["command"]) for s in view.get("steps_filtered") or [])


@default_registry.action("capture_explain")
def capture_explain(args: NoArgs, ctx: ActionContext) -> ActionResult:
    """Say which check refused the capture, for the user and for --json."""
    view = ctx.view
    steps = view.get("steps_filtered") or []
    reasons = []
    bad = [i + 1 for i, s in enumerate(steps) if s["status"] != "ok"]
    if bad:
        reasons.append(f"step(s) {', '.join(map(str, bad))} did not succeed")
    need = _min_steps(view, 2)
    if len(steps) < need:
        dropped = "; ".join(f"{f['command']} ({f['reason']})" for f in view.get("filtered") or [])
        reasons.append(
            f"only {len(steps)} step(s) left after filtering; a procedure needs at least {need}"
            + (f" (filtered: {dropped})" if dropped else "")
        )
    if not capture_no_secrets(view):
        reasons.append("a step still looks like it holds a secret")
    reason = "; ".join(reasons) or "refused"
    return ActionResult(outputs={"reason": reason}, context={"rejected_reason": reason})


def crystallise_steps(raw: list[dict[str, Any]]) -> list[ProcedureStep]:
    """Expected exit codes from what was observed; an output pattern where a stable success line exists."""
    steps = []
    for s in raw:
        command = s["command"]
        if s.get("literal") and ("{{" in command or "{%" in command or "{#" in command):
            command = "{% raw %}" + command + "{% endraw %}"  # literal braces (docker --format, awk) stay literal
        exit_code = s.get("exit_code")
        steps.append(
            ProcedureStep(
                command=command,
                expected_exit_code=exit_code if isinstance(exit_code, int) else 0,
                expected_output_pattern=s.get("expected_output_pattern") or stable_pattern(s.get("stdout") or ""),
                timeout_secs=max(float(s.get("timeout_secs") or 60), 1.0),
                env_vars=s.get("env_vars") or [],
                cwd=s.get("cwd"),
            )
        )
    return steps


def stable_pattern(stdout: str) -> str | None:
    """The last line announcing success, with its numbers generalised, as a regex; None when there is none."""
    for line in reversed([x.strip() for x in stdout.splitlines() if x.strip()][-20:]):
        if _SUCCESS_LINE.search(line) and len(line) <= 120:
            return re.sub(r"\\?\d+(\\\.\d+)*", r"\\d+(\\.\\d+)*", re.escape(line))
    return None


@default_registry.action("capture_dedupe")
def capture_dedupe(args: NoArgs, ctx: ActionContext) -> ActionResult:
    """The same steps as a stored procedure: that procedure gains a success instead of a duplicate."""
    store = skill_store(ctx.home)
    steps = crystallise_steps(ctx.view.get("steps_filtered") or [])
    existing = store.find_by_signature(step_signature(steps), ctx.view.get("task_type"))
    if existing is None:
        return ActionResult(outputs={"duplicate_of": None}, context={"duplicate_of": None})
    claimed_by = ctx.view.get("claimed_by")
    updated = (
        store.add_claim(existing.id, "agent", claimed_by, successes=1)  # an agent's word, kept, not counted
        if claimed_by
        else store.record_success(existing.id)
    )
    return ActionResult(
        outputs={"duplicate_of": existing.id},
        context={"duplicate_of": existing.id, "procedure": updated.model_dump(mode="json")},
    )


def _plain(value: Any) -> dict[str, Any]:
    """A context input as plain, writable data (the view hands out read-only windows)."""
    from ...engine.belief import thaw

    return dict(thaw(value)) if value else {}


@default_registry.action("capture_crystallise")
def capture_crystallise(args: NoArgs, ctx: ActionContext) -> ActionResult:
    """A new procedure, or — when re-learning one that diverged — its next version."""
    from ...redact import redact

    view = ctx.view
    store = skill_store(ctx.home)
    steps = crystallise_steps(view.get("steps_filtered") or [])
    common: dict[str, Any] = {
        "planned_tokens": int(view.get("planned_tokens") or 0),
        "planned_llm_calls": int(view.get("planned_llm_calls") or 0),
    }
    relearn = view.get("procedure_id")
    task_type = view.get("task_type")
    if not relearn and not task_type:
        raise UsageError("capture needs a task type")
    claimed_by = view.get("claimed_by")
    if claimed_by and relearn:
        raise UsageError("a claimed capture (an agent's) cannot re-learn a procedure: only this store's runs do")
    captured = CapturedProcedure(
        id="",
        task_type=task_type or "",
        description=redact(view.get("description") or ""),  # text, not a step: a secret in it is never stored
        steps=steps,
        tags=[redact(t) for t in view.get("tags") or []],
        preconditions=list(view.get("preconditions") or []),
        postconditions=list(view.get("postconditions") or []),
        # a new version says only where it came from; a new procedure may say more (mined, imported)
        source=(None if relearn else view.get("source")) or ("run" if view.get("run_id") else "manual"),
        success_count=1,
        status=view.get("status") or "active",
        context={
            **_plain(view.get("context")),
            **({"captured_from_run": view.get("run_id")} if view.get("run_id") else {}),
        },
        **common,
    )
    proc, new = (
        store.add_candidate(captured, "agent", claimed_by, successes=1)
        if claimed_by
        else credit_or_new_version(store, captured, relearn)
    )
    if not new:  # another capture stored the same steps between our duplicate check and this insert
        return ActionResult(
            outputs={"duplicate_of": proc.id},
            context={"duplicate_of": proc.id, "procedure": proc.model_dump(mode="json")},
        )
    return ActionResult(
        outputs={"procedure_id": proc.id, "version": proc.version}, context={"procedure": proc.model_dump(mode="json")}
    )


@default_registry.action("capture_index")
def capture_index(args: NoArgs, ctx: ActionContext) -> ActionResult:
    """Embed the procedure into the matching index;
    if that fails the truth is unaffected and `learn reindex` catches up."""
    store = skill_store(ctx.home)
    proc = store.get(ctx.view.get("procedure")["id"])
    warning = Matcher(store).index(proc)
    return ActionResult(
        outputs={"indexed": warning is None},
        context={"index_warning": warning},
        status="ok" if warning is None else "failed",
    )
