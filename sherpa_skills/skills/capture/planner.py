"""Actions of statemachines/planner.yaml: what planning needs to know after a replay diverged."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ...engine.registry import ActionContext, ActionResult, default_registry
from ..replay.runtime import failure_finder

#: The same command failing this many times in a row ends the commands: a model repeating itself will not stop.
REPEATED_FAILURES = 3
DEFAULT_MAX_COMMANDS = 25


class NoArgs(BaseModel):
    pass


@default_registry.action("plan_context")
def plan_context(args: NoArgs, ctx: ActionContext) -> ActionResult:
    """Put the divergence (what was replayed, what was expected, what happened)
    and past failures where the prompt shows them."""
    view = ctx.view
    replay: dict[str, Any] = view.get("replay") or {}
    replay_context = replay.get("context") or {}
    procedure = replay_context.get("procedure") or {}
    diverged = replay.get("state") == "diverged"
    # Found by what the task means (the procedures' scores, a floor calibrated for learnings), not only by task type.
    found = failure_finder(ctx.home).find(str(view.get("task") or ""), view.get("task_type"), limit=5)
    learnings = [
        {
            "command": x.learning.command,
            "error": x.learning.error[-200:],
            "seen": x.learning.seen,
            "relevance": x.relevance,
            "why": x.why,
        }
        for x in found.found
    ]
    commands = [
        {
            "command": e.inputs.get("command"),
            "exit_code": (e.outputs or {}).get("exit_code"),
            "output": ((e.outputs or {}).get("stdout", "") + (e.outputs or {}).get("stderr", ""))[-400:],
        }
        for e in view.log
        if e.action == "shell"
    ]
    stop_reason = _stop_reason(commands, view.get("max_commands"))
    context = {
        "may_run": stop_reason is None,
        "may_finish": not commands or commands[-1]["exit_code"] == 0,
        "stop_reason": stop_reason,
        "replay_outcome": replay.get("state") or "not tried",
        "divergence": replay_context.get("divergence") if diverged else None,
        "relearn_procedure_id": procedure.get("id") if diverged else None,
        "learnings": learnings,
        "commands_run": commands,
    }
    return ActionResult(outputs={"learnings": len(learnings), "commands_run": len(commands)}, context=context)


def _stop_reason(commands: list[dict[str, Any]], max_commands: Any) -> str | None:
    """Why planning may run no more commands (it can still finish or give up), or None while it may."""
    limit = int(max_commands) if isinstance(max_commands, (int, float)) and max_commands >= 1 else DEFAULT_MAX_COMMANDS
    if len(commands) >= limit:
        return f"{limit} commands run, the most this run may (max_commands)"
    last = commands[-REPEATED_FAILURES:]
    if (
        len(last) == REPEATED_FAILURES
        and len({c["command"] for c in last}) == 1
        and all(c["exit_code"] != 0 for c in last)
    ):
        return f"`{last[0]['command']}` failed {REPEATED_FAILURES} times in a row"
    return None
