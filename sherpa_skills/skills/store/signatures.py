"""When two procedures (or lessons) are the same: step and trajectory signatures, a path, a learning's key."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from typing import Any

from .models import (
    CapturedProcedure,
    ProcedureStep,
    RecordedDecision,
)
from .params import PARAMETER
from .rows import _dump

_SPACE = re.compile(r"\s+")


def learning_key(task_type: str | None, command: str, error: str) -> str:
    """Two learnings are the same lesson when the task, the command and the error agree, spacing aside."""
    norm = "\x1f".join([task_type or "", _SPACE.sub(" ", command.strip()), _SPACE.sub(" ", error.strip())])
    return hashlib.sha256(norm.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def step_signature(steps: list[ProcedureStep]) -> str:
    """Steps compare equal when their commands do, ignoring spacing and parameter names."""
    normal = "\n".join(PARAMETER.sub("{{}}", _SPACE.sub(" ", s.command.strip())) for s in steps)
    return hashlib.sha256(normal.encode()).hexdigest()[:24]


def _trajectory_signature(description: str, decisions: Iterable[tuple[Any, Any, Any]]) -> str:
    # Arguments by sorted key: a model that names them in another order took the same decision. Compact, as signatures
    # stored before were: arguments given in sorted order keep their stored signature.
    said = (f"{state} {trigger} {_dump(args, sort_keys=True)}" for state, trigger, args in decisions)
    normal = "\n".join([_SPACE.sub(" ", description.strip().lower()), *said])
    return "t:" + hashlib.sha256(normal.encode()).hexdigest()[:22]


def decision_signature(decisions: list[RecordedDecision], description: str = "") -> str:
    """Trajectories compare equal when their task text, states, triggers and (parametrised) arguments do. Without a
    description it is the trajectory's **path**: the states its policy decided in, the triggers it took and their
    arguments as templates of the inputs (an order number is `{{ order }}`) — not who decided (an LLM, a rule, a
    replay), not the action outcomes or checks around them, not the task's wording."""
    return _trajectory_signature(description, ((d.state, d.trigger, d.args) for d in decisions))


def path_of(decisions: list[dict[str, Any]], description: str = "") -> str:
    """`decision_signature(decisions, description)` of decisions as stored (JSON): what a migration reads without
    models."""
    return _trajectory_signature(
        description, ((d.get("state"), d.get("trigger"), d.get("args") or {}) for d in decisions)
    )


def stored_decisions(text: str | None) -> list[dict[str, Any]]:
    """Decisions as stored (JSON), read leniently for a migration: anything not a list of objects reads as none of
    it, since a store that cannot be upgraded cannot be opened."""
    try:
        found = json.loads(text or "[]")
    except ValueError:
        return []
    return [d for d in found if isinstance(d, dict)] if isinstance(found, list) else []


def path_signature(proc: CapturedProcedure) -> str | None:
    """A trajectory's path (unique per task type, `procedures.path`); None for shell steps."""
    return decision_signature(proc.decisions) if proc.kind == "trajectory" else None


def signature_of(proc: CapturedProcedure) -> str:
    return (
        decision_signature(proc.decisions, proc.description)
        if proc.kind == "trajectory"
        else step_signature(proc.steps)
    )
