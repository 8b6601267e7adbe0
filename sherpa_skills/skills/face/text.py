"""Text helpers for showing procedures: command-number specs, a task type from commands, steps edited at a prompt,
and a command written out as it would run."""

from __future__ import annotations

import unicodedata

from ..capture.from_session import spec_of
from ..mine.recurring import suggest_task_type
from ..replay.divergence import why
from ..replay.edited import classify, editor_text, read_steps

__all__ = ["as_it_runs", "classify", "editor_text", "read_steps", "spec_of", "suggest_task_type", "why"]


def as_it_runs(text: str) -> str:
    """`text` with its control and format characters written out (`\\x1b`, `\\x0d`, `\\u202e`): a terminal escape
    that erases a line, a carriage return, a bidi override that reverses text are what a person reviewing a command
    must see, not what their terminal or browser does with them. Newlines and tabs stay."""
    return "".join(
        c
        if c in "\n\t" or unicodedata.category(c) not in ("Cc", "Cf")
        else (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")
        for c in str(text)
    )
