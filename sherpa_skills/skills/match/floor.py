"""The relevance floor a scope's tasks replay from: the shipped one, until a person's answers in this store show
another holds the bound.

The shipped floor (`relevance.json`) was fitted on the NL2Bash dev split. A store's own procedures may stand further
apart (everyday routines) or closer (near twins), and every question answered says which: the best candidate's
relevance when the question was put, and whether the answer said it was the one (a rejection of it, or a
confirmation of another of the offered, says it was wrong: `store.answers.Asked`). From those points:

- **lower**: the floor becomes the lowest relevance τ at which, among the points scoring from τ up to the shipped
  floor, (wrong + 1) / (points + 1) ≤ the bound (`relevance.json`'s `bound`, 0.02): of the tasks a lower floor would
  add to the direct replays, at most that share were wrong by a person's word (the decision memory's estimate,
  `decide.head`, over what the change adds; sure answers above the shipped floor would dilute wrong ones below it).
  So it needs at least 1 / bound − 1 points in that band (49 at 0.02) before it lowers anything;
- **raise**: when at least RAISE_AFTER points scoring at or above the shipped floor say the best was wrong and the
  same estimate fails there, the shipped floor did not hold in this store: the floor lies just above the highest
  wrong point. Replays a person executed that held (`AskedPoint.held`: chosen by relevance, run, validated) count
  there as right points: three objections among a thousand replays that held are the bound holding, not failing.
  They never lower the floor: below the shipped floor they would be a lowered floor's own replays vouching for it.

Only a person's answers move the floor (the CLI, Python): the replay rule's evidence (docs/concepts/learning.md). An
agent's answers (MCP, `agent:NAME`) and a model judge's (`model:NAME`) are claims, shown and never counted: no agent
makes more tasks replay unasked, nor fewer. Each scope (the task type a match is limited to, '' for none) is
calibrated on its own points only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from ..store.answers import AskedPoint, by_person

#: Wrong points at or above the shipped floor before it is said not to hold in this store.
RAISE_AFTER = 3
#: Above the highest wrong point, when no relevance holds the bound.
_ABOVE = 1e-4


@dataclass(frozen=True)
class Floor:
    """A scope's relevance floor and what it rests on."""

    value: float
    basis: Literal["shipped", "calibrated"]
    reason: str
    counted: int = 0  # a person's answered questions
    wrong: int = 0  # of which said the best candidate was wrong
    claims: int = 0  # answers by agents or model judges: shown, not counted
    held: int = 0  # replays a person executed that held: count against raising it only


def calibrated_floor(points: list[AskedPoint], shipped: float, bound: float, scope: str = "") -> Floor:
    """The floor one scope's answered questions give at `bound` (see the module's docstring)."""
    everyone = [p for p in points if by_person(p.by)]
    held = [p for p in everyone if p.held]
    counted = [p for p in everyone if not p.held]
    claims = sum(not p.held for p in points) - len(counted)
    wrong = sum(p.wrong for p in counted)
    told = f"{len(counted)} question(s) a person answered in scope {scope or '(none)'!r}, {wrong} saying it was wrong"
    if held:
        told += f"; {len(held)} replay(s) a person executed held"
    if claims:
        told += f"; {claims} answer(s) by agents or model judges not counted (claims)"

    def holds(above: list[AskedPoint]) -> bool:
        return (sum(p.wrong for p in above) + 1) / (len(above) + 1) <= bound

    holding, seen, wrong_seen = [], 0, 0
    # Below the shipped floor only: what a lower floor adds. Sure answers above it would dilute wrong ones below.
    ranked = sorted((p for p in counted if p.score < shipped), key=lambda p: -p.score)
    for i, p in enumerate(ranked):  # from the highest score down: the points at or above each score, counted once
        seen, wrong_seen = seen + 1, wrong_seen + p.wrong
        if (i + 1 == len(ranked) or ranked[i + 1].score < p.score) and (wrong_seen + 1) / (seen + 1) <= bound:
            holding.append(p.score)
    at_shipped = [p for p in everyone if p.score >= shipped]
    if sum(p.wrong for p in at_shipped) >= RAISE_AFTER and not holds(at_shipped):
        tau = min(1.0, max(p.score for p in at_shipped if p.wrong) + _ABOVE)
        why = f"calibrated on {told}: the shipped {shipped:g} did not hold here; raised to {tau:.4g} (bound {bound:g})"
        return Floor(round(tau, 4), "calibrated", why, len(counted), wrong, claims, len(held))
    if holding and min(holding) < shipped:
        tau = min(holding)
        why = f"calibrated on {told}: lowers the shipped {shipped:g} to {tau:.4g} (bound {bound:g})"
        return Floor(round(tau, 4), "calibrated", why, len(counted), wrong, claims, len(held))
    need = int(round(1 / bound)) - 1
    why = (
        f"shipped floor: {told}; a lower floor needs at least {need} answers scoring at or above it, at most "
        f"{bound:.0%} of them wrong"
    )
    return Floor(shipped, "shipped", why, len(counted), wrong, claims, len(held))


class MatchFloor(BaseModel):
    """A scope's floor as `learn floor` and `SkillStore.match_floors` report it."""

    scope: str  # the task type matches were limited to; '' for unscoped ones (the CLI, Python, MCP)
    floor: float
    basis: Literal["shipped", "calibrated"]
    counted: int
    wrong: int
    claims: int
    held: int
    reason: str

    @classmethod
    def of(cls, scope: str, floor: Floor) -> MatchFloor:
        return cls(
            scope=scope,
            floor=floor.value,
            basis=floor.basis,
            counted=floor.counted,
            wrong=floor.wrong,
            claims=floor.claims,
            held=floor.held,
            reason=floor.reason,
        )
