"""Replay policy: answers each decision from a proven trajectory, and steps aside (None) at the first divergence."""

from __future__ import annotations

import json
from typing import Any
from weakref import WeakKeyDictionary

from ...engine.compiler import check_arguments
from ...engine.registry import Registry, default_registry, observe_features
from ...policy.base import Decision, DecisionContext
from ..store.models import POLICY_DECIDERS, ActionOutcome, RecordedCheck, RecordedDecision
from ..store.params import PARAMETER
from .divergence import Divergence

_DECIDERS = frozenset(POLICY_DECIDERS)
#: Literal recorded arguments already validated against a transition's argument model, by model (a workflow loaded
#: again, or edited, compiles new models, so they are checked again): later runs of the same procedure skip pydantic.
_VALIDATED: WeakKeyDictionary[type, dict[str, dict[str, Any]]] = WeakKeyDictionary()


def fill(value: Any, inputs: dict[str, Any]) -> Any:
    """A recorded argument with its {{ input }} parameters filled from this run's inputs;
    a whole-value parameter keeps its type."""
    if isinstance(value, str):
        whole = PARAMETER.fullmatch(value.strip())
        if whole and whole.group(1) in inputs:
            return inputs[whole.group(1)]
        return PARAMETER.sub(lambda m: str(inputs.get(m.group(1), m.group(0))), value)
    if isinstance(value, dict):
        return {k: fill(v, inputs) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, inputs) for v in value]
    return value


def _collect(entries: Any, found: list[tuple[str, str, int | None]]) -> None:
    # Plain tuples: a replay reads each new log entry once, and must cost about what a rule's table lookup does.
    for entry in entries:
        action = entry.action
        if not action.startswith(("policy:", "check:")):  # decisions and checks are not actions
            outputs = entry.outputs
            code = outputs.get("exit_code") if isinstance(outputs, dict) else None
            found.append((action, entry.status, code if isinstance(code, int) else None))


def _templated(value: Any) -> bool:
    """Whether a recorded argument holds a {{ parameter }}: filled per run, so validated per run."""
    if isinstance(value, str):
        return PARAMETER.search(value) is not None
    if isinstance(value, dict):
        return any(_templated(v) for v in value.values())
    if isinstance(value, list):
        return any(_templated(v) for v in value)
    return False


def _as_tuple(outcome: ActionOutcome) -> tuple[str, str, int | None]:
    return outcome.action, outcome.status, outcome.exit_code


def _expected_outcomes(decisions: list[RecordedDecision]) -> tuple[list[tuple[str, str, int | None]], list[int]]:
    """Every outcome the recorded run observed, in order, and for each decision how many of them came before it."""
    expected: list[tuple[str, str, int | None]] = []
    ends: list[int] = []
    for d in decisions:
        if d.outcomes_before:  # stored before outcomes were kept per decision: all so far, of which the last's a prefix
            expected[:] = [_as_tuple(o) for o in d.outcomes_before]
        else:
            expected.extend(_as_tuple(o) for o in d.outcomes)
        ends.append(len(expected))
    return expected, ends


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

    Its position is the number of policy decisions already in the trajectory (counted as the belief grows, each entry
    read once), so a resumed run continues where it was. The first divergence is kept in `divergence` (for the LLM's
    prompt and the run's result) and from then on it answers nothing.
    """

    def __init__(
        self,
        decisions: list[RecordedDecision],
        *,
        inputs: dict[str, Any] | None = None,
        procedure_id: str = "",
        version: int = 0,
        registry: Registry | None = None,
        divergence: dict[str, Any] | None = None,
    ):
        self.decisions, self.inputs = decisions, dict(inputs or {})
        self.registry = registry or default_registry  # where the actions' checks are found
        # Checks not compared yet: a rule's decision is taken before the replay is asked,
        # so its checks wait for the next one.
        self._has_checks = any(d.checks for d in decisions)
        self._checked = 0
        # Everything a decision needs that does not depend on the world is worked out once, here: the expected outcomes,
        # the arguments filled from this run's inputs, and for literal ones the key under which
        # their validation is kept.
        # A decision without arguments is the same whichever run takes it: made now, handed out when its turn comes.
        self._expected, ends = _expected_outcomes(decisions)
        self._steps = [
            (
                d.state,
                d.trigger,
                d.decided_by,
                end,
                fill(d.args, self.inputs) if d.args else None,
                None if not d.args or _templated(d.args) else f"{d.trigger}\0{d.args!r}",
                None if d.args else Decision(d.trigger, {}, decided_by="replay", reason="replayed"),
            )
            for d, end in zip(decisions, ends, strict=True)
        ]
        self.procedure_id, self.version = procedure_id, version
        #: Given when the run diverged before this policy was made (in the process that started it, or on resume).
        self.divergence: dict[str, Any] | None = divergence
        self.replayed = 0
        # The belief read so far: trajectory and log only grow during a run, so each decision reads only what is new.
        self._view: Any = None
        self._trajectory_read = self._position = self._log_read = 0
        self._observed: list[tuple[str, str, int | None]] = []
        # How many observed outcomes are known to agree with the recording: each decision compares only what is new.
        self._agreed = 0

    def _diverge(self, position: int, state: str, expected: str, observed: str) -> None:
        self.divergence = Divergence(
            procedure=self.procedure_id,
            version=self.version,
            step=position,
            state=state,
            replayed=position,
            expected=expected,
            observed=observed,
            reason=f"expected {expected}, observed {observed}",
        ).record()

    def _read(self, view: Any) -> int:
        """The position (policy decisions taken so far), with the outcomes observed so far brought up to date."""
        if view is not self._view:  # another belief (a resumed run's): read it from the start
            self._view, self._trajectory_read, self._position, self._log_read = view, 0, 0, 0
            self._observed, self._agreed = [], 0
        new = view.trajectory.since(self._trajectory_read)
        if new:
            self._trajectory_read += len(new)
            for entry in new:
                if entry.decided_by in _DECIDERS:
                    self._position += 1
        new = view.log.since(self._log_read)
        if new:
            self._log_read += len(new)
            _collect(new, self._observed)
        return self._position

    def decide(self, ctx: DecisionContext) -> Decision | None:
        decision = self._decide(ctx) if self.divergence is None else None
        if decision is None:
            ctx.divergence = self.divergence  # for the LLM asked next: what was replayed, where and why it diverged
        return decision

    def _decide(self, ctx: DecisionContext) -> Decision | None:
        position = self._read(ctx.view)
        if position >= len(self._steps):
            self._diverge(position, ctx.state, "the recorded run had ended", f"a decision asked in '{ctx.state}'")
            return None
        state, trigger, decided_by, end, recorded, key, plain = self._steps[position]
        if state != ctx.state:
            self._diverge(position, ctx.state, f"state '{state}'", f"state '{ctx.state}'")
            return None
        if decided_by == "rule":
            # Rules are asked before the replay; being asked here means the rule that decided then no longer does.
            self._diverge(position, ctx.state, f"a rule choosing '{trigger}'", "no rule decides")
            return None
        observed, expected, agreed = self._observed, self._expected, self._agreed
        if len(observed) != end or observed[agreed:] != expected[agreed:end]:
            first = next(
                (i for i in range(agreed, min(end, len(observed))) if expected[i] != observed[i]),
                min(end, len(observed)),
            )
            self._diverge(
                position,
                ctx.state,
                f"action outcome {_shown(expected[first] if first < end else None)}",
                _shown(observed[first] if first < len(observed) else None),
            )
            return None
        self._agreed = end
        edge = ctx.option(trigger)
        if edge is None:
            self._diverge(
                position,
                ctx.state,
                f"trigger '{trigger}' available",
                f"available: {', '.join(ctx.triggers()) or 'none'} (its guards do not pass)",
            )
            return None
        if self._has_checks and self._checked <= position:
            due = [c for d in self.decisions[self._checked : position + 1] for c in d.checks]
            if due and not self._checks_hold(position, ctx, due):
                return None
            self._checked = position + 1
        if plain is not None and not edge.arguments:
            self.replayed += 1  # nothing to validate: the common case, kept as cheap as a rule's
            return plain
        known = _VALIDATED.get(edge.args_model) if key is not None else None
        args = known.get(key) if known is not None else None  # type: ignore[arg-type]
        if args is None:
            try:
                args = check_arguments(edge, recorded or {})
            except ValueError as exc:
                self._diverge(position, ctx.state, f"valid arguments for '{trigger}'", str(exc))
                return None
            if key is not None:
                _VALIDATED.setdefault(edge.args_model, {})[key] = args
        self.replayed += 1
        return Decision(trigger, dict(args), decided_by="replay", reason="replayed")

    def _checks_hold(self, position: int, ctx: DecisionContext, checks: list[RecordedCheck]) -> bool:
        """Whether each recorded check still observes what it did;
        a check recorded without features, or an action that no
        longer declares one, has nothing to compare and holds. A check that raises is a divergence, never a crash."""
        for recorded in checks:
            definition = self.registry.find_action(recorded.action)
            if recorded.features is None or definition is None or definition.check is None:
                continue
            try:
                observed = observe_features(definition, ctx.view)
            except Exception as exc:  # a user's function
                self._diverge(
                    position,
                    ctx.state,
                    f"check '{recorded.action}' observing {_features(recorded.features)}",
                    f"check '{recorded.action}' failed: {type(exc).__name__}: {exc}",
                )
                return False
            if observed != recorded.features:
                self._diverge(
                    position,
                    ctx.state,
                    f"check '{recorded.action}' observing {_features(recorded.features)}",
                    f"check changed: '{recorded.action}' observes {_features(observed)}",
                )
                return False
        return True

    def finish(self, state: str, taken: list[tuple[str | None, str | None, str]] | None = None) -> None:
        """At the run's end: whether the run kept to the recording. `taken` is each policy decision of the run as
        (state, trigger, who decided): rules decide theirs before the replay is asked, so a rule that chose another
        trigger, or a run that ended before the recording's last decision, took another path."""
        if self.divergence is not None:
            return
        if taken is None:
            taken = [(d.state, d.trigger, "replay") for d in self.decisions[: self.replayed]]
        for position, (where, trigger, who) in enumerate(taken):
            if position >= len(self.decisions):
                self._diverge(position, state, "the recorded run had ended", f"'{trigger}' taken in '{where}' by {who}")
                return
            step = self.decisions[position]
            if (where, trigger) != (step.state, step.trigger):
                self._diverge(
                    position,
                    state,
                    f"a decision in '{step.state}' ({step.trigger})",
                    f"'{trigger}' taken in '{where}' by {who}",
                )
                return
        if len(taken) < len(self.decisions):
            step = self.decisions[len(taken)]
            self._diverge(
                len(taken), state, f"a decision in '{step.state}' ({step.trigger})", f"the run ended in '{state}'"
            )

    async def adecide(self, ctx: DecisionContext) -> Decision | None:
        return self.decide(ctx)
