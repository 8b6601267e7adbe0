"""The relevance floor a scope's tasks replay from: the shipped one, until this store's own answers say otherwise.

The shipped floor (`relevance.json`) was fitted on the NL2Bash dev split. A store's own procedures may stand further
apart (everyday routines) or closer (near twins), and every question a judge answered says which: the best
candidate's relevance when the question was put, and whether the answer said it was the one (`store.answers.Asked`).
Those points calibrate the floor by the decision memory's rule (`decide.head.Calibration`, split conformal risk
control): the floor is the lowest relevance τ at which (wrong points scoring ≥ τ + 1) / (points + 1) ≤ the bound, so
of the tasks that reach a question, at most that share would be replayed wrongly were τ the floor. It may lower the
shipped floor (fewer questions) or raise it (a store whose near twins fooled the shipped one).

Whose answers count follows the replay rule's evidence (docs/concepts/learning.md): a person's confirmation is
evidence; an agent's (MCP, `agent:NAME`) or a model judge's (`model:NAME`) is a claim, shown and never counted, so no
agent can make more tasks replay unasked. Every rejection counts, whoever gave it, and so does a confirmation of
another candidate than the best (the best was wrong): an agent can make the store ask more, never replay more. Each
scope (the task type a match is limited to, '' for none) is calibrated on its own points only. With fewer points
than the bound needs (1 / bound), the shipped floor holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..decide.head import Calibration
from ..store.answers import AskedPoint, by_person

#: Above every wrong point: what the floor becomes when no relevance holds the bound.
_ABOVE = 1e-4


@dataclass(frozen=True)
class Floor:
    """A scope's relevance floor and what it rests on."""

    value: float
    basis: Literal["shipped", "calibrated"]
    reason: str
    counted: int = 0  # answered questions counted (a person's confirmations, anyone's rejections)
    wrong: int = 0  # of which said the best candidate was wrong
    claims: int = 0  # confirmations by agents or model judges: shown, not counted


def calibrated_floor(points: list[AskedPoint], shipped: float, bound: float, scope: str = "") -> Floor:
    """The floor `points` (one scope's answered questions) give at `bound`; the shipped one while they are too few."""
    counted = [p for p in points if p.wrong or by_person(p.by)]
    claims = len(points) - len(counted)
    wrong = sum(p.wrong for p in counted)
    told = f"{len(counted)} answered question(s) in scope {scope or '(none)'!r}, {wrong} saying the best was wrong"
    if claims:
        told += f"; {claims} confirmation(s) by agents or model judges not counted (claims)"
    need = int(round(1 / bound))
    if len(counted) + 1 < need:
        why = f"shipped floor: {told}; the bound {bound:g} needs at least {need - 1} before the store's own floor"
        return Floor(shipped, "shipped", why, len(counted), wrong, claims)
    calibration = Calibration()
    for p in counted:
        calibration.add(scope, p.score, p.wrong)
    tau, _ = calibration.threshold(scope, bound, own_points=0)
    if tau is None:  # even the best-scored points are wrong too often: only above all of them
        tau = min(1.0, max(p.score for p in counted if p.wrong) + _ABOVE)
    direction = "lowers" if tau < shipped else "raises" if tau > shipped else "keeps"
    why = f"calibrated on {told}: {direction} the shipped {shipped:g} to {tau:.4g} at bound {bound:g}"
    return Floor(round(tau, 4), "calibrated", why, len(counted), wrong, claims)
