"""asciinema recordings (`.cast`, versions 2 and 3): the command lines a person typed, rebuilt from input events.

A recording holds what the terminal showed (`o` events) and, when made with `--stdin` (v2) or by asciinema 3,
what was typed (`i` events). A command is the text typed up to Enter, after backspace, Ctrl-U and Ctrl-W are
applied. What cannot be known from keystrokes alone is dropped and counted rather than guessed: lines edited
with arrow keys, tab completion or history recall; keystrokes sent to a full-screen program (vim, less: the
terminal's alternate screen is on); and text that the terminal never echoed back (a password at a prompt).
Recordings keep no exit status, so every command's outcome is `unknown`; the working directory comes from the
terminal title or OSC 7 reports when the shell sends them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ._base import LineParser
from ._records import CommandRecord, clean_command
from ._shell_history import session_key

FORMAT = "asciinema"
#: Typed characters kept for one line; a longer "line" is a paste of data, not a command.
MAX_LINE = 16 * 1024
_ECHO_KEPT = 4 * MAX_LINE

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()][0-9A-Za-z]|[@-Z\\-_=>])")
_ALT_ON = re.compile(r"\x1b\[\?(?:1049|1047|47)h")
_ALT_OFF = re.compile(r"\x1b\[\?(?:1049|1047|47)l")
_OSC7 = re.compile(r"\x1b\]7;file://[^/\x07\x1b]*(/[^\x07\x1b]*)(?:\x07|\x1b\\)")
_TITLE = re.compile(r"\x1b\][02];([^\x07\x1b]*)(?:\x07|\x1b\\)")
_TITLE_PATH = re.compile(r"(?:^|\s)((?:~|/)[^\s]*)\s*$")
# Keys whose effect on the line cannot be rebuilt from the keystrokes: arrows, Home/End, Delete, tab.
_EDITING_KEYS = re.compile(r"\x1b\[[0-9;]*[ABCDHF~]|\x1bO[ABCDHF]|\t")
_INPUT_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|O.|.)?")


def is_cast_header(line: bytes) -> bool:
    """The first line of a recording: a JSON object with `version` 2 or 3 and the terminal's size."""
    try:
        header = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: absurdly nested JSON
        return False
    return (
        isinstance(header, dict)
        and header.get("version") in (2, 3)
        and ("width" in header or isinstance(header.get("term"), dict))
    )


class AsciinemaParser(LineParser):
    """Fed a recording's lines: the header, then one event per line."""

    def __init__(self, path: Path, state: dict[str, Any]):
        super().__init__(path, state)
        self.session_id = session_key(FORMAT, path)
        self.version: int | None = state.get("version")
        self.start: float | None = state.get("start")
        self.clock: float = state.get("clock", 0.0)  # v3 event times are intervals since the previous event
        self.alt_screen: bool = state.get("alt_screen", False)
        self.cwd: str | None = state.get("cwd")
        self.line: str = state.get("line", "")
        self.echo: str = state.get("echo", "")
        self.uncertain: bool = state.get("uncertain", False)
        self.line_started: float | None = state.get("line_started")
        self.first_line: int | None = state.get("first_line")

    def feed(self, line: bytes, lineno: int, offset: int) -> None:
        line = line.strip()
        if not line:
            return
        if self.version is None:
            self._header(line, lineno)
            return
        try:
            event = json.loads(line)
        except (ValueError, UnicodeDecodeError, RecursionError):
            self.skip(lineno)
            return
        if (
            not isinstance(event, list)
            or len(event) < 3
            or not isinstance(event[0], (int, float))
            or not isinstance(event[1], str)
            or not isinstance(event[2], str)
        ):
            self.skip(lineno)
            return
        at = self._time(float(event[0]))
        kind, data = event[1], event[2]
        if kind == "o":
            self._output(data)
        elif kind == "i":
            self._input(data, at, lineno)

    def _header(self, line: bytes, lineno: int) -> None:
        if not is_cast_header(line):
            self.skip(lineno)
            self.version = 0  # not a recording this parser reads: every later line is skipped too
            return
        header = json.loads(line)
        self.version = int(header["version"])
        stamp = header.get("timestamp")
        self.start = float(stamp) if isinstance(stamp, (int, float)) else None

    def _time(self, value: float) -> float:
        if self.version == 3:
            self.clock += value
            return self.clock
        return value

    def _output(self, data: str) -> None:
        for found in _OSC7.finditer(data):
            self.cwd = found.group(1)
        for found in _TITLE.finditer(data):
            path = _TITLE_PATH.search(found.group(1))
            if path:
                self.cwd = path.group(1)
        if _ALT_ON.search(data):
            self.alt_screen = not _ALT_OFF.search(data[_ALT_ON.search(data).end() :])  # type: ignore[union-attr]
        elif _ALT_OFF.search(data):
            self.alt_screen = False
        if self.line and len(self.echo) < _ECHO_KEPT:
            self.echo += _ANSI.sub("", data)[: _ECHO_KEPT - len(self.echo)]

    def _input(self, data: str, at: float, lineno: int) -> None:
        if self.alt_screen:
            self.dropped["full_screen_keys"] = self.dropped.get("full_screen_keys", 0) + 1
            return
        if _EDITING_KEYS.search(data):
            self.uncertain = True
        data = _INPUT_ESCAPES.sub("", data)  # terminal replies (cursor reports) and editing keys
        for char in data:
            if char in "\r\n":
                self._submit(lineno)
            elif char in "\x7f\b":
                self.line = self.line[:-1]
            elif char == "\x15":  # Ctrl-U
                self.line = ""
            elif char == "\x17":  # Ctrl-W
                self.line = re.sub(r"\S+\s*$", "", self.line.rstrip(" ")) if self.line.strip() else ""
            elif char in "\x03\x04":  # Ctrl-C abandons the line; Ctrl-D on a line is ignored here
                if char == "\x03" and self.line:
                    self.dropped["interrupted"] = self.dropped.get("interrupted", 0) + 1
                self._reset()
            elif char >= " ":
                if not self.line:
                    self.line_started, self.first_line = at, lineno
                if len(self.line) < MAX_LINE:
                    self.line += char
                else:
                    self.uncertain = True

    def _submit(self, lineno: int) -> None:
        command = self.line.strip()
        if not command and self.uncertain:  # a line recalled from history with the arrow keys, then run
            self.dropped["edited"] = self.dropped.get("edited", 0) + 1
        elif command:
            if self.uncertain:
                self.dropped["edited"] = self.dropped.get("edited", 0) + 1
            elif not _echoed(command, self.echo):
                self.dropped["not_echoed"] = self.dropped.get("not_echoed", 0) + 1
            else:
                started = self.line_started if self.line_started is not None else 0.0
                timestamp = (self.start + started) if self.start is not None else None
                line = self.first_line or lineno
                self.emit(
                    CommandRecord(
                        key=f"{self.session_id}:L{line}",
                        session_id=self.session_id,
                        command=clean_command(command),
                        outcome="unknown",
                        line=line,
                        timestamp=timestamp,
                        cwd=self.cwd,
                        tool=FORMAT,
                    )
                )
        self._reset()

    def _reset(self) -> None:
        self.line, self.echo, self.uncertain, self.line_started, self.first_line = "", "", False, None, None

    def finish(self, *, settled: bool) -> None:
        if settled and self.line.strip():
            self.dropped["never_submitted"] = self.dropped.get("never_submitted", 0) + 1
            self._reset()

    def state(self) -> dict[str, Any]:
        # A line being typed when the file ended waits for the rest; it is redacted like everything stored.
        return {
            "version": self.version,
            "start": self.start,
            "clock": self.clock,
            "alt_screen": self.alt_screen,
            "cwd": self.cwd,
            "line": clean_command(self.line) if self.line else "",
            "echo": clean_command(self.echo)[:_ECHO_KEPT] if self.echo else "",
            "uncertain": self.uncertain,
            "line_started": self.line_started,
            "first_line": self.first_line,
        }


def _echoed(command: str, echo: str) -> bool:
    """The typed text shows up, in order, in what the terminal printed while it was typed (a prompt that hides
    input, like a password's, prints nothing)."""
    position = 0
    for char in command:
        position = echo.find(char, position)
        if position < 0:
            return False
        position += 1
    return True
