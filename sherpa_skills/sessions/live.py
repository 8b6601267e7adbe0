"""Live capture: one hook event from Claude Code or Codex, stored the way `sessions import` stores a transcript.

A shell call's key is its `tool_use_id` (the id its transcript or rollout gives the same call), so a duplicate
delivery, and the transcript imported later, add nothing: `session_commands` is unique per (source, call key).
Live commands hang off one file row per source (`live:claude-code`, `live:codex`). Everything here is plain
sqlite3 and the redaction the importers use: the hook runs as a fresh process per event and must stay quick.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._records import CommandRecord, as_dict, as_int, clean_command, clean_text, excerpt, outcome_for_exit
from ._store import Conflict, FileRow, SessionStore

SOURCES = ("claude-code", "codex")
#: Tool names of shell calls: Claude Code's Bash, and what Codex names its shell tool in hooks and rollouts.
SHELL_TOOLS = frozenset(
    {"Bash", "shell", "shell_command", "exec_command", "local_shell", "container.exec", "unified_exec", "bash"}
)
TOOL_EVENTS = frozenset({"PostToolUse", "PostToolUseFailure"})
SESSION_EVENTS = frozenset({"SessionStart", "Stop", "SessionEnd"})
#: A hook payload larger than this is not read (stdin is still drained); Claude Code caps tool output far below it.
MAX_PAYLOAD = 32 * 1024 * 1024
_EXIT_PREFIX = re.compile(r"^(?:Error: )?Exit code:? (-?\d+)[ \t]*\n?")
_EXIT_TEXT = re.compile(r"^(?:Exit code:|Process exited with code)\s*(-?\d+)", re.M)
_REJECTED = ("The user doesn't want to proceed", "User rejected tool use", "[Request interrupted by user")
_CONFLICT_RETRIES = 50


class HookPayloadError(ValueError):
    """The event is not one we can read; the message names the field."""


@dataclass
class LiveResult:
    """What one event did: `stored` a command, `duplicate`, a session `checkpoint`/`started`/`ended`, or `ignored`."""

    action: str
    event: str
    session_id: str | None = None
    call_id: str | None = None
    reason: str | None = None


def parse_payload(raw: bytes) -> dict[str, Any]:
    """The JSON object on the hook's stdin."""
    if len(raw) > MAX_PAYLOAD:
        raise HookPayloadError(f"payload of {len(raw)} bytes is over the {MAX_PAYLOAD} byte limit")
    try:
        data = json.loads(raw.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError) as exc:
        raise HookPayloadError(f"stdin is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise HookPayloadError(f"stdin is a JSON {type(data).__name__}, not an object")
    return data


def _text(payload: dict[str, Any], name: str) -> str | None:
    value = payload.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise HookPayloadError(f"field '{name}' must be a string, not {type(value).__name__}")
    return value


def _required(payload: dict[str, Any], name: str) -> str:
    value = _text(payload, name)
    if value is None:
        raise HookPayloadError(f"field '{name}' is missing")
    return value


def _command_text(tool_input: dict[str, Any]) -> str | None:
    from ._codex import unwrap_command  # argv lists (Codex) become shell text as the rollout importer reads them

    command = tool_input.get("command", tool_input.get("cmd"))
    text = unwrap_command(command)
    return text if text and text.strip() else None


def _response_text(response: object) -> str:
    """stdout then stderr of a response object, or the text of a string or content list."""
    if isinstance(response, str):
        return response
    if isinstance(response, dict):
        parts = [
            response[k] for k in ("stdout", "output", "aggregated_output", "stderr") if isinstance(response.get(k), str)
        ]
        if parts:
            return "\n".join(p for p in parts if p)
        content = response.get("content")
        if content is not None:
            return _response_text(content)
    if isinstance(response, list):
        return "\n".join(
            item.get("text", "") if isinstance(item, dict) else str(item) for item in response if item is not None
        )
    return "" if response is None else json.dumps(response, default=str)[:4000]


def command_record(source: str, payload: dict[str, Any], now: float) -> CommandRecord | None:
    """The shell call a PostToolUse / PostToolUseFailure event reports, redacted; None for other tools."""
    event = _required(payload, "hook_event_name")
    tool = _required(payload, "tool_name")
    if tool not in SHELL_TOOLS:
        return None
    session = _required(payload, "session_id")
    call_id = _required(payload, "tool_use_id")
    if not isinstance(payload.get("tool_input"), dict):
        raise HookPayloadError("field 'tool_input' must be an object with a 'command'")
    tool_input = as_dict(payload.get("tool_input"))
    command = _command_text(tool_input)
    if command is None:
        raise HookPayloadError("field 'tool_input.command' is missing or empty")
    response = payload.get("tool_response")
    info: dict[str, Any] = {"live": True}
    code: int | None = None
    if event == "PostToolUseFailure":
        # The documented field is `error`; some releases write `tool_result` or a response instead.
        text = next(
            (_response_text(payload[k]) for k in ("error", "tool_result", "tool_response") if payload.get(k)), ""
        )
        found = _EXIT_PREFIX.match(text)
        if found:
            code, text = int(found.group(1)), text[found.end() :]
        outcome = (
            "rejected" if text.lstrip().startswith(_REJECTED) or payload.get("is_interrupt") is True else "failure"
        )
    else:
        text = _response_text(response)
        fields = as_dict(response)
        code = as_int(fields.get("exitCode", fields.get("exit_code", fields.get("returncode"))))
        if code is None:
            found = _EXIT_TEXT.search(text[:2000])
            code = int(found.group(1)) if found else None
        if fields.get("interrupted") is True:
            outcome = "rejected"
        elif tool_input.get("run_in_background") is True or fields.get("backgroundTaskId"):
            outcome, info["background"] = "unknown", True
        elif code is not None:
            outcome = outcome_for_exit(code)
        else:
            # Claude Code sends PostToolUse only for a call that worked; Codex's Bash says its exit code when it failed.
            outcome = "success"
    description = tool_input.get("description")
    agent = payload.get("agent_id")
    return CommandRecord(
        key=call_id,
        session_id=session,
        command=clean_command(command),
        outcome=outcome,  # type: ignore[arg-type]
        timestamp=now,
        cwd=clean_text(_text(payload, "cwd")),
        exit_code=code,
        output=excerpt(text),
        tool=tool,
        agent=agent if isinstance(agent, str) and agent else None,
        description=clean_text(description) if isinstance(description, str) else None,
        info=info,
    )


def _store_command(store: SessionStore, source: str, record: CommandRecord) -> bool:
    """Insert one command under the source's live file row; False when that call was already stored."""
    path = f"live:{source}"
    for _ in range(_CONFLICT_RETRIES):
        row = store.file_row(path) or FileRow(id=None, path=path, format=source)
        try:
            return store.commit(row, [record], source=source).commands == 1
        except Conflict:
            continue  # another hook process wrote the row first: read it again
    raise RuntimeError(f"{path}: the file row kept changing under {_CONFLICT_RETRIES} attempts")


def _touch_session(store: SessionStore, source: str, payload: dict[str, Any], event: str, now: float) -> None:
    session = _required(payload, "session_id")
    conn = store.conn
    conn.execute(
        "INSERT INTO live_sessions (source, session_key, transcript_path, cwd, started, last_event, events) "
        "VALUES (?, ?, ?, ?, ?, ?, 1) ON CONFLICT (source, session_key) DO UPDATE SET "
        "last_event = excluded.last_event, events = events + 1, "
        "transcript_path = COALESCE(excluded.transcript_path, transcript_path), "
        "cwd = COALESCE(cwd, excluded.cwd)",
        (source, session, _text(payload, "transcript_path"), clean_text(_text(payload, "cwd")), now, now),
    )
    if event == "Stop":
        conn.execute(
            "UPDATE live_sessions SET checkpoints = checkpoints + 1 WHERE source = ? AND session_key = ?",
            (source, session),
        )
    elif event == "SessionEnd":
        reason = payload.get("reason")
        conn.execute(
            "UPDATE live_sessions SET ended = ?, end_reason = ? WHERE source = ? AND session_key = ?",
            (now, str(reason)[:200] if reason is not None else None, source, session),
        )


def capture(source: str, payload: dict[str, Any], home: str | Path | None = None) -> LiveResult:
    """Store what one hook event says. Raises HookPayloadError for an event that cannot be read."""
    if source not in SOURCES:
        raise HookPayloadError(f"unknown agent '{source}'; choose one of: {', '.join(SOURCES)}")
    event = _required(payload, "hook_event_name")
    now = time.time()
    if event in TOOL_EVENTS:
        record = command_record(source, payload, now)
        if record is None:
            return LiveResult("ignored", event, reason=f"tool {payload.get('tool_name')!r} is not a shell")
        with SessionStore(home=home) as store:
            stored = _store_command(store, source, record)
            _touch_session(store, source, payload, event, now)
        return LiveResult("stored" if stored else "duplicate", event, record.session_id, record.key)
    if event in SESSION_EVENTS:
        with SessionStore(home=home) as store:
            _touch_session(store, source, payload, event, now)
        action = {"SessionStart": "started", "Stop": "checkpoint", "SessionEnd": "ended"}[event]
        return LiveResult(action, event, _text(payload, "session_id"))
    return LiveResult("ignored", event, _text(payload, "session_id"), reason="not an event live capture reads")


def live_sessions(home: str | Path | None = None) -> list[dict[str, Any]]:
    """Sessions seen through hooks, newest first, with their command counts (for `sessions live`, tests)."""
    with SessionStore(home=home) as store:
        rows = store.conn.execute(
            "SELECT l.source, l.session_key, l.transcript_path, l.cwd, l.started, l.last_event, l.checkpoints, "
            "l.events, l.ended, l.end_reason, COALESCE(s.commands, 0) FROM live_sessions l "
            "LEFT JOIN imported_sessions s ON s.source = l.source AND s.session_key = l.session_key "
            "ORDER BY l.last_event DESC"
        ).fetchall()
    keys = (
        "source",
        "session_id",
        "transcript_path",
        "cwd",
        "started",
        "last_event",
        "checkpoints",
        "events",
        "ended",
        "end_reason",
        "commands",
    )
    return [dict(zip(keys, row, strict=True)) for row in rows]
