"""The decision memory per workflow and state, as `learn decisions` and the view show it: examples, the calibrated
coverage, whether the bound holds, and why a state abstains (uncalibrated, too few examples, contradicting ones)."""

from __future__ import annotations

from typing import Any

from ..store.database import ProcedureDatabase
from .examples import answer_totals, calibration_after
from .head import Calibration
from .memory import scorer, settings

#: A state whose calibration points are wrong this often has examples that contradict each other.
_CONTRADICTING = 0.2


def state_summaries(
    store: ProcedureDatabase, workflow: str | None = None, bound: float | None = None
) -> list[dict[str, Any]]:
    """One row per (workflow, state) with examples, at bound `bound` (default: the settings')."""
    conf = settings()
    delta = float(conf["error_bound"]) if bound is None else bound
    where, params = ("WHERE workflow = ?", (workflow,)) if workflow else ("", ())
    rows = store.conn.execute(
        f"SELECT workflow, state, COUNT(*), COUNT(DISTINCT trigger || ' ' || args) FROM decision_examples {where}"
        " GROUP BY workflow, state ORDER BY workflow, state",
        params,
    ).fetchall()
    calibrations: dict[str, Calibration] = {}
    for name in {r[0] for r in rows}:
        calibration = Calibration(float(conf["calibration_window"]))
        found, errors, _ = calibration_after(store, name, scorer=scorer())
        for at, score, is_wrong in found + errors:
            calibration.add(at, score, is_wrong)
        calibrations[name] = calibration
    out = []
    for name, state, examples, decisions in rows:
        calibration = calibrations[name]
        points, wrong = calibration.count(delta, state), calibration.wrong(delta, state)
        threshold, whose = calibration.threshold(state, delta, int(conf["state_points"]))
        mine = calibration.points(delta).get(state, [])
        answered = [w for s, w in mine if threshold is not None and s >= threshold]
        coverage = len(answered) / points if points else 0.0
        risk = calibration.risk(threshold, delta) if threshold is not None else None
        if decisions < 2:
            why = "too few: one decision was ever taken here (the 'same for every kind' rule may still answer)"
        elif examples < int(conf["least_neighbours"]):
            why = f"too few: {examples} example(s)"
        elif points and wrong / points > _CONTRADICTING:
            why = f"contradicting examples: {wrong} of {points} calibration points went otherwise than the head said"
        elif threshold is None:
            why = whose
        elif coverage == 0:
            why = f"no calibration point of this state scores at or above the threshold {threshold:.3f}"
        else:
            why = f"below the threshold {threshold:.3f} ({whose}) only"
        out.append(
            {
                "workflow": name,
                "state": state,
                "examples": examples,
                "decisions": decisions,
                "calibration_points": points,
                "wrong_points": wrong,
                "bound": delta,
                "threshold": None if threshold is None else round(threshold, 4),
                "threshold_of": whose if threshold is not None else None,
                "coverage": round(coverage, 3),
                "estimated_risk": None if risk is None else round(risk, 5),
                "bound_held": risk is not None and risk <= delta,
                "abstains": why,
            }
        )
    return out


def memory_savings(store: ProcedureDatabase, workflow: str | None = None) -> dict[str, Any]:
    """What the decision memory's answers saved, per workflow and in all (`learn stats`)."""
    per = answer_totals(store, workflow)
    return {
        "per_workflow": per,
        "llm_calls_saved": sum(r["llm_calls_saved"] or 0 for r in per),
        "tokens_saved": sum(r["tokens_saved"] or 0 for r in per),
    }


def with_memory_savings(store: ProcedureDatabase, totals: dict[str, Any]) -> dict[str, Any]:
    """What replays saved (`store.stats.stats`) and what the decision memory's answers saved — what the same
    decisions cost when the model took them — counted in the totals, under `decision_memory` by workflow."""
    memory = memory_savings(store)
    return {
        **totals,
        "tokens_saved": totals["tokens_saved"] + memory["tokens_saved"],
        "llm_calls_saved": totals["llm_calls_saved"] + memory["llm_calls_saved"],
        "decision_memory": memory,
    }
