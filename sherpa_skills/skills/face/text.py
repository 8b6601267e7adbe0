"""Text helpers for showing procedures: command-number specs, a task type from commands, steps edited at a prompt."""

from __future__ import annotations

from ..capture.from_session import spec_of
from ..mine.recurring import suggest_task_type
from ..replay.divergence import why
from ..replay.edited import classify, editor_text, read_steps

__all__ = ["classify", "editor_text", "read_steps", "spec_of", "suggest_task_type", "why"]
