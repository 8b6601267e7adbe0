"""Replay policy: answers each decision from a proven trajectory, and steps aside (None) at the first divergence."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..engine.compiler import check_arguments
from ..engine.registry import Registry, default_registry, observe_features
from .base import Decision, DecisionContext

#: Who decided, in a trajectory, for the decisions a replay counts as its own position (fast-forwards and the start are not decisions).
POLICY_DECIDERS = ("rule", "llm", "replay", "policy")
_PARAM = re.compile(r"\{\{\s*(\w+)\s*\}\}")


class ActionOutcome(BaseModel):
    """What one action call did in the recorded run: what a replay expects to see again."""

    model_config = ConfigDict(extra="forbid")

    action: str
    status: str = "ok"
    exit_code: int | None = None


class RecordedCheck(BaseModel):
    """The features an action's declared check observed when the recorded run called it: a replay expects them again."""

    model_config = ConfigDict(extra="forbid")

    action: str
    features: Any = None


class RecordedDecision(BaseModel):
    """One decision of a successful run: where, which trigger, its arguments ({{ input }} where they came from the inputs),
    who took it then, and the action outcomes observed before it (checked before it is replayed)."""

    model_config = ConfigDict(extra="forbid")

    state: str
    trigger: str
    args: dict[str, Any] = Field(default_factory=dict)
    decided_by: str = "llm"
    outcomes_before: list[ActionOutcome] = Field(default_factory=list)
    #: Checks of the actions this decision led to (up to the next one): called before it is followed again.
    checks: list[RecordedCheck] = Field(default_factory=list)


def fill(value: Any, inputs: dict[str, Any]) -> Any:
    """A recorded argument with its {{ input }} parameters filled from this run's inputs; a whole-value parameter keeps its type."""
    if isinstance(value, str):
        whole = _PARAM.fullmatch(value.strip())
        if whole and whole.group(1) in inputs:
            return inputs[whole.group(1)]
        return _PARAM.sub(lambda m: str(inputs.get(m.group(1), m.group(0))), value)
    if isinstance(value, dict):
        return {k: fill(v, inputs) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, inputs) for v in value]
    return value


def observed_outcomes(view: Any) -> list[tuple[str, str, int | None]]:
    """(action, status, exit code) of each action in a belief's log so far; policy entries are decisions, not actions.
    Plain tuples: this runs on every replayed decision, and must cost about what a rule's table lookup does."""
    found = []
    for entry in view.log:
        if entry.action.startswith(("policy:", "check:")):
            continue
        outputs = entry.outputs
        code = outputs.get("exit_code") if isinstance(outputs, dict) else None
        found.append((entry.action, entry.status, code if isinstance(code, int) else None))
    return found


def _as_tuple(outcome: ActionOutcome) -> tuple[str, str, int | None]:
    return outcome.action, outcome.status, outcome.exit_code


def _shown(outcome: tuple[str, str, int | None] | None) -> str:
    if outcome is None:
        return "no further action"
    action, status, code = outcome
    return f"{action}: {status}" + (f" (exit {code})" if code is not None else "")


def _features(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 200 else text[:197] + "..."


class ReplayPolicy:
    """Follows `decisions` in order while the world agrees with the recording; never calls a model.

    Its position is the number of policy decisions already in the trajectory, so it keeps no cursor of its own and a
    resumed run continues where it was. The first divergence is kept in `divergence` (for the LLM's prompt and the
    run's result) and from then on it answers nothing.
    """

    def __init__(self, decisions: list[RecordedDecision], *, inputs: dict[str, Any] | None = None, procedure_id: str = "",
                 version: int = 0, registry: Registry | None = None):
        self.decisions, self.inputs = decisions, dict(inputs or {})
        self.registry = registry or default_registry  # where the actions' checks are found
        # Checks not compared yet: a rule's decision is taken before the replay is asked, so its checks wait for the next one.
        self._has_checks = any(d.checks for d in decisions)
        self._checked = 0
        self._expected = [[_as_tuple(o) for o in d.outcomes_before] for d in decisions]
        self.procedure_id, self.version = procedure_id, version
        self.divergence: dict[str, Any] | None = None
        self.replayed = 0

    def _diverge(self, position: int, state: str, expected: str, observed: str) -> None:
        self.divergence = {"procedure": self.procedure_id, "version": self.version, "step": position, "state": state,
                           "replayed": position, "expected": expected, "observed": observed}

    def decide(self, ctx: DecisionContext) -> Decision | None:
        if self.divergence is not None:
            return None
        position = sum(1 for t in ctx.view.trajectory if t.decided_by in POLICY_DECIDERS)
        if position >= len(self.decisions):
            self._diverge(position, ctx.state, "the recorded run had ended", f"a decision asked in '{ctx.state}'")
            return None
        step = self.decisions[position]
        if step.state != ctx.state:
            self._diverge(position, ctx.state, f"state '{step.state}'", f"state '{ctx.state}'")
            return None
        if step.decided_by == "rule":
            # Rules are asked before the replay; being asked here means the rule that decided then no longer does.
            self._diverge(position, ctx.state, f"a rule choosing '{step.trigger}'", "no rule decides")
            return None
        observed = observed_outcomes(ctx.view)
        expected = self._expected[position]
        if observed != expected:
            first = next((i for i, (a, b) in enumerate(zip(expected, observed)) if a != b), min(len(expected), len(observed)))
            self._diverge(position, ctx.state, f"action outcome {_shown(expected[first] if first < len(expected) else None)}",
                          _shown(observed[first] if first < len(observed) else None))
            return None
        edge = ctx.option(step.trigger)
        if edge is None:
            self._diverge(position, ctx.state, f"trigger '{step.trigger}' available",
                          f"available: {', '.join(ctx.triggers()) or 'none'} (its guards do not pass)")
            return None
        if self._has_checks and self._checked <= position:
            due = [c for d in self.decisions[self._checked:position + 1] for c in d.checks]
            if due and not self._checks_hold(position, ctx, due):
                return None
            self._checked = position + 1
        if not step.args and not edge.arguments:
            self.replayed += 1  # nothing to validate: the common case, kept as cheap as a rule's
            return Decision(step.trigger, {}, decided_by="replay", reason="replayed")
        try:
            args = check_arguments(edge, fill(step.args, self.inputs))
        except ValueError as exc:
            self._diverge(position, ctx.state, f"valid arguments for '{step.trigger}'", str(exc))
            return None
        self.replayed += 1
        return Decision(step.trigger, args, decided_by="replay", reason="replayed")

    def _checks_hold(self, position: int, ctx: DecisionContext, checks: list[RecordedCheck]) -> bool:
        """Whether each recorded check still observes what it did; a check recorded without features, or an action that no
        longer declares one, has nothing to compare and holds. A check that raises is a divergence, never a crash."""
        for recorded in checks:
            definition = self.registry.find_action(recorded.action)
            if recorded.features is None or definition is None or definition.check is None:
                continue
            try:
                observed = observe_features(definition, ctx.view)
            except Exception as exc:  # a user's function
                self._diverge(position, ctx.state, f"check '{recorded.action}' observing {_features(recorded.features)}",
                              f"check '{recorded.action}' failed: {type(exc).__name__}: {exc}")
                return False
            if observed != recorded.features:
                self._diverge(position, ctx.state, f"check '{recorded.action}' observing {_features(recorded.features)}",
                              f"check changed: '{recorded.action}' observes {_features(observed)}")
                return False
        return True

    def finish(self, state: str, decided: int | None = None) -> None:
        """At the run's end: a run that reached its final state before the recording's last decision took another path.
        `decided` is how many policy decisions the run took: rules decide theirs before the replay is asked."""
        position = self.replayed if decided is None else decided
        if self.divergence is None and position < len(self.decisions):
            step = self.decisions[position]
            self._diverge(position, state, f"a decision in '{step.state}' ({step.trigger})", f"the run ended in '{state}'")

    async def adecide(self, ctx: DecisionContext) -> Decision | None:
        return self.decide(ctx)
