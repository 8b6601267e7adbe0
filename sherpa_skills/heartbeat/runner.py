"""Running the heartbeat machine once, on a schedule, and mining right after an import."""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from ..errors import UsageError
from .config import load_config
from .state import HeartbeatState


def run_once(home: Path, watch: list[str] | None = None, observe: Callable[[str, dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """One heartbeat, run by the engine: the report (status ran or skipped, phases, watermark, alerts).

    `observe` gets the engine's progress callbacks (each phase is a state), for a CLI to show where a long heartbeat is.
    """
    from ..data import data_file
    from ..engine.runstore import RunStore
    from ..engine.workflow import load_workflow

    workflow = load_workflow(data_file("statemachines", "heartbeat.yaml"))
    store = RunStore(home=home)
    agent = workflow.agent(store=store, home=home)
    if observe is not None:
        agent.observe(observe)
    try:
        result = agent.run({"watch": list(watch or [])})
    except BaseException:
        _release(home, agent.run_id)  # Ctrl-C mid-phase: give the lock back rather than wait for it to go stale
        raise
    finally:
        store.close()
    report = dict(result.context.get("report") or {})
    if result.status == "error":
        _release(home, agent.run_id)
        report.update(status="error", error=result.error, phases=result.context.get("phases", {}))
    report["run_id"] = result.run_id
    return report


def _release(home: Path, run_id: str) -> None:
    state = HeartbeatState(home)
    try:
        state.release(run_id)
    finally:
        state.close()


def parse_every(text: str) -> float:
    """`30m`, `90s`, `2h`, `1h30m` → seconds."""
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*([smhd])", text.strip().lower())
    if not parts or "".join(f"{n}{u}" for n, u in parts) != re.sub(r"\s+", "", text.strip().lower()):
        raise UsageError(f"--every '{text}' is not a duration like 30m, 90s, 2h or 1h30m")
    seconds = sum(float(n) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[u] for n, u in parts)
    if seconds < 1:
        raise UsageError("--every must be at least 1s")
    return seconds


def run_every(home: Path, seconds: float, on_report: Callable[[dict[str, Any]], None], watch: list[str] | None = None,
              sleep: Callable[[float], None] = time.sleep, max_runs: int | None = None,
              observe: Callable[[str, dict[str, Any]], None] | None = None) -> int:
    """A foreground scheduler: a heartbeat every `seconds`, until Ctrl-C (or `max_runs`)."""
    runs = 0
    while max_runs is None or runs < max_runs:
        started = time.monotonic()
        on_report(run_once(home, watch, observe))
        runs += 1
        if max_runs is not None and runs >= max_runs:
            break
        sleep(max(0.0, seconds - (time.monotonic() - started)))
    return runs


def mine_pending(home: Path) -> dict[str, Any] | None:
    """Mine what an import just added, under the heartbeat's lock; None when a heartbeat holds it (it will mine)."""
    from ..sessions import SessionStore
    from ..skills.mining import MiningOptions, mine
    from ..skills.runtime import skill_store
    from .phases import WATERMARK

    config = load_config(home)
    state = HeartbeatState(home)
    holder = f"import-{uuid.uuid4().hex[:8]}"
    try:
        if not state.acquire(holder, config.heartbeat.lock_stale_secs).acquired:
            return None
        try:
            start = int(state.get(WATERMARK, 0))
            with SessionStore(home) as sessions:
                end = sessions.max_command_id()
                commands = [c for c in sessions.commands_since(start, limit=max(0, end - start)) if c.id <= end]
            m = config.mining
            result = mine(commands, skill_store(home), MiningOptions(m.gap_secs, m.min_steps, m.max_steps, m.promote_after))
            state.set(WATERMARK, end)
            return result.to_dict()
        finally:
            state.release(holder)
    finally:
        state.close()
