"""Where a failed run failed: the step, the action and the state, from its log rather than from where it rests.

A run whose entry action fails during a transition rests in the state it was leaving (the step never committed), while
its failing log rows carry the new step's tick: painting the resting state as failed, or linking that tick to a step
that does not exist, would both be false.
"""

from __future__ import annotations

import json
from typing import Any


def failed_actions(stores: Any, run_id: str, tick: int) -> list[dict[str, Any]]:
    """The log rows of step `tick`, as the step page shows them (what each saw and returned)."""
    rows = stores.runs.conn.execute(
        "SELECT action, status, duration_ms, inputs, outputs, error, started FROM run_log"
        " WHERE run_id = ? AND tick = ? ORDER BY id",
        (run_id, tick),
    ).fetchall()

    def loads(text: str | None) -> Any:
        try:
            return json.loads(text) if text is not None else None
        except ValueError:
            return text

    return [
        {
            "tick": tick,
            "action": a,
            "status": s,
            "duration_ms": d,
            "inputs": loads(i),
            "outputs": loads(o),
            "error": e,
            "started": at,
        }
        for a, s, d, i, o, e, at in rows
    ]


def failure(stores: Any, row: Any, record: dict[str, Any] | None) -> dict[str, Any] | None:
    """For a run in error: the step it failed in, the failing action, and whether that step committed. An uncommitted
    step was a transition out of the state the run rests in; its destination is named when the machine it ran under
    has one transition out of that state (the trigger tried is not kept), else the candidates are listed."""
    if row.status != "error":
        return None
    found = stores.runs.conn.execute(
        "SELECT tick, action, error FROM run_log WHERE run_id = ? AND status = 'error' ORDER BY id DESC LIMIT 1",
        (row.run_id,),
    ).fetchone()
    if found is None:
        # Failed without a failing action (a guard, a policy): where it rests is where it failed.
        return {"tick": None, "committed": True, "state": row.state, "action": None, "error": row.error}
    tick, action, error = found
    # The run's own tick counter has already moved on to the failed step: the trajectory says what committed.
    (last,) = stores.runs.conn.execute(
        "SELECT MAX(tick) FROM run_trajectory WHERE run_id = ?", (row.run_id,)
    ).fetchone()
    if last is None or tick <= last:
        return {"tick": tick, "committed": True, "state": row.state, "action": action, "error": error}
    out = (record or {}).get("transitions", {}).get(row.state, [])
    dests = list(dict.fromkeys(t["dest"] for t in out))
    return {
        "tick": tick,
        "committed": False,
        "source": row.state,
        "state": dests[0] if len(dests) == 1 else None,
        "trigger": out[0]["trigger"] if len(dests) == 1 and len(out) == 1 else None,
        "candidates": dests,
        "action": action,
        "error": error,
    }
