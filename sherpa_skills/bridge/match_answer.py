"""The one mapping from the skill store's match decision to what `find_procedure` answers over MCP.

The contract (issue 22): `dry-run` (sure: replay it, a dry run first), `needs-confirmation` (plausible: at most five
candidates, and the calling agent judges), `no-match` (plan). Until the store answers in those words itself, a
`match` is `dry-run`; a `no-match` whose candidates include plausible ones (in the verifier's band or ambiguous, no
literal disagreeing, replayable) is `needs-confirmation`; an earlier answer of the agent for the same task is honoured.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from ..skills.match.matcher import MatchCandidate, MatchDecision
from ..skills.match.verifier import VERIFY_FLOOR
from ..skills.store.database import ProcedureDatabase
from ..skills.store.params import PARAMETER
from ..skills.store.scoring import replay_refusal

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


def _candidate(store: ProcedureDatabase, found: MatchCandidate) -> tuple[Candidate, str | None]:
    """The candidate as the agent sees it, and why it may not be replayed (None when it may)."""
    proc = store.get(found.procedure_id)
    health = store.health(proc.id)
    names = list(dict.fromkeys(n for s in proc.steps for n in PARAMETER.findall(s.command)))
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
    return shown, replay_refusal(proc, health)


def find_answer(
    decision: MatchDecision,
    store: ProcedureDatabase,
    accepted: str | None = None,
    rejected: frozenset[str] = frozenset(),
) -> FindAnswer:
    """Map one match decision (plus the agent's earlier answers for this task) to dry-run / needs-confirmation /
    no-match."""
    common: dict[str, Any] = {"degraded": decision.degraded}
    if decision.decision == "match" and decision.procedure_id not in rejected and decision.selected is not None:
        chosen, _ = _candidate(store, decision.selected)
        return FindAnswer(
            decision="dry-run",
            procedure_id=chosen.procedure_id,
            params=dict(decision.params),
            candidates=[chosen],
            reason="sure: replay it (a dry run first)",
            **common,
        )
    plausible: list[Candidate] = []
    for found in decision.candidates:
        if found.procedure_id in rejected or found.literals_disagreed or found.semantic is None:
            continue
        if found.score < VERIFY_FLOOR and found.procedure_id != accepted:
            continue
        shown, refusal = _candidate(store, found)
        if refusal is None:
            plausible.append(shown)
    if accepted is not None and any(c.procedure_id == accepted for c in plausible):
        chosen = next(c for c in plausible if c.procedure_id == accepted)
        return FindAnswer(
            decision="dry-run",
            procedure_id=accepted,
            params=chosen.params,
            candidates=[chosen],
            reason="you confirmed this procedure for this task before",
            **common,
        )
    if plausible:
        return FindAnswer(
            decision="needs-confirmation",
            candidates=plausible[:MAX_CANDIDATES],
            reason="plausible but not sure: say which one is the task with confirm_procedure (null: none of these)",
            **common,
        )
    return FindAnswer(decision="no-match", reason=decision.reason or "nothing fits: plan it yourself", **common)
