"""The heartbeat's phases. Each gets what it needs, returns a result (status, summary, stats, alerts), and
never raises: the action running it turns any exception into a failed result, so one phase failing does
not stop the others.

`on_phase_start(hook)` registers a callable run with the phase's name as each phase starts (tests use it to hold
a phase open or make it fail; an operator can use it for instrumentation). It lives in the process, never in the
environment: nothing outside the program can change what a heartbeat does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from .config import HomeConfig
from .state import HeartbeatState

if TYPE_CHECKING:
    from ..skills.api import MiningResult

log = structlog.get_logger(__name__)

WATERMARK = "sessions_watermark"
#: Engram's memory alerts: more open tensions, or more new observations (episodes) since the last heartbeat, than this.
MAX_OPEN_TENSIONS = 5
MAX_PENDING_OBSERVATIONS = 20


@dataclass
class PhaseResult:
    status: str = "ok"  # ok | failed | skipped
    summary: str = ""
    stats: dict[str, Any] = field(default_factory=dict)
    alerts: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "summary": self.summary, "stats": self.stats, "alerts": self.alerts}


PhaseHook = Callable[[str], None]
_hooks: list[PhaseHook] = []


def on_phase_start(hook: PhaseHook) -> Callable[[], None]:
    """Run `hook(phase)` as each phase starts (an exception it raises fails that phase); returns its remover."""
    _hooks.append(hook)
    return lambda: _hooks.remove(hook) if hook in _hooks else None


def _start(phase: str) -> None:
    for hook in list(_hooks):
        hook(phase)


def extract(home: Path, config: HomeConfig, state: HeartbeatState, extra_paths: list[str]) -> PhaseResult:
    """Read the watched session folders (only what is new in each file), and say which commands await mining."""
    from ..sessions import SessionStore, import_paths

    _start("extract")
    watched = [(Path(w.path).expanduser(), w.format) for w in config.sessions.watch] + [
        (Path(p).expanduser(), "auto") for p in extra_paths
    ]
    imported: dict[str, int] = {"files": 0, "commands": 0, "skipped_lines": 0}
    errors: list[str] = []
    missing = [str(p) for p, _ in watched if not p.exists()]
    by_format: dict[str, list[Path]] = {}
    for path, fmt in watched:
        if path.exists():
            by_format.setdefault(fmt, []).append(path)
    for fmt, paths in by_format.items():
        summary = import_paths(paths, home=home, fmt=fmt)
        imported["files"] += summary.files
        imported["commands"] += summary.commands
        imported["skipped_lines"] += summary.skipped_lines
        errors += summary.errors
    with SessionStore(home=home) as sessions:
        newest = sessions.max_command_id()
    watermark = int(state.get(WATERMARK, 0))
    pending = max(0, newest - watermark)
    alerts = [f"watched path missing: {p}" for p in missing] + [f"import: {e}" for e in errors[:5]]
    summary_text = (
        f"{imported['commands']} new commands from {imported['files']} files; {pending} await mining"
        if watched
        else f"no watched session folders (set sessions.watch in {home / 'config.yaml'}); {pending} await mining"
    )
    return PhaseResult(
        "ok", summary_text, {**imported, "watermark": watermark, "new_watermark": newest, "pending": pending}, alerts
    )


def crystallise(home: Path, config: HomeConfig, extracted: dict[str, Any]) -> PhaseResult:
    """Mine the commands between the watermark and what extract saw:
    candidates, known procedures' claimed successes, learnings."""
    _start("crystallise")
    start, end = int(extracted["watermark"]), int(extracted["new_watermark"])
    if end <= start:
        return PhaseResult("ok", "nothing new to mine", {"commands": 0, "processed_through": end})
    result = mine_range(home, config, start, end)
    alerts = []
    if result.new_candidates:
        shown = ", ".join(result.procedure_ids[:5]) + (", ..." if len(result.procedure_ids) > 5 else "")
        alerts.append(
            f"{result.new_candidates} new candidate procedure(s) to review ({shown}): `sherpa-skills learn candidates`"
        )
    return PhaseResult(
        "ok",
        f"mined {result.commands} commands: {result.new_candidates} new candidates, "
        f"{result.updated_candidates} seen again, {result.known} known "
        f"procedures seen again, {result.learnings} failures learned",
        {**result.to_dict(), "new_candidate_ids": result.procedure_ids, "processed_through": end},
        alerts,
    )


def mine_range(home: Path, config: HomeConfig, start: int, end: int) -> MiningResult:
    """Mine the commands after `start` up to `end`, looking for routines in the last `mining.history` commands."""
    from ..sessions import SessionStore
    from ..skills.api import SkillStore

    m = config.mining
    with SessionStore(home=home) as sessions:
        new = [c for c in sessions.commands_since(start, limit=end - start) if c.id <= end]
        first = max(0, end - m.history)
        history = (
            new if first >= start else [c for c in sessions.commands_since(first, limit=end - first) if c.id <= end]
        )
    return SkillStore(home).mine(
        new,
        history=history,
        gap_secs=m.gap_secs,
        min_steps=m.min_steps,
        max_steps=m.max_steps,
        min_support=m.min_support,
    )


def health(home: Path, config: HomeConfig, state: HeartbeatState) -> PhaseResult:
    """Recompute the health of procedures with new executions (and new or promoted procedures); pull broken ones from
    replay. The report counts each status apart, `new` (never run since captured or promoted) included."""
    from ..skills.api import SkillStore

    _start("health")
    started = time.time()
    skills = SkillStore(home)
    # A promotion opens a fresh evidence window: its procedure is `new` again, whatever this phase last saw.
    ids, newest_execution = skills.changed_procedures(
        executions_after=int(state.get("executions_watermark", 0)),
        generation=state.get("procedures_generation"),
        promoted_since=float(state.get("health_at", 0)),
        checked=state.checked_procedures(),
    )
    counts: dict[str, int] = {}
    alerts: list[str] = []
    for pid in sorted(ids):
        try:
            report = skills.recheck(pid, window=config.heartbeat.health_window)
        except Exception:
            continue  # deleted since
        status = report.status
        if status == "broken":  # recheck pulled it from replay
            status = "needs-relearning"
            alerts.append(
                f"{pid} is broken (rolling success {report.rolling_success_rate}); "
                "pulled from replay and marked for re-learning"
                + (f": {report.failure_pattern}" if report.failure_pattern else "")
            )
        previous = state.previous_health(pid)
        if status == "degraded" and previous != "degraded":
            alerts.append(f"{pid} is newly degraded (rolling success {report.rolling_success_rate})")
        state.remember_health(pid, status, report.rolling_success_rate)
        counts[status] = counts.get(status, 0) + 1
    state.set("executions_watermark", newest_execution)
    state.set("health_at", started)
    state.set("procedures_generation", skills.generation())
    return PhaseResult(
        "ok",
        f"rechecked {len(ids)} procedures"
        + (f": {', '.join(f'{n} {status}' for status, n in sorted(counts.items()))}" if counts else ""),
        {"rechecked": len(ids), **counts},
        alerts,
    )


def maintenance(home: Path, config: HomeConfig, state: HeartbeatState) -> PhaseResult:
    """Bring the procedure index up to date with the truth, and drop old executions and finished runs."""
    from ..skills.api import SkillStore

    _start("maintenance")
    skills = SkillStore(home)
    alerts: list[str] = []
    stats: dict[str, Any] = {}
    now = time.time()
    try:
        done, held = skills.sync_index()
        stats[f"index_{done}"] = held
        if done == "rebuilt":
            alerts.append(f"the procedure index was missing; rebuilt it from the store ({held} procedures)")
    except Exception as exc:  # the truth is unaffected: matching embeds what it misses, a few at a time
        log.warning("procedure_index_sync_failed", reason=str(exc))
        alerts.append(f"the procedure index could not be updated ({exc}); matching finds what it lacks by key terms")
        stats["index_unavailable"] = True
    # Mined failures are embedded now rather than on the next plan; a missing collection is filled from the store.
    stats["learnings_indexed"] = skills.sync_failures()
    retention = config.retention
    stats["executions_deleted"] = skills.delete_executions_before(
        now - retention.executions_days * 86400, keep_per_procedure=retention.keep_executions_per_procedure
    )
    with skills:  # the run store it opens for this is closed after
        stats["runs_deleted"] = skills.delete_runs_before(now - retention.runs_days * 86400)
    state.set("maintained_at", now)
    failed = bool(stats.get("index_unavailable"))
    return PhaseResult(
        "failed" if failed else "ok",
        f"procedure index: {stats.get('index_updated', 0)} up to date, {stats.get('index_rebuilt', 0)} rebuilt; "
        f"retention: {stats['executions_deleted']} executions, {stats['runs_deleted']} runs deleted",
        stats,
        alerts,
    )


def memory(home: Path, config: HomeConfig, state: HeartbeatState) -> PhaseResult:
    """Apply decay to shared memory, count what hygiene merged and what waits (tensions, new observations), and surface
    domains' open proposals and domains whose agent has stopped running. SQLite only:
    a broken companion does not stop it."""
    from ..memory import MemoryStore
    from ..memory.domains import STALE_DAYS, Domains

    _start("memory")
    alerts: list[str] = []
    with MemoryStore(home=home) as store:
        decay = store.apply_decay()
        since = int(state.get("memory_seq", 0))
        observations = int(
            store.conn.execute(
                "SELECT COUNT(*) FROM memory_artifacts WHERE seq > ? AND abstraction = 'episode'"
                " AND superseded_by IS NULL",
                (since,),
            ).fetchone()[0]
        )
        stats = store.stats()
        state.set("memory_seq", store.last_seq())
    tensions = stats["open_tensions"]
    if tensions > MAX_OPEN_TENSIONS:
        alerts.append(
            f"{tensions} open memory tensions (over {MAX_OPEN_TENSIONS}); `sherpa-skills memory tensions` lists them"
        )
    if observations > MAX_PENDING_OBSERVATIONS:
        alerts.append(
            f"{observations} new observations since the last heartbeat (over {MAX_PENDING_OBSERVATIONS}); "
            f"consolidate the lasting ones into patterns or principles"
        )
    with Domains(home=home) as domains:
        listed = domains.list()
        proposals = domains.proposals()
    stale = [d["name"] for d in listed if d["stale"]]
    for p in proposals:
        alerts.append(
            f"domain {p['domain']}: proposal {p['id']} by {p['proposed_by']} to set {p['key']} = {p['value']!r}"
            f'; `sherpa-skills domains accept {p["id"]} --operator "$USER"`'
        )
    for name in stale:
        alerts.append(f"domain {name}: its agent has not run for over {STALE_DAYS:g} days")
    moved = ", ".join(f"{k} {v}" for k, v in sorted(decay["moved"].items())) or "none"
    tiers = decay["tiers"]
    return PhaseResult(
        "ok",
        f"decay: {tiers['hot']} hot, {tiers['warm']} warm, {tiers['cold']} cold (moved: {moved}); "
        f"{stats['duplicates_merged']} duplicate writes merged; {tensions} open tensions; "
        f"{observations} new observations; {len(proposals)} open proposals in {len(listed)} domains",
        {
            "tiers": tiers,
            "moved": decay["moved"],
            "duplicates_merged": stats["duplicates_merged"],
            "superseded": stats["superseded"],
            "open_tensions": tensions,
            "new_observations": observations,
            "pending_index": stats["pending"],
            "domains": len(listed),
            "stale_domains": stale,
            "open_proposals": len(proposals),
        },
        alerts,
    )
