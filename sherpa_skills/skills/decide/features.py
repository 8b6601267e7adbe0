"""What a decision saw that may matter: the context's short values, the latest outcome of each action and what its
check observed, the options the guards left, and the path of decisions that led here. Values equal to the run's
one-word inputs (an order number) become their {{ name }}: a parameter, never a value that separates runs."""

from __future__ import annotations

import json
from typing import Any

from ..capture.trajectory import described_task, parametrise
from ..store.models import POLICY_DECIDERS

_DECIDERS = frozenset(POLICY_DECIDERS)
#: A context string longer than this, or with spaces, is wording (the task's meaning), not a value to agree on.
_VALUE_CHARS = 64
#: Decisions of the path kept: a loop's long history is not what the next decision depends on.
PATH_DECISIONS = 8


def meaning_text(task: dict[str, Any]) -> str:
    """The task's wording, which its embedding stands for: its free-text inputs, else the task as procedures are
    described."""
    words = [v.strip() for v in task.values() if isinstance(v, str) and any(c.isspace() for c in v.strip())]
    return " ".join(words) if words else described_task(task)


def _scalar(value: Any, params: dict[str, Any]) -> tuple[bool, Any]:
    if value is None or isinstance(value, bool):
        return True, value
    if isinstance(value, (int, float)):
        # An input given as text (`-i order=4500` on one run, "4500" on another) is the same parameter.
        named = next((k for k, v in params.items() if str(v) == str(value)), None)
        return True, ("{{ " + named + " }}") if named is not None else value
    if isinstance(value, str) and len(value) <= _VALUE_CHARS and not any(c.isspace() for c in value):
        return True, parametrise(value, params)
    return False, None


class FeatureReader:
    """One run's features, read as its belief grows (each log and trajectory entry once)."""

    def __init__(self, params: dict[str, Any]):
        self.params = params
        self._view: Any = None
        self._log_read = self._trajectory_read = 0
        self._outcomes: dict[str, Any] = {}
        self._path: list[str] = []
        #: Policy decisions taken so far: the position of the one asked now.
        self.decisions = 0

    def catch_up(self, view: Any) -> None:
        """Read what the run added since the last call (all of it, for another belief)."""
        if view is not self._view:  # a resumed run's belief: read from its start
            self._view, self._log_read, self._trajectory_read = view, 0, 0
            self._outcomes, self._path, self.decisions = {}, [], 0
        for entry in view.log.since(self._log_read):
            action = entry.action
            if action.startswith("policy:"):
                continue
            if action.startswith("check:"):
                if entry.status == "ok":
                    self._outcomes[action] = json.dumps(entry.outputs, sort_keys=True, default=str)[:200]
                continue
            outputs = entry.outputs if isinstance(entry.outputs, dict) else {}
            code = outputs.get("exit_code")
            self._outcomes["outcome:" + action] = entry.status + (f" {code}" if isinstance(code, int) else "")
        self._log_read = len(view.log)
        for entry in view.trajectory.since(self._trajectory_read):
            if entry.decided_by in _DECIDERS:
                self.decisions += 1
                if entry.trigger:
                    self._path.append(entry.trigger)
        self._trajectory_read = len(view.trajectory)

    def read(self, view: Any, triggers: list[str]) -> tuple[dict[str, Any], str]:
        """(features, path) for the decision asked now, `triggers` the options its guards left."""
        self.catch_up(view)
        features: dict[str, Any] = {}
        for key, value in view.context.items():
            if key == "event" or key.startswith("_"):
                continue
            keep, value = _scalar(value, self.params)
            if keep:
                features["ctx:" + key] = value
        features.update(self._outcomes)
        features["options"] = ",".join(sorted(triggers))
        return features, ">".join(self._path[-PATH_DECISIONS:])
