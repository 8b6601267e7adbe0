"""Where a run hook's advice goes in a policy: after what asks no model (rules), before what does (the LLM)."""

from __future__ import annotations

from collections.abc import Sequence

from .base import ChainPolicy, Policy
from .llm import LLMPolicy
from .rule import RulePolicy


def with_advisors(policy: Policy, advisors: Sequence[Policy]) -> Policy:
    """`policy` with `advisors` asked after its rules and before its LLM (last, when it has none). The advisors see the
    same decision context as the LLM after them, so what they note on it (a replay's divergence) reaches the prompt."""
    if not advisors:
        return policy
    members = list(policy.policies) if isinstance(policy, ChainPolicy) else [policy]
    # A rule table with no rules (`rules: []`) never decides: asking it on every advised decision only costs time.
    members = [p for p in members if not (isinstance(p, RulePolicy) and not p.triggers)]
    at = next((i for i, p in enumerate(members) if isinstance(p, LLMPolicy)), len(members))
    return ChainPolicy(*members[:at], *advisors, *members[at:])
