"""Running the heartbeat machine once, on a schedule, and mining right after an import."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from .config import load_config
from .state import HeartbeatState

if TYPE_CHECKING:
    from ..engine.hooks import RunHook


def run_once(home: Path, watch: list[str] | None = None, progress: RunHook | None = None) -> dict[str, Any]:
    """One heartbeat, run by the engine: the report (status ran or skipped, phases, watermark, alerts).

    `progress` is a run hook that hears each step (each phase is a state), for a CLI to show where a long heartbeat is.
    """
    from ..data import data_file
    from ..engine.workflow import load_workflow
    from ..stores import Home

    workflow = load_workflow(data_file("statemachines", "heartbeat.yaml"))
    house = Home(home)
    store = house.runs
    agent = workflow.agent(store=store, home=home, hooks=[progress] if progress is not None else [])
    try:
        result = agent.run({"watch": list(watch or [])})
    except BaseException:
        _release(home, agent.run_id)  # Ctrl-C mid-phase: give the lock back rather than wait for it to go stale
        raise
    finally:
        house.close()
    report = dict(result.context.get("report") or {})
    if result.status == "error":
        _release(home, agent.run_id)
        report.update(status="error", error=result.error, phases=result.context.get("phases", {}))
    report["run_id"] = result.run_id
    return report


def _release(home: Path, run_id: str) -> None:
    from ..stores import Home

    with Home(home) as house:
        state = HeartbeatState(house.database)
        try:
            state.release(run_id)
        finally:
            state.close()


@dataclass(frozen=True)
class Schedule:
    """When `--every` starts heartbeats: a fixed period from each start, or the times a cron expression names."""

    text: str
    seconds: float | None = None
    cron: str | None = None

    def first_start(self, now: float) -> float:
        """A period starts at once; a cron schedule at its next matching time, as cron would."""
        return now if self.cron is None else self._next_cron(now)

    def next_start(self, last_start: float, now: float) -> float:
        if self.cron is None:
            return last_start + (self.seconds or 0.0)
        return self._next_cron(max(now, last_start))

    def _next_cron(self, after: float) -> float:
        from croniter import croniter

        return float(croniter(self.cron, datetime.fromtimestamp(after).astimezone()).get_next(float))


_CRON_HINT = "a duration like 30m, 90s, 2h or 1h30m, or a cron expression like '*/15 * * * *' or @hourly"


def parse_every(text: str) -> Schedule:
    """`30m`, `90s`, `2h`, `1h30m` → a period;
    five cron fields (local time) or `@hourly`/`@daily`… → a cron schedule."""
    spec = text.strip()
    if spec.startswith("@") or len(spec.split()) >= 5:
        from croniter import croniter

        if not croniter.is_valid(spec):
            raise UsageError(f"--every '{text}' is not a valid cron expression; use {_CRON_HINT}")
        return Schedule(text=spec, cron=spec)
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*([smhd])", spec.lower())
    if not parts or "".join(f"{n}{u}" for n, u in parts) != re.sub(r"\s+", "", spec.lower()):
        raise UsageError(f"--every '{text}' is not {_CRON_HINT}")
    seconds = sum(float(n) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[u] for n, u in parts)
    if seconds < 1:
        raise UsageError("--every must be at least 1s")
    return Schedule(text=spec, seconds=seconds)


def run_every(
    home: Path,
    schedule: Schedule | float,
    on_report: Callable[[dict[str, Any]], None],
    watch: list[str] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    max_runs: int | None = None,
    clock: Callable[[], float] = time.time,
    progress: RunHook | None = None,
) -> int:
    """A foreground scheduler: heartbeats on `schedule` (a Schedule, or a period in seconds),
    until Ctrl-C (or `max_runs`)."""
    if not isinstance(schedule, Schedule):
        schedule = Schedule(text=f"{schedule}s", seconds=float(schedule))
    runs = 0
    start = schedule.first_start(clock())
    while max_runs is None or runs < max_runs:
        wait = start - clock()
        if wait > 0:
            sleep(wait)
        started = clock()
        on_report(run_once(home, watch, progress))
        runs += 1
        if max_runs is not None and runs >= max_runs:
            break
        start = schedule.next_start(started, clock())
    return runs


def mine_pending(home: Path) -> dict[str, Any] | None:
    """Mine what an import just added, under the heartbeat's lock; None when a heartbeat holds it (it will mine)."""
    from ..stores import Home
    from .phases import WATERMARK, mine_range

    config = load_config(home)
    house = Home(home)
    state = HeartbeatState(house.database)
    holder = f"import-{uuid.uuid4().hex[:8]}"
    try:
        if not state.acquire(holder, config.heartbeat.lock_stale_secs).acquired:
            return None
        try:
            start = int(state.get(WATERMARK, 0))
            end = house.sessions.max_command_id()
            result = mine_range(home, config, start, end)
            state.set(WATERMARK, end)
            return result.to_dict()
        finally:
            state.release(holder)
    finally:
        state.close()
        house.close()
