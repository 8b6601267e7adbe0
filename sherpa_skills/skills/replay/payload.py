"""A replay run as plain data (`SkillStore.replay`'s payload): status, procedure, rendered steps and how each went,
why it stopped."""

from __future__ import annotations

from typing import Any

#: The replay machine's final states as the payload names them.
REPLAY_STATUS = {
    "succeeded": "succeeded",
    "diverged": "diverged",
    "dry_run": "dry-run",
    "no_match": "no-match",
    "needs_confirmation": "needs-confirmation",
    "refused": "refused",
}


def replay_payload(result: Any) -> dict[str, Any]:
    """A replay run as plain data: status, procedure, rendered steps and how each went, why it stopped."""
    from .actions import step_results

    ctx = result.context
    proc = ctx.get("procedure") or {}
    executed = {r["index"]: r for r in step_results(ctx)}
    steps = []
    for i, command in enumerate(ctx.get("rendered") or [], 1):
        step: dict[str, Any] = {"index": i, "command": command}
        if i in executed:
            step.update(
                exit_code=executed[i]["exit_code"],
                passed=executed[i]["passed"],
                reason=executed[i]["reason"],
                duration_ms=executed[i]["duration_ms"],
            )
        steps.append(step)
    status = "error" if result.status == "error" else REPLAY_STATUS.get(result.state, result.state)
    reason = (
        result.error
        or (ctx.get("divergence") or {}).get("reason")
        or ctx.get("select_reason")
        or ("; ".join(ctx.get("preflight_problems") or []) or None)
    )
    return {
        "status": status,
        "procedure_id": proc.get("id"),
        "version": proc.get("version"),
        "confidence": proc.get("confidence"),
        "replayed_before": proc.get("replayed"),
        "steps": steps,
        "diverged_step": ctx.get("diverged_step"),
        "divergence": ctx.get("divergence"),
        "reason": reason,
        "llm_calls": result.counters.get("llm_calls", 0),
        "tokens": result.counters.get("tokens", 0),
        "match_mode": ctx.get("match_mode"),
        "degraded": ctx.get("degraded"),
        "params": ctx.get("params") or {},
        "params_from_task": ctx.get("params_from_task") or {},
        "matches": ctx.get("matches"),
        "candidates": ctx.get("offered") or [],
        "judged_by": ctx.get("judged_by"),
        "edited_steps": ctx.get("edited_steps"),
        "verification": ctx.get("verification"),
        "run_id": result.run_id,
    }
