"""What a learning run keeps with the run, typed and versioned, so whichever process resumes it goes on learning."""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ...errors import StoreError

#: The layout written now. A state without `state_version` was written before the layout had one: the same keys.
STATE_VERSION: Final = 1


class Confirmation(BaseModel):
    """The judge's answer to a plausible match: who was asked, what was offered, what it chose and what asking cost."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    by: str
    offered: list[str]
    procedure: str | None
    reason: str | None
    calls: int
    tokens: int


class LearningState(BaseModel):
    """One run's learning as kept with the run (RunRow.hooks["learning"]): the task, the procedure it matched and the
    version it follows, the judge's answer, where its replay diverged and what it asked its decision memory."""

    # Frozen: a change is a new object, and only a new object is written with the tick (RunHook.saved).
    model_config = ConfigDict(extra="forbid", frozen=True)

    state_version: Literal[1] = STATE_VERSION
    task: dict[str, Any]
    procedure: str | None = None
    #: The matched procedure's version (a replaced one stops the replay on resume).
    version: int | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    score: float | None = None
    started: float
    divergence: dict[str, Any] | None = None
    confirmation: Confirmation | None = None
    #: "due": asked lazily, only where the decision memory cannot take the run's first decision itself.
    judge: Literal["due", "asked"] | None = None
    #: By decision position: what the decision memory was asked, and the arguments of the decisions it took.
    asked: dict[int, dict[str, Any]] = Field(default_factory=dict)
    taken: dict[int, dict[str, Any]] = Field(default_factory=dict)

    @classmethod
    def kept(cls, saved: dict[str, Any], run_id: str) -> LearningState:
        """The state run `run_id` kept; one it cannot read (another version's, or damaged) is refused, never guessed."""
        version = saved.get("state_version")
        if isinstance(version, int) and not isinstance(version, bool) and version > STATE_VERSION:
            raise StoreError(
                f"run {run_id}: its learning state has state_version {version}, written by a newer sherpa-skills "
                f"(this one reads {STATE_VERSION}): resume it with that version"
            )
        try:
            return cls.model_validate(saved)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors())
            raise StoreError(f"run {run_id}: its learning state is unreadable: {problems}") from None

    def stored(self) -> dict[str, Any]:
        """As handed to the run store, which writes it as JSON (decision positions become string keys) and refuses,
        told why, a value of the task that JSON cannot hold."""
        return self.model_dump()
