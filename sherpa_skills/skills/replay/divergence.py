"""Where a replay stopped agreeing with its recording: one record for shell replay and trajectory replay alike."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class Divergence(BaseModel):
    """The first point a replay left its recording, for the run's result, the execution record and the LLM's prompt
    (policies/prompts/_divergence.j2). `expected` and `observed` are said in words, so one prompt block fits both
    kinds."""

    procedure: str = ""
    version: int = 0
    #: Where: the step (shell replay: its number, 1 the first; None for a postcondition) or the decision (trajectory
    #: replay: its position, 0 the first) ...
    step: int | None = None
    #: ... and, in trajectory replay, the state it was asked in.
    state: str | None = None
    #: Steps or decisions replayed as recorded before it.
    replayed: int = 0
    expected: str
    observed: str
    #: Why, in one line: what the execution record and the learning keep.
    reason: str
    # Shell replay's details: the command that diverged, the commands before it, and what it printed and returned.
    command: str | None = None
    replayed_commands: list[str] = []
    expected_exit_code: int | None = None
    expected_output_pattern: str | None = None
    observed_exit_code: int | None = None
    observed_output: str | None = None

    def record(self) -> dict[str, Any]:
        """As kept in a run's context and result (JSON)."""
        return self.model_dump(mode="json")
