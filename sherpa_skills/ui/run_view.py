"""A run's page and its step view, from the run's own record: the machine it executed (kept with it, not the file as it
is now), the state after any step on a timeline with each state's duration, and what changed in its files since."""

from __future__ import annotations

import difflib
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..engine.run_json import run_summary
from ..errors import StoreError
from .failure import failed_actions, failure
from .views import LIVE, TAIL, Stores, child_runs, machine_of, parent_run, waiting_options

MAX_DIFF_LINES = 400


def _machine_view(
    stores: Stores, record: dict[str, Any] | None, visited: list[str], current: str, failed: bool
) -> str | None:
    from .diagram import highlight

    if record is None:
        return None
    return highlight(record["mermaid"], record["leaves"], visited, current, failed=failed)


def _file_notes(record: dict[str, Any], workflow_path: str | None, ran: str | None) -> list[dict[str, Any]]:
    """Each file the run loaded, with how it stands now and, when it changed, the diff from what ran to what is.

    A machine is kept once per spec hash, with the files of the first run that executed it: a run of another file
    with the same machine is judged by its own file (is its machine still `ran`?), not by that first file's."""
    from ..engine.run.identity import spec_hash
    from ..engine.run_record import file_changes

    kept = record.get("files", [])
    first = next((f for f in kept if f["role"] == "workflow"), None)
    if first is not None and workflow_path and first["path"] != workflow_path:
        old, new = Path(first["path"]).parent, Path(workflow_path).parent
        rebased = []
        for f in kept:
            path = Path(f["path"])
            if f is first:
                path = Path(workflow_path)
            elif path.is_relative_to(old):
                path = new / path.relative_to(old)
            rebased.append({**f, "path": str(path)})
        record = {**record, "files": rebased}
    notes = []
    for f in file_changes(record):
        if f["role"] == "workflow" and f["status"] == "changed" and first is not None and f["path"] != first["path"]:
            machine = machine_of(f["path"])
            if machine is not None and spec_hash(machine) == ran:
                f = {**f, "status": "unchanged"}  # another file's text, the same machine: nothing this run ran changed
        diff = None
        if f["status"] == "changed" and f.get("text") is not None:
            lines = difflib.unified_diff(
                f["text"].splitlines(), f["now"].splitlines(), "as it ran", "as it is now", lineterm="", n=1
            )
            diff = "\n".join(list(lines)[:MAX_DIFF_LINES])
        notes.append(
            {"role": f["role"], "path": f["path"], "status": f["status"], "diff": diff, "problem": f.get("problem")}
        )
    return notes


def segments(stores: Stores, run_id: str, last_tick: int) -> list[dict[str, Any]]:
    """The machines the run ran under, each with the steps it covers."""
    kept = stores.runs.machines(run_id)
    out = []
    for i, (from_tick, spec_hash) in enumerate(kept):
        to_tick = kept[i + 1][0] - 1 if i + 1 < len(kept) else last_tick
        out.append({"spec_hash": spec_hash, "from_tick": from_tick, "to_tick": to_tick})
    return out


def machine_for_step(segs: list[dict[str, Any]], tick: int) -> dict[str, Any] | None:
    """The machine step `tick` ran under: the latest that started at or before it."""
    chosen = None
    for s in segs:
        if s["from_tick"] <= tick or chosen is None:
            chosen = s
    return chosen


def timeline(stores: Stores, run_id: str, row: Any) -> list[dict[str, Any]]:
    """Every step: the state it entered and how long the run stayed there (until the next step, or until now /
    the run's last update for the state it is in)."""
    steps = stores.runs.steps(run_id)
    end = time.time() if row.status in LIVE else row.updated
    out = []
    for i, (tick, state, trigger, decided_by, at) in enumerate(steps):
        until = steps[i + 1][4] if i + 1 < len(steps) else end
        out.append(
            {
                "tick": tick,
                "state": state,
                "trigger": trigger,
                "decided_by": decided_by,
                "at": at,
                "duration_s": max(0.0, until - at),
            }
        )
    return out


def provenance(stores: Stores, run_id: str) -> dict[str, Any]:
    """Where a run came from and what came of it: the run it was forked from, the run (and step) whose `run_machine`
    started it, its forks and the runs it started."""
    parent = stores.runs.forked_from(run_id)
    starter = parent_run(stores, run_id)
    return {
        # Found in the parent's own log, so it exists while the link does.
        "started_by": {"run_id": starter[0], "tick": starter[1]} if starter else None,
        "forked_from": {"run_id": parent[0], "tick": parent[1], "exists": stores.runs.has_run(parent[0])}
        if parent
        else None,
        "forks": [{"run_id": r, "tick": t} for r, t in stores.runs.forks(run_id)],
        "children": child_runs(stores, [run_id]).get(run_id, []),
    }


def learning_view(row: Any) -> dict[str, Any] | None:
    """What a learning run's learning did, from the state it keeps with the run: the procedure it followed, the
    judge's answer, where the decision memory took a decision and where it asked the LLM (each such decision is an
    example once the run succeeds), and where a replay diverged."""
    saved = (row.hooks or {}).get("learning")
    if not isinstance(saved, dict):
        return None
    asked = saved.get("asked") or {}
    return {
        "procedure": saved.get("procedure"),
        "version": saved.get("version"),
        "confirmation": saved.get("confirmation"),
        "divergence": saved.get("divergence"),
        "replayed": row.counters.get("replayed_decisions", 0),
        "memory_took": sorted(int(k) for k in (saved.get("taken") or {})),
        "asked": [
            {"decision": int(k), "state": v.get("state")} for k, v in sorted(asked.items(), key=lambda i: int(i[0]))
        ],
        "saved": len(asked) if row.status == "final" else 0,
    }


def replay_divergence(context: Any) -> dict[str, Any] | None:
    """Where and why a shell replay run diverged (skills/replay/divergence.py), kept in its context; its stderr tail
    was redacted when the divergence was made, and the run store redacts what it keeps again."""
    from ..skills.api import SkillStore

    divergence = context.get("divergence") if hasattr(context, "get") else None
    if not isinstance(divergence, Mapping) or not divergence.get("reason"):
        return None
    shown, reason, quoted = (
        dict(divergence),
        str(divergence["reason"]),
        SkillStore.why_diverged("", divergence.get("stderr_tail")),
    )
    # The reason ends with the tail's last line: the page shows the tail under it, so the line is said once.
    shown["said"] = reason[: -len(quoted)] if quoted and reason.endswith(quoted) else reason
    return shown


def run_page(stores: Stores, run_id: str, tail: int | None = TAIL) -> dict[str, Any]:
    """One run for the page: its row, the last `tail` trajectory and log entries (None: all), the machine it executed
    with its path marked, each step on a timeline, and what changed in its files since."""
    from ..engine.run.identity import spec_hash

    row = stores.runs.get_run(run_id)
    belief = stores.runs.load_belief(row.run_id, tail)
    visited = stores.runs.visited_states(row.run_id)
    in_flight = [
        {"action": i.action, "tick": i.tick, "started": i.started} for i in stores.runs.interrupted(row.run_id)
    ]
    run = {**run_summary(row), "workflow_path": row.workflow_path, "inputs": row.inputs, **row.counters}
    segs = segments(stores, row.run_id, row.tick)
    latest = segs[-1] if segs else None
    record = stores.runs.machine_record(latest["spec_hash"]) if latest else None
    failed_at = failure(stores, row, record)
    # A step that failed before it committed was a transition out of where the run rests: its destination failed.
    shown, failed = row.state, row.status == "error"
    if failed_at is not None and not failed_at["committed"]:
        shown, failed = (failed_at["state"], True) if failed_at["state"] else (row.state, False)
    view: dict[str, Any] = {
        "failure": failed_at,
        "run": run,
        "live": row.status in LIVE,
        "updated": row.updated,
        "tick": row.tick,
        "in_flight": in_flight,
        "trajectory": belief.trajectory,
        "log": belief.log,
        "context": belief.context,
        "total_trajectory": len(visited),
        "total_log": stores.runs.log_size(row.run_id),
        "tail": tail,
        "diagram": None,
        "diagram_problem": None,
        "diagram_source": "record" if record else None,
        "files": _file_notes(record, row.workflow_path, latest["spec_hash"] if latest else None) if record else [],
        "machines": segs,
        "timeline": timeline(stores, row.run_id, row),
        "learning": learning_view(row),
        "divergence": replay_divergence(belief.context),
        "waiting": None,
        **provenance(stores, row.run_id),
    }
    current = machine_of(row.workflow_path)
    if record is not None:
        view["diagram"] = _machine_view(stores, record, visited, shown, failed)
    elif current is not None:
        # Recorded before runs kept their machine: the file as it is now is all there is, and the page says so.
        from .diagram import highlighted_mermaid

        view["diagram"] = highlighted_mermaid(current, visited, shown, failed=failed)
        view["diagram_source"] = "file"
    else:
        view["diagram_problem"] = (
            f"the workflow file {row.workflow_path} cannot be loaded any more"
            if row.workflow_path
            else "this run was not started from a workflow file"
        )
    if row.status == "waiting":
        unchanged = current is not None and (latest is None or spec_hash(current) == latest["spec_hash"])
        if unchanged:
            # Guards may read the whole trajectory: they are asked with the whole belief, not the page's tail.
            view["waiting"] = waiting_options(
                current, row.state, belief if tail is None else stores.runs.load_belief(row.run_id)
            )
        elif record is not None:
            view["waiting"] = {
                "triggers": [{**t, "ready": None, "arguments": {}} for t in record["transitions"].get(row.state, [])],
                "inputs": {},
                "changed": True,
            }
    return view


def step_page(stores: Stores, run_id: str, tick: int) -> dict[str, Any]:
    """The run as it was once step `tick` was committed: its state and context, the actions of that step with what
    each saw and returned, drawn with the machine that step ran under. A failed run's step that never committed (its
    transition's actions failed) has a page too: the actions it ran, the failing one, and where the run rests."""
    row = stores.runs.get_run(run_id)
    steps = timeline(stores, row.run_id, row)
    ticks = [s["tick"] for s in steps]
    segs = segments(stores, row.run_id, row.tick)
    seg = machine_for_step(segs, tick)
    record = stores.runs.machine_record(seg["spec_hash"]) if seg else None
    failed_at = failure(stores, row, record)
    uncommitted = failed_at is not None and not failed_at["committed"] and tick == failed_at["tick"]
    if tick not in ticks and not uncommitted:
        raise StoreError(
            f"run {row.run_id} has no step {tick}; its steps are 0 to {ticks[-1] if ticks else 0}"
            if ticks
            else f"run {row.run_id} has no steps yet"
        )
    if uncommitted:
        assert failed_at is not None
        actions = failed_actions(stores, row.run_id, tick)
        belief = stores.runs.belief_at(row.run_id, ticks[-1] if ticks else 0)
        step = {
            "tick": tick,
            "state": failed_at["state"] or f"a state out of {row.state}",
            "trigger": failed_at.get("trigger"),
            "decided_by": None,
            "at": actions[0]["started"] if actions else row.updated,
            "duration_s": max(0.0, row.updated - (actions[0]["started"] if actions else row.updated)),
        }
        visited = [t.state for t in belief.trajectory]
        shown, failed = (failed_at["state"], True) if failed_at["state"] else (row.state, False)
        index = len(ticks)
        last = True
    else:
        belief = stores.runs.belief_at(row.run_id, tick)
        step = steps[ticks.index(tick)]
        actions = [e.model_dump(mode="json") for e in belief.log if e.tick == tick]
        visited = [t.state for t in belief.trajectory]
        index = ticks.index(tick)
        last = tick == ticks[-1] and not (failed_at is not None and not failed_at["committed"])
        shown, failed = step["state"], last and row.status == "error"
    diagram = _machine_view(stores, record, visited, shown, failed)
    diagram_source = "record" if record else None
    if diagram is None:
        current = machine_of(row.workflow_path)
        if current is not None:
            from .diagram import highlighted_mermaid

            diagram = highlighted_mermaid(current, visited, shown, failed=failed)
            diagram_source = "file"
    after = ticks[index + 1] if index + 1 < len(ticks) else None
    if after is None and not uncommitted and failed_at is not None and not failed_at["committed"]:
        after = failed_at["tick"]  # the failed step follows the last committed one
    return {
        "run": {**run_summary(row), "workflow_path": row.workflow_path},
        "step": step,
        "previous": ticks[index - 1] if index > 0 else None,
        "next": after,
        "timeline": steps,
        "context": belief.context,
        "actions": actions,
        "trajectory": [t.model_dump(mode="json") for t in belief.trajectory[-20:]],
        "diagram": diagram,
        "diagram_source": diagram_source,
        "machine": seg,
        "machines": segs,
        "last": last,
        "failure": failed_at,
        "uncommitted": uncommitted,
    }
