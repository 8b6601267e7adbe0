"""Actions of statemachines/heartbeat.yaml: lock, one isolated phase at a time, report, release."""

from __future__ import annotations

import time
import traceback
from pathlib import Path
from typing import Any, Literal

import structlog
from pydantic import BaseModel

from ..engine.registry import ActionContext, ActionResult, default_registry
from ..home import resolve_home
from . import phases
from .config import load_config
from .state import HeartbeatState

log = structlog.get_logger(__name__)


class NoArgs(BaseModel):
    pass


def _home(ctx: ActionContext) -> Path:
    return Path(ctx.home) if ctx.home else resolve_home()


@default_registry.action("heartbeat_lock")
def heartbeat_lock(args: NoArgs, ctx: ActionContext) -> ActionResult:
    """Take the heartbeat lock, reset a stale one, or report who holds it."""
    home = _home(ctx)
    config = load_config(home)
    state = HeartbeatState(home=home)
    try:
        outcome = state.acquire(ctx.run_id or "", config.heartbeat.lock_stale_secs)
    finally:
        state.close()
    return ActionResult(
        outputs=outcome.to_dict(), context={"lock": outcome.to_dict(), "started": time.time(), "phases": {}}
    )


class PhaseArgs(BaseModel):
    phase: Literal["extract", "crystallise", "health", "maintenance", "memory"]


@default_registry.action("heartbeat_phase")
def heartbeat_phase(args: PhaseArgs, ctx: ActionContext) -> ActionResult:
    """Run one phase in isolation: whatever it raises becomes its failed result, and the next phase still runs."""
    home = _home(ctx)
    done: dict[str, Any] = dict(ctx.view.get("phases") or {})
    t0 = time.perf_counter()
    state = HeartbeatState(home=home)
    try:
        config = load_config(home)
        if not state.still_holds(ctx.run_id or ""):  # another heartbeat may be running now: touch nothing
            result = phases.PhaseResult(
                "failed",
                "the heartbeat lock was lost (the database connection holding it dropped and another heartbeat "
                "took it); phase not run",
                {},
                ["heartbeat lock lost"],
            )
        elif args.phase == "extract":
            result = phases.extract(home, config, state, list(ctx.view.get("watch") or []))
        elif args.phase == "crystallise":
            extracted = done.get("extract") or {}
            result = (
                phases.crystallise(home, config, extracted["stats"])
                if extracted.get("status") == "ok"
                else phases.PhaseResult("skipped", "extract did not succeed; nothing to mine")
            )
        elif args.phase == "health":
            result = phases.health(home, config, state)
        elif args.phase == "memory":
            result = phases.memory(home, config, state)
        else:
            result = phases.maintenance(home, config, state)
    except Exception as exc:
        log.warning("heartbeat_phase_failed", phase=args.phase, error=str(exc), trace=traceback.format_exc(limit=5))
        result = phases.PhaseResult("failed", f"{type(exc).__name__}: {exc}", {}, [f"phase {args.phase} failed: {exc}"])
    finally:
        state.close()
    outcome = {**result.to_dict(), "seconds": round(time.perf_counter() - t0, 4)}
    done[args.phase] = outcome
    return ActionResult(
        outputs=outcome, context={"phases": done}, status="ok" if result.status != "failed" else "failed"
    )


@default_registry.action("heartbeat_report")
def heartbeat_report(args: NoArgs, ctx: ActionContext) -> ActionResult:
    """The orchestrator's part: advance the watermark past what every phase that reads sessions processed, then store
    the report; a failed phase makes it `partial`, and its commands are read again next time."""
    home = _home(ctx)
    view = ctx.view
    done: dict[str, Any] = dict(view.get("phases") or {})
    state = HeartbeatState(home=home)
    try:
        before = int(state.get(phases.WATERMARK, 0))
        after = before
        extract, crystallise = done.get("extract") or {}, done.get("crystallise") or {}
        if extract.get("status") == "ok" and crystallise.get("status") == "ok":
            after = min(
                int(extract["stats"]["new_watermark"]), int(crystallise["stats"].get("processed_through", before))
            )
            after = max(after, before)
            state.set(phases.WATERMARK, after)
        failed = [name for name, phase in done.items() if phase.get("status") == "failed"]
        alerts = [a for phase in done.values() for a in phase.get("alerts", [])]
        if failed:
            alerts.append(
                f"phase(s) failed: {', '.join(failed)}; the watermark stays at {after}, "
                "so what they did not finish is read again"
            )
        status = "partial" if failed else "ran"
        report = {
            "status": status,
            "run_id": ctx.run_id,
            "started": view.get("started") or time.time(),
            "ended": time.time(),
            "watermark_before": before,
            "watermark": after,
            "phases": done,
            "alerts": alerts,
            "lock": view.get("lock"),
        }
        markdown = render_markdown(report)
        report["report_id"] = state.save_report(report, markdown)
    finally:
        state.close()
    return ActionResult(outputs={"report_id": report["report_id"]}, context={"report": report})


@default_registry.action("heartbeat_skip")
def heartbeat_skip(args: NoArgs, ctx: ActionContext) -> ActionResult:
    """The lock is held by a live heartbeat: say so, store nothing else."""
    home = _home(ctx)
    state = HeartbeatState(home=home)
    try:
        watermark = int(state.get(phases.WATERMARK, 0))
    finally:
        state.close()
    report = {
        "status": "skipped",
        "run_id": ctx.run_id,
        "started": time.time(),
        "ended": time.time(),
        "watermark_before": watermark,
        "watermark": watermark,
        "phases": {},
        "alerts": [],
        "lock": ctx.view.get("lock"),
    }
    return ActionResult(outputs={"skipped": True}, context={"report": report})


@default_registry.action("heartbeat_release")
def heartbeat_release(args: NoArgs, ctx: ActionContext) -> ActionResult:
    state = HeartbeatState(home=_home(ctx))
    try:
        released = state.release(ctx.run_id or "")
    finally:
        state.close()
    return ActionResult(outputs={"released": released})


def render_markdown(report: dict[str, Any]) -> str:
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(report["started"]))
    lines = [
        f"# Heartbeat {started}",
        "",
        f"Status: {report['status']}; watermark {report['watermark_before']} → {report['watermark']}; "
        f"{report['ended'] - report['started']:.2f} s",
        "",
        "| phase | status | summary | seconds |",
        "|---|---|---|---:|",
    ]
    for name, phase in report["phases"].items():
        lines.append(f"| {name} | {phase['status']} | {phase['summary']} | {phase.get('seconds', 0):.3f} |")
    lines.append("")
    if report["alerts"]:
        lines += ["## Alerts", ""] + [f"- {a}" for a in report["alerts"]] + [""]
    return "\n".join(lines)
