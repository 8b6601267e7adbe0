"""Which session format a file holds, judged by its first non-empty lines (the name only breaks ties),
and which files a directory holds that could be session logs."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ._asciinema import is_cast_header

FORMATS = ("claude-code", "codex", "bash-history", "zsh-history", "asciinema")
SNIFF_BYTES = 256 * 1024
_SNIFF_LINES = 20

_ZSH = re.compile(rb"^: *\d+:\d+;")
_BASH = re.compile(rb"^#\d{9,11}\s*$")
_CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_CODEX_ITEMS = frozenset(
    {
        "message",
        "function_call",
        "function_call_output",
        "reasoning",
        "local_shell_call",
        "custom_tool_call",
        "custom_tool_call_output",
    }
)
_CLAUDE_TYPES = frozenset(
    {
        "user",
        "assistant",
        "system",
        "summary",
        "file-history-snapshot",
        "queue-operation",
        "progress",
        "attachment",
        "result",
    }
)
_ZSH_NAMES = re.compile(r"(^|[._-])(zsh_history|zhistory|histfile)$", re.I)
_BASH_NAMES = re.compile(r"(^|[._-])(bash_history|sh_history|history)$", re.I)


def _json_kind(line: bytes) -> str | None:
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    if not isinstance(obj, dict):
        return None
    kind = obj.get("type")
    if not isinstance(kind, str):
        kind = None
    if kind in _CODEX_TYPES and isinstance(obj.get("payload"), dict):
        return "codex"
    if "record_type" in obj or (kind is None and "id" in obj and ("instructions" in obj or "git" in obj)):
        return "codex"
    if "sessionId" in obj or (
        kind in _CLAUDE_TYPES and any(k in obj for k in ("uuid", "leafUuid", "messageId", "snapshot"))
    ):
        return "claude-code"
    if kind in _CODEX_ITEMS and "uuid" not in obj:
        return "codex"
    return None


def _long_first_line(start: bytes) -> str | None:
    """A first line longer than what was read (a pasted image, a huge output): judged by its keys."""
    if b'"sessionId"' in start and b'"uuid"' in start:
        return "claude-code"
    if b'"payload"' in start and any(
        b'"type":"%s"' % t.encode() in start.replace(b'": "', b'":"') for t in _CODEX_TYPES
    ):
        return "codex"
    return None


def sniff(head: bytes, name: str, *, complete: bool = True) -> str | None:
    """The format of a file starting with `head` (`complete`: head is the whole file), or None."""
    raw_lines = head.split(b"\n")
    if not complete and len(raw_lines) > 1:
        raw_lines = raw_lines[:-1]  # cut mid-line
    lines = [line.strip() for line in raw_lines if line.strip()][:_SNIFF_LINES]
    if lines:
        if _ZSH.match(lines[0]):
            return "zsh-history"
        if _BASH.match(lines[0]):
            return "bash-history"
        if lines[0].startswith(b"{"):
            if is_cast_header(lines[0]):
                return "asciinema"
            votes: dict[str, int] = {}
            for line in lines:
                kind = _json_kind(line)
                if kind:
                    votes[kind] = votes.get(kind, 0) + 1
            if votes:
                return max(votes, key=lambda k: votes[k])
            if not complete and len(lines) <= 1:
                return _long_first_line(lines[0] if lines else head)
            return None
    if _ZSH_NAMES.search(name):
        return "zsh-history"
    if _BASH_NAMES.search(name):
        return "bash-history"
    return None


def sniff_file(path: Path) -> str | None:
    with path.open("rb") as handle:
        head = handle.read(SNIFF_BYTES)
        complete = len(head) < SNIFF_BYTES
    return sniff(head, path.name, complete=complete)


def is_candidate(name: str) -> bool:
    """Files worth sniffing inside a directory (by name):
    JSONL logs, asciinema casts and files named like shell histories."""
    return name.endswith((".jsonl", ".cast")) or bool(_ZSH_NAMES.search(name) or _BASH_NAMES.search(name))


def walk(directory: Path, errors: list[str] | None = None) -> list[tuple[str, str]]:
    """(path, resolved path) of the candidate files under `directory`, recursively, in a stable order (a
    session before its sub-agents). Folders that cannot be listed are reported in `errors`; symlinked
    folders are not followed."""
    found: list[tuple[str, str]] = []
    stack = [os.path.realpath(directory)]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name != "tool-results":  # Claude Code's persisted outputs, not sessions
                            stack.append(entry.path)
                    elif is_candidate(entry.name):
                        found.append((entry.path, os.path.realpath(entry.path) if entry.is_symlink() else entry.path))
        except OSError as exc:
            if errors is not None:
                errors.append(f"{folder}: cannot list folder: {exc.strerror or exc}")
    found.sort()
    return found
