"""Shell histories: bash (`#epoch` lines before commands, when HISTTIMEFORMAT is set) and zsh
(extended `: epoch:duration;command`, a multi-line command continued by a trailing backslash).

Histories record no exit status, so every command's outcome is `unknown`, and no working directory.
Files are read as bytes and decoded per entry: zsh writes non-ASCII text "metafied" (0x83 followed by
the byte xor 0x20), which is undone when that yields valid UTF-8; anything else invalid is replaced.
A whole history file is one session, named after its path.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from ._base import LineParser
from ._records import CommandRecord, clean_command

_BASH_STAMP = re.compile(rb"^#(\d{9,11})\s*$")
_ZSH_HEADER = re.compile(rb"^: *(\d+):(\d+);")
_META = 0x83


def unmetafy(data: bytes) -> bytes:
    out = bytearray()
    it = iter(data)
    for byte in it:
        if byte == _META:
            following = next(it, None)
            if following is not None:
                out.append(following ^ 0x20)
        else:
            out.append(byte)
    return bytes(out)


def decode_entry(data: bytes, *, zsh: bool) -> tuple[str, bool]:
    """(text, whether bytes had to be replaced)."""
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        pass
    if zsh and _META in data:
        try:
            return unmetafy(data).decode("utf-8"), False
        except UnicodeDecodeError:
            pass
    return data.decode("utf-8", errors="replace"), True


def session_key(fmt: str, path: Path) -> str:
    return f"{fmt}:{hashlib.sha1(str(path).encode('utf-8', 'surrogateescape')).hexdigest()[:16]}"


class _HistoryParser(LineParser):
    FORMAT = ""
    ZSH = False

    def __init__(self, path: Path, state: dict[str, Any]):
        super().__init__(path, state)
        self.session_id = session_key(self.FORMAT, path)
        self.stamped: bool = state.get("stamped", False)
        # The entry being collected: its first line, offset, timestamp, duration and raw lines.
        self.entry: dict[str, Any] | None = None
        self.seen: dict[str, int] = {}

    def _start(self, lineno: int, offset: int, ts: float | None, duration: float | None, first: bytes | None) -> None:
        self._close()
        self.entry = {
            "line": lineno,
            "offset": offset,
            "ts": ts,
            "duration": duration,
            "lines": [] if first is None else [first],
        }

    def _close(self) -> None:
        entry, self.entry = self.entry, None
        if entry is None or not entry["lines"]:
            return
        lines: list[bytes] = entry["lines"]
        raw = b"\n".join(lines).rstrip(b"\n")
        text, replaced = decode_entry(raw, zsh=self.ZSH)
        if not text.strip():
            return
        digest = hashlib.sha1(raw).hexdigest()[:16]
        base = f"{entry['ts']:.0f}" if entry["ts"] is not None else f"L{entry['line']}"
        key = f"{self.session_id}:{base}:{digest}"
        # The same command at the same second twice: keep both (numbered within this read).
        count = self.seen.get(key, 0)
        self.seen[key] = count + 1
        if count:
            key = f"{key}#{count}"
        info: dict[str, Any] = {"invalid_utf8": True} if replaced else {}
        self.emit(
            CommandRecord(
                key=key,
                session_id=self.session_id,
                command=clean_command(text),
                outcome="unknown",
                line=entry["line"],
                timestamp=entry["ts"],
                duration=entry["duration"],
                tool=self.FORMAT,
                info=info,
            )
        )

    def resume_point(self) -> tuple[int, int] | None:
        return (self.entry["offset"], self.entry["line"]) if self.entry is not None else None

    def finish(self, *, settled: bool) -> None:
        self._close()

    def state(self) -> dict[str, Any]:
        return {"stamped": self.stamped}


class BashHistoryParser(_HistoryParser):
    """`#1663406862` then the command. Before the first stamp each line is a command; after it, lines
    without their own stamp continue the stamped command (bash's `lithist` multi-line entries)."""

    FORMAT = "bash-history"

    def feed(self, line: bytes, lineno: int, offset: int) -> None:
        line = line.rstrip(b"\r")
        stamp = _BASH_STAMP.match(line)
        if stamp:
            self.stamped = True
            self._start(lineno, offset, float(int(stamp.group(1))), None, None)
            return
        if self.entry is not None and (self.stamped and (not self.entry["lines"] or self.entry["ts"] is not None)):
            if not self.entry["lines"]:
                self.entry["line"] = lineno  # the command's own line; the entry is re-read from its stamp
            self.entry["lines"].append(line)
            return
        if not line.strip():
            return
        self._start(lineno, offset, None, None, line)
        self._close()


class ZshHistoryParser(_HistoryParser):
    """`: 1624011412:0;command`; a line ending in a backslash continues on the next line. A new header
    always starts a new entry (zsh itself would glue an aborted `cmd\\` to the next entry)."""

    FORMAT = "zsh-history"
    ZSH = True

    def feed(self, line: bytes, lineno: int, offset: int) -> None:
        line = line.rstrip(b"\r")
        header = _ZSH_HEADER.match(line)
        if header:
            self._start(lineno, offset, float(int(header.group(1))), float(int(header.group(2))), line[header.end() :])
            return
        if self.entry is not None and self.entry["lines"] and self.entry["lines"][-1].endswith(b"\\"):
            last = self.entry["lines"][-1]
            self.entry["lines"][-1] = last[:-1]  # the backslash zsh wrote before the newline
            self.entry["lines"].append(line)
            return
        if not line.strip():
            self._close()
            return
        self._start(lineno, offset, None, None, line)  # a plain (not extended) history line
