"""What every policy sees and returns: options (available transitions) in, a decision out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..engine.belief import BeliefView
from ..engine.compiler import Edge


@dataclass(slots=True)
class Decision:
    """The chosen trigger with its arguments, and what choosing it cost."""

    trigger: str
    args: dict[str, Any] = field(default_factory=dict)
    decided_by: str = "policy"
    reason: str = ""
    llm_calls: int = 0
    tokens: int = 0
    cost: float = 0.0
    tokens_estimated: bool = False  # some answer came without usage; its tokens were counted locally
    rejected: list[dict[str, str]] = field(default_factory=list)  # answers refused before this one: text (cut) and why


@dataclass(slots=True)
class DecisionContext:
    """One decision's inputs: where the machine is, what it may do, what it remembers."""

    machine: str
    state: str
    state_description: str
    options: list[Edge]
    view: BeliefView
    base_dir: Any = None
    model: str | None = None
    #: Set by a policy that stepped aside because a replay left its recording (see Divergence), for the policies
    #: asked after it: the LLM's prompt says what was replayed and what diverged.
    divergence: dict[str, Any] | None = None

    def option(self, trigger: str) -> Edge | None:
        for edge in self.options:
            if edge.trigger == trigger:
                return edge
        return None

    def triggers(self) -> list[str]:
        return [e.trigger for e in self.options]


@runtime_checkable
class Policy(Protocol):
    """Picks the next transition; returns None when it has no opinion (a chain then asks the next one)."""

    def decide(self, ctx: DecisionContext) -> Decision | None: ...

    async def adecide(self, ctx: DecisionContext) -> Decision | None: ...


class NoPolicy:
    """For machines that only ever fast-forward or are driven by outside triggers."""

    def decide(self, ctx: DecisionContext) -> Decision | None:
        return None

    async def adecide(self, ctx: DecisionContext) -> Decision | None:
        return None


class ChainPolicy:
    """Asks each policy in turn (rules first, then the LLM); the first decision wins."""

    def __init__(self, *policies: Policy):
        self.policies = policies

    def decide(self, ctx: DecisionContext) -> Decision | None:
        for policy in self.policies:
            decision = policy.decide(ctx)
            if decision is not None:
                return decision
        return None

    async def adecide(self, ctx: DecisionContext) -> Decision | None:
        for policy in self.policies:
            decision = await policy.adecide(ctx)
            if decision is not None:
                return decision
        return None
