"""The one mapping from the skill store's match decision to what `find_procedure` answers over MCP.

The contract: `dry-run` (sure: replay it, a dry run first), `needs-confirmation` (plausible: at most five
candidates, and the calling agent judges, through `confirm_procedure`), `no-match` (plan). The agent's answers are the
store's aliases and rejections, as `learn replay QUERY --procedure ID` / `--reject` record them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from ..skills.api import MatchCandidate, MatchDecision, SkillStore

MAX_CANDIDATES = 5


class Candidate(BaseModel):
    procedure_id: str
    description: str
    score: float = Field(description="how sure the matcher is that this procedure is the task, in [0, 1]")
    confidence: float = Field(description="the procedure's own track record, in [0, 1]; replayed at 0.8 and above")
    health: str | None
    parameters: list[str] = Field(description="the `{{ name }}` parameters it declares")
    params: dict[str, str] = Field(description="values read from the task's literals")
    reason: str | None = None


class FindAnswer(BaseModel):
    decision: Literal["dry-run", "needs-confirmation", "no-match"]
    procedure_id: str | None = None
    params: dict[str, str] = Field(default_factory=dict)
    candidates: list[Candidate] = Field(default_factory=list)
    reason: str | None = None
    degraded: str | None = None


def _candidate(skills: SkillStore, found: MatchCandidate) -> tuple[Candidate, str | None]:
    """The candidate as the agent sees it, and why it may not be replayed (None when it may)."""
    proc = skills.get(found.procedure_id)
    health = skills.health_of(proc.id)
    names = skills.parameters(proc)
    shown = Candidate(
        procedure_id=proc.id,
        description=proc.description or proc.task_type,
        score=round(found.score, 3),
        confidence=round(proc.confidence, 3),
        health=health.status,
        parameters=names,
        params=dict(found.params),
        reason=found.reason,
    )
    return shown, skills.replay_refusal(proc, health)


def find_answer(decision: MatchDecision, skills: SkillStore) -> FindAnswer:
    """Map the store's match decision to the tool's answer, word for word: `match` is `dry-run`, `needs-confirmation`
    offers the store's candidates (literal vetoes and remembered rejections already applied), else `no-match`."""
    common: dict[str, Any] = {"degraded": decision.degraded}
    if decision.decision == "match" and decision.selected is not None:
        chosen, _ = _candidate(skills, decision.selected)
        return FindAnswer(
            decision="dry-run",
            procedure_id=chosen.procedure_id,
            params=dict(decision.params),
            candidates=[chosen],
            reason="sure: replay it (a dry run first)",
            **common,
        )
    if decision.decision == "needs-confirmation" and decision.offered:
        offered = [_candidate(skills, found)[0] for found in decision.offered[:MAX_CANDIDATES]]
        return FindAnswer(
            decision="needs-confirmation",
            candidates=offered,
            reason="plausible but not sure: say which one is the task with confirm_procedure (null: none of these)",
            **common,
        )
    return FindAnswer(decision="no-match", reason=decision.reason or "nothing fits: plan it yourself", **common)
