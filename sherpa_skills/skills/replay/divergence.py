"""Where a replay stopped agreeing with its recording: one record for shell replay and trajectory replay alike."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

from ...redact import redact

#: A divergence shows at most this much of what the step printed: enough to say why, short enough for one screen.
TAIL_LINES = 5
TAIL_CHARS = 500
#: The reason keeps one line of it: the execution record, `learn health`'s failure pattern and the views show it.
WHY_CHARS = 200

# Terminal escape sequences (CSI colours and cursor moves, OSC titles and links, two-byte escapes) and the other
# control characters: a step's output is shown to people, and must not restyle or drive their terminal.
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[ -/]*[0-~])?|\x9b[0-?]*[ -/]*[@-~]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


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
    #: The last lines the diverged command wrote to stderr (at most TAIL_LINES lines, TAIL_CHARS characters),
    #: secrets redacted and terminal escapes removed: why it failed, as the terminal and the view show it.
    stderr_tail: str | None = None

    def record(self) -> dict[str, Any]:
        """As kept in a run's context and result (JSON)."""
        return self.model_dump(mode="json")


def output_tail(text: str, lines: int = TAIL_LINES, chars: int = TAIL_CHARS) -> str | None:
    """The end of what a command printed, as a person may be shown it; None when it printed nothing.

    Secrets are redacted before the text is cut, so a secret cut in half (no longer the shape redaction knows) is
    never shown; a line a progress bar rewrote with carriage returns keeps what it ended showing."""
    text = redact(_ESCAPES.sub("", text))
    kept = [_CONTROL.sub("", line.rsplit("\r", 1)[-1]).rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while kept and not kept[-1]:
        kept.pop()
    tail = "\n".join(kept[-lines:]).strip("\n") if lines > 0 else ""
    if not tail.strip():
        return None
    return tail if len(tail) <= chars else "…" + tail[-(chars - 1) :]


def why(reason: str, tail: str | None) -> str:
    """`reason` and the tail's last line, the one that most often says why (`ls: cannot access ...`)."""
    last = tail.strip().splitlines()[-1].strip() if tail and tail.strip() else ""
    if len(last) > WHY_CHARS:
        last = last[: WHY_CHARS - 1] + "…"
    return f"{reason}: {last}" if last else reason
