"""Capture a workflow run's trajectory: its policy decisions, their arguments and the action outcomes around them."""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

from ...engine.belief import Belief, BeliefView, thaw
from ..store.models import POLICY_DECIDERS, ActionOutcome, RecordedCheck, RecordedDecision

#: Shorter input values are too common to stand for the input (a "no" in an argument is not the ticket).
_MIN_PARAM_CHARS = 3


def _as_text(value: Any) -> str | None:
    """An input's value as the text a decision's argument may repeat:
    strings, and numbers (`--input order=4417` is one)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def one_word_inputs(inputs: dict[str, Any]) -> dict[str, str]:
    """The inputs that name one thing (an order number, an id), as text: they vary between runs of the same task."""
    words = {k: _as_text(v) for k, v in inputs.items()}
    return {k: v.strip() for k, v in words.items() if v and v.strip() and not any(c.isspace() for c in v.strip())}


def described_task(inputs: dict[str, Any]) -> str:
    """The task text a trajectory is described by, its one-word inputs (an order number, an id)
    as {{ name }}: those vary
    between runs of the same task, and the matcher takes them as parameters rather than as literals that disagree."""
    words = one_word_inputs(inputs)
    return " ".join(
        "{{ " + k + " }}" if k in words else str(v)
        for k, v in inputs.items()
        if k in words or (isinstance(v, str) and v.strip())
    )


def parametrise(value: Any, inputs: dict[str, Any]) -> Any:
    """A value with the run's input values replaced by {{ name }}, so it fits the next run's inputs too."""
    if isinstance(value, dict):
        return {k: parametrise(v, inputs) for k, v in value.items()}
    if isinstance(value, list):
        return [parametrise(v, inputs) for v in value]
    for name, given in inputs.items():
        if isinstance(given, bool) or given is None:
            continue
        if value == given and not isinstance(value, bool):
            return "{{ " + name + " }}"
        text = _as_text(given)  # a number given as an input and repeated as text by the LLM is the same value
        if isinstance(value, str) and text is not None and len(text) >= _MIN_PARAM_CHARS and text in value:
            value = value.replace(text, "{{ " + name + " }}")
            if value == "{{ " + name + " }}":
                return value
    return value


def _outcome(entry: Any, made: dict[tuple[str, str, int | None], ActionOutcome]) -> ActionOutcome:
    """The entry's outcome, one object per distinct outcome of the run (`made`): a run repeats a few many times."""
    outputs = entry.outputs
    code = outputs.get("exit_code") if isinstance(outputs, dict) else None
    key = (entry.action, entry.status, code if isinstance(code, int) else None)
    outcome = made.get(key)
    if outcome is None:
        outcome = made[key] = ActionOutcome(action=key[0], status=key[1], exit_code=key[2])
    return outcome


def capture_decisions(
    belief: Belief | BeliefView, inputs: dict[str, Any], replayed: list[RecordedDecision] | None = None
) -> list[RecordedDecision]:
    """The run's policy decisions in order. An LLM's arguments come from its log entry; a replayed decision's from the
    procedure it followed (already parametrised); a rule's are the rule's own and it decides them again on replay."""
    chosen_args = {
        e.tick: dict(e.outputs.get("args") or {})
        for e in belief.log
        if e.action.startswith("policy:") and e.status == "ok" and isinstance(e.outputs, dict)
    }
    decisions: list[RecordedDecision] = []
    ticks: list[int] = []
    previous = None
    # Actions in log order (ticks only grow): a decision keeps those since the one before, each made once.
    acted = [e for e in belief.log if not e.action.startswith(("policy:", "check:"))]
    made: dict[tuple[str, str, int | None], ActionOutcome] = {}
    seen = 0
    for entry in belief.trajectory:
        if entry.decided_by in POLICY_DECIDERS and previous is not None:
            ticks.append(entry.tick)
            position = len(decisions)
            decided_by = entry.decided_by
            if decided_by == "replay" and replayed and position < len(replayed):
                args, decided_by = replayed[position].args, replayed[position].decided_by
            else:
                args = parametrise(chosen_args.get(entry.tick, {}), inputs)
            since = seen
            while seen < len(acted) and acted[seen].tick < entry.tick:
                seen += 1
            decisions.append(
                RecordedDecision(
                    state=entry.source or previous.state,
                    trigger=entry.trigger or "",
                    args=args,
                    decided_by=decided_by,
                    outcomes=[_outcome(e, made) for e in acted[since:seen]],
                )
            )
        previous = entry
    _attach_checks(decisions, ticks, belief)
    return decisions


def _attach_checks(decisions: list[RecordedDecision], ticks: list[int], belief: Belief | BeliefView) -> None:
    """Each decision gets the checks of the actions it led to, up to the next decision (the first also those before it):
    a replay calls them before following it, so a changed world is refused before anything acts on it."""
    for e in belief.log:
        if not e.action.startswith("check:") or e.status != "ok":
            continue  # a check that raised recorded nothing to compare
        at = max(0, bisect_right(ticks, e.tick) - 1)  # ticks only grow: a search, not a count of them all
        if at < len(decisions):
            decisions[at].checks.append(RecordedCheck(action=e.action[len("check:") :], features=thaw(e.outputs)))
