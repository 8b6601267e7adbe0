"""The shape every session-log parser has: fed line by line, resumable from a saved state."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

from ._records import CommandRecord


class Parser(Protocol):
    """Reads one file's lines in order; `state()` lets the next import continue where this one stopped."""

    skipped: int
    skipped_lines: list[int]
    #: What was read but deliberately not kept as a command, by reason (this import only).
    dropped: dict[str, int]

    def feed(self, line: bytes, lineno: int, offset: int) -> None: ...

    def skip(self, lineno: int) -> None:
        """Count a line that could not be read."""
        ...

    def take(self) -> list[CommandRecord]:
        """The records completed since the last call."""
        ...

    def resume_point(self) -> tuple[int, int] | None:
        """(offset, line number) of an entry begun but not complete, to be re-read next time; None if none."""
        ...

    def finish(self, *, settled: bool) -> None:
        """End of file. `settled`: the file has not changed for a while, so calls still waiting for
        their result never get one (recorded with outcome unknown)."""
        ...

    def state(self) -> dict[str, Any]: ...


class LineParser:
    """Shared bookkeeping: malformed-line counting and JSON decoding that tolerates bad UTF-8."""

    #: Line numbers of the first skipped lines, for the report.
    MAX_SKIPPED_KEPT = 20

    def __init__(self, path: Path, state: dict[str, Any]):
        self.path = path
        self.skipped = 0
        self.skipped_lines: list[int] = []
        self.dropped: dict[str, int] = {}
        self._done: list[CommandRecord] = []

    def skip(self, lineno: int) -> None:
        self.skipped += 1
        if len(self.skipped_lines) < self.MAX_SKIPPED_KEPT:
            self.skipped_lines.append(lineno)

    def emit(self, record: CommandRecord) -> None:
        self._done.append(record)

    def take(self) -> list[CommandRecord]:
        done, self._done = self._done, []
        return done

    def resume_point(self) -> tuple[int, int] | None:
        return None


def load_json_object(line: bytes) -> dict[str, Any] | None:
    """The JSON object on a line, or None when the line is not one (the caller counts it as skipped)."""
    try:
        value = json.loads(line)
    except UnicodeDecodeError:
        try:
            value = json.loads(line.decode("utf-8", errors="replace"))
        except (ValueError, RecursionError):
            return None
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than the decoder's recursion limit
        return None
    return value if isinstance(value, dict) else None
