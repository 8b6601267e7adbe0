"""The matcher's answer as data: each candidate it weighed and what it decided, with the floor and margin."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from .relevance import default_model
from .verifier import JudgeChoice

RELEVANCE_FLOOR = default_model().floor


MARGIN = default_model().margin


#: What a match decided; named apart from `policy.base.Decision`, the policy's choice of a trigger.
MatchOutcome = Literal["match", "needs-confirmation", "no-match"]


class MatchCandidate(BaseModel):
    """One procedure considered for a task, with its scores and, unless it was taken, why not."""

    procedure_id: str
    task_type: str
    version: int
    description: str = ""
    confidence: float
    score: float = Field(
        description="relevance in [0, 1] (the logistic model over the signals); compared with the floor"
    )
    semantic: float | None = Field(description="exact cosine between task and procedure, in [0, 1]")
    terms: float = Field(description="share of the task's key-term weight (IDF) the procedure covers, in [0, 1]")
    reverse: float = Field(
        default=0.0, description="share of the description's key-term weight the task covers, in [0, 1]"
    )
    features: dict[str, float] = Field(default_factory=dict, description="the relevance model's inputs")
    matched_terms: list[str] = Field(default_factory=list)
    literals_agreed: list[str] = Field(default_factory=list)
    literals_disagreed: list[str] = Field(default_factory=list)
    params: dict[str, str] = Field(default_factory=dict, description="parameter values taken from the task's literals")
    alias: float | None = Field(
        default=None, description="cosine between the task and the closest wording confirmed for it; None without any"
    )
    alias_id: str | None = Field(default=None, description="that confirmed wording (`learn aliases` lists it)")
    contrast: list[str] = Field(
        default_factory=list,
        description="a word the task says in place of its opposite in the description (said, described): never "
        "replayed directly, asked about",
    )
    health: str | None = None
    reason: str | None = Field(default=None, description="why it was not taken; None for the selected one")


class MatchDecision(BaseModel):
    """What `match(task)` decided: `match` (the procedure to replay, with filled parameters), `needs-confirmation`
    (plausible procedures in `offered`, for the judge at hand), or `no-match`; and why."""

    query: str
    task_type: str | None = None
    decision: MatchOutcome
    selected: MatchCandidate | None = None
    params: dict[str, str] = Field(default_factory=dict)
    candidates: list[MatchCandidate] = Field(default_factory=list, description="best first, the selected one included")
    offered: list[MatchCandidate] = Field(
        default_factory=list,
        description="with needs-confirmation: at most five candidates to choose from, best first, literal vetoes and "
        "remembered rejections applied, each replayable",
    )
    judged_by: str | None = Field(
        default=None, description="who confirmed a plausible candidate: 'model:NAME' when a model judge chose it"
    )
    reason: str | None = None
    floor: float = Field(
        default=RELEVANCE_FLOOR,
        description="the relevance a candidate needs to replay directly: the shipped floor, or the one this store's "
        "answered questions give (skills/match/floor.py)",
    )
    floor_reason: str | None = Field(default=None, description="what the floor rests on")
    margin: float = MARGIN
    min_confidence: float | None = None  # the caller's floor; None: the replay rule's own (skills/store/scoring.py)
    mode: Literal["semantic", "lexical"] = "semantic"
    degraded: str | None = None
    verification: JudgeChoice | None = Field(
        default=None,
        description="the model judge's answer about the offered candidates, with its calls and tokens; None when "
        "it was off or not asked",
    )

    @property
    def llm_calls(self) -> int:
        return self.verification.calls if self.verification else 0

    @property
    def tokens(self) -> int:
        return self.verification.tokens if self.verification else 0

    @property
    def procedure_id(self) -> str | None:
        return self.selected.procedure_id if self.selected else None
