"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`), old and new layouts.

Shell calls (`shell`, `shell_command`, `exec_command`, `local_shell_call`, ...) are paired with their
output and their `exec_command_end` event by `call_id`. The exit code comes from the end event, else
from the output text (`Exit code: N`, `Process exited with code N`, or JSON `metadata.exit_code`),
else from a later `write_stdin` poll of the same process. `exec command rejected by user`, a declined
end event and `aborted` (the user interrupted the turn) are rejections, not failures.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path, PurePath
from typing import Any

from ._base import LineParser, load_json_object
from ._records import (
    CommandRecord,
    as_dict,
    as_int,
    clean_command,
    clean_info,
    clean_text,
    excerpt,
    iso_to_epoch,
    outcome_for_exit,
)

FORMAT = "codex"
SHELL_TOOLS = frozenset(
    {"shell", "shell_command", "exec_command", "container.exec", "local_shell", "unified_exec", "bash"}
)
POLL_TOOLS = frozenset({"write_stdin"})
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "fish", "busybox"})
_POWERSHELLS = frozenset({"powershell", "powershell.exe", "pwsh", "pwsh.exe"})
_HEADER_END = re.compile(r"(?:^|\n)Output:\n")
_EXIT_TEXT = re.compile(r"^(?:Exit code:|Process exited with code)\s*(-?\d+)", re.M)
_RUNNING = re.compile(r"^Process running with session ID (\d+)", re.M)
_WALL = re.compile(r"^Wall time:\s*([0-9.]+)\s*s", re.M)
_REJECTED = ("exec command rejected", "rejected by user", "aborted by user", "This action was rejected")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
_DONE_KEPT = 2000
_ACCUMULATED_LIMIT = 16000


def unwrap_command(command: object) -> str | None:
    """The shell text of a command: `["bash", "-lc", "cmd"]` -> `cmd`; other argv lists are shell-quoted."""
    if isinstance(command, str):
        return command
    if not isinstance(command, list) or not command or not all(isinstance(part, str) for part in command):
        return None
    program = PurePath(command[0]).name.lower()
    if program in _SHELLS:
        for i, arg in enumerate(command[1:-1], start=1):
            if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
                return command[i + 1]
    if program in _POWERSHELLS:
        for i, arg in enumerate(command[1:-1], start=1):
            if arg.lower() in ("-command", "-c"):
                return command[i + 1]
    return shlex.join(command)


def output_text(raw: object) -> tuple[str, bool | None]:
    """(text, success flag if the payload carried one) from a function_call_output's `output`."""
    success = None
    if isinstance(raw, dict):
        success = raw.get("success") if isinstance(raw.get("success"), bool) else None
        raw = raw.get("content", raw.get("output", raw.get("content_items", "")))
    if isinstance(raw, list):
        raw = "\n".join(str(item.get("text", "")) for item in raw if isinstance(item, dict))
    return ("" if raw is None else str(raw)), success


def parse_output(raw: object) -> dict[str, Any]:
    """What an output says: body text, exit code, a process still running, a rejection, a duration."""
    text, success = output_text(raw)
    result: dict[str, Any] = {
        "text": text,
        "exit_code": None,
        "running": None,
        "rejected": False,
        "duration": None,
        "success": success,
    }
    stripped = text.strip()
    if stripped == "aborted" or stripped.startswith(_REJECTED):
        result["rejected"] = True
        return result
    if stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except (ValueError, RecursionError):
            data = None
        if isinstance(data, dict) and "output" in data:
            metadata = as_dict(data.get("metadata"))
            result["text"] = str(data.get("output") or "")
            result["exit_code"] = as_int(metadata.get("exit_code"))
            seconds = metadata.get("duration_seconds")
            result["duration"] = float(seconds) if isinstance(seconds, (int, float)) else None
            return result
    # A header ("Exit code: 1\nWall time: ...\nOutput:\n") precedes the body; only the header is searched.
    end = _HEADER_END.search(text)
    header = text[: end.start()] if end else "\n".join(text.split("\n", 3)[:3])
    if end:
        result["text"] = text[end.end() :]
    code = _EXIT_TEXT.search(header)
    if code:
        result["exit_code"] = int(code.group(1))
    running = _RUNNING.search(header)
    if running and not code:
        result["running"] = running.group(1)
    wall = _WALL.search(header)
    if wall:
        try:
            result["duration"] = float(wall.group(1))
        except ValueError:
            pass
    return result


def _duration(value: object) -> float | None:
    if isinstance(value, dict) and isinstance(value.get("secs"), (int, float)):
        return round(float(value["secs"]) + float(value.get("nanos") or 0) / 1e9, 3)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


class CodexParser(LineParser):
    def __init__(self, path: Path, state: dict[str, Any]):
        super().__init__(path, state)
        uuid = _UUID.search(path.name)
        self.session_id: str = state.get("session_id") or (uuid.group(0) if uuid else path.stem)
        self.meta_seen: bool = state.get("meta_seen", False)
        self.cwd: str | None = state.get("cwd")
        self.pending: dict[str, dict[str, Any]] = dict(state.get("pending", {}))
        self.processes: dict[str, str] = dict(state.get("processes", {}))
        self.polls: dict[str, str] = dict(state.get("polls", {}))
        self.done: dict[str, None] = dict.fromkeys(state.get("done", []))

    # ------------------------------------------------------------------ lines

    def feed(self, line: bytes, lineno: int, offset: int) -> None:
        if not line.strip():
            return
        entry = load_json_object(line)
        if entry is None:
            self.skip(lineno)
            return
        kind = entry.get("type")
        payload = entry.get("payload")
        if not isinstance(payload, dict):
            # The first layout: response items are the lines themselves; the first line is the session meta.
            payload, kind = entry, None
        ts = iso_to_epoch(entry.get("timestamp"))
        ptype = payload.get("type")
        if kind == "session_meta" or (
            kind is None and ptype is None and "id" in payload and ("instructions" in payload or "timestamp" in payload)
        ):
            meta = payload.get("meta")
            self._meta(meta if isinstance(meta, dict) else payload)
        elif kind == "turn_context":
            if isinstance(payload.get("cwd"), str):
                self.cwd = payload["cwd"]
        elif ptype == "exec_command_end":
            self._end(payload, ts, lineno)
        elif ptype in ("function_call", "custom_tool_call", "local_shell_call"):
            self._call(payload, ptype, ts, lineno)
        elif ptype in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            self._output(payload)

    def _meta(self, meta: dict[str, Any]) -> None:
        if not self.meta_seen:  # a resumed or forked session repeats its parent's meta later; the first one names it
            if isinstance(meta.get("id"), str) and meta["id"]:
                self.session_id = meta["id"]
            self.meta_seen = True
        if isinstance(meta.get("cwd"), str) and not self.cwd:
            self.cwd = meta["cwd"]

    def _call(self, payload: dict[str, Any], ptype: str, ts: float | None, lineno: int) -> None:
        call_id = payload.get("call_id") or payload.get("id")
        if not isinstance(call_id, str) or call_id in self.done or call_id in self.pending:
            return
        name = payload.get("name")
        args: dict[str, Any] = {}
        if ptype == "local_shell_call":
            action = as_dict(payload.get("action"))
            args = {"command": action.get("command"), "workdir": action.get("working_directory")}
            name = "local_shell"
        elif ptype == "custom_tool_call":
            args = {"command": payload.get("input")}
        else:
            raw = payload.get("arguments")
            if isinstance(raw, str):
                try:
                    parsed = json.loads(raw)
                except (ValueError, RecursionError):
                    parsed = {"command": raw} if name in SHELL_TOOLS else {}
                args = parsed if isinstance(parsed, dict) else {}
            elif isinstance(raw, dict):
                args = raw
        if name in POLL_TOOLS:
            process = args.get("session_id")
            if process is not None:
                self.polls[call_id] = str(process)
            return
        if name not in SHELL_TOOLS:
            return
        command = unwrap_command(args.get("command", args.get("cmd")))
        if not command or not command.strip():
            return
        cwd = args.get("workdir") or args.get("cwd") or args.get("working_directory")
        if (
            isinstance(cwd, str)
            and self.cwd
            and not cwd.startswith(("/", "~"))
            and not re.match(r"^[A-Za-z]:[\\/]", cwd)
        ):
            cwd = str(PurePath(self.cwd) / cwd)
        record = CommandRecord(
            key=call_id,
            session_id=self.session_id,
            command=clean_command(command),
            outcome="unknown",
            line=lineno,
            timestamp=ts,
            cwd=clean_text(cwd if isinstance(cwd, str) else self.cwd),
            tool=str(name),
        )
        state = record.to_state()
        state["_acc"] = ""
        self.pending[call_id] = state

    def _output(self, payload: dict[str, Any]) -> None:
        call_id = payload.get("call_id")
        if not isinstance(call_id, str):
            return
        if call_id in self.polls:
            self._poll_output(self.polls.pop(call_id), payload.get("output"))
            return
        state = self.pending.get(call_id)
        if state is None:
            return
        parsed = parse_output(payload.get("output"))
        state["_acc"] = (state["_acc"] + parsed["text"])[:_ACCUMULATED_LIMIT]
        state["_seen_output"] = True
        if parsed["duration"] is not None:
            state["duration"] = parsed["duration"]
        if parsed["rejected"]:
            self._finish_call(call_id, "rejected", None, source="output")
        elif parsed["exit_code"] is not None:
            self._finish_call(call_id, outcome_for_exit(parsed["exit_code"]), parsed["exit_code"], source="output")
        elif parsed["running"] is not None:
            self.processes[parsed["running"]] = call_id
            state["_running"] = parsed["running"]
        elif parsed["success"] is False:
            self._finish_call(call_id, "failure", None, source="output")

    def _poll_output(self, process: str, raw: object) -> None:
        call_id = self.processes.get(process)
        state = self.pending.get(call_id) if call_id else None
        if call_id is None or state is None:
            return
        parsed = parse_output(raw)
        state["_acc"] = (state["_acc"] + parsed["text"])[:_ACCUMULATED_LIMIT]
        if parsed["exit_code"] is not None:
            self._finish_call(call_id, outcome_for_exit(parsed["exit_code"]), parsed["exit_code"], source="poll")

    def _end(self, payload: dict[str, Any], ts: float | None, lineno: int) -> None:
        call_id = payload.get("call_id")
        if not isinstance(call_id, str) or call_id in self.done:
            return
        code = as_int(payload.get("exit_code"))
        status = payload.get("status")
        output = (
            payload.get("aggregated_output")
            or payload.get("formatted_output")
            or "".join(part for part in (payload.get("stdout"), payload.get("stderr")) if isinstance(part, str))
        )
        if call_id not in self.pending:
            # No call seen for it: a command the user ran in Codex's shell, or a log cut before the call.
            command = unwrap_command(payload.get("command"))
            if not command or not command.strip():
                return
            cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else self.cwd
            record = CommandRecord(
                key=call_id,
                session_id=self.session_id,
                command=clean_command(command),
                outcome="unknown",
                line=lineno,
                timestamp=ts,
                cwd=clean_text(cwd),
                tool=f"exec:{payload.get('source') or 'event'}",
            )
            state = record.to_state()
            state["_acc"] = ""
            self.pending[call_id] = state
        state = self.pending[call_id]
        if output:
            state["_acc"] = str(output)[:_ACCUMULATED_LIMIT]
        duration = _duration(payload.get("duration"))
        if duration is not None:
            state["duration"] = duration
        if isinstance(payload.get("cwd"), str) and payload["cwd"]:
            state["cwd"] = clean_text(payload["cwd"])
        if status == "declined" or (isinstance(output, str) and output.strip().startswith(_REJECTED)):
            self._finish_call(call_id, "rejected", None, source="end")
        elif code is not None:
            self._finish_call(call_id, outcome_for_exit(code), code, source="end", status=status)
        elif status == "failed":
            self._finish_call(call_id, "failure", None, source="end", status=status)
        else:
            self._finish_call(call_id, "unknown", None, source="end", status=status)

    def _finish_call(self, call_id: str, outcome: str, code: int | None, *, source: str, status: object = None) -> None:
        state = self.pending.pop(call_id)
        accumulated = state.pop("_acc", "")
        running = state.pop("_running", None)
        state.pop("_seen_output", None)
        if running is not None:
            self.processes.pop(running, None)
        record = CommandRecord.from_state(state)
        record.outcome = outcome  # type: ignore[assignment]
        record.exit_code = code
        record.output = excerpt(accumulated) if accumulated else None
        info = dict(record.info)
        info["exit_code_from"] = source
        if isinstance(status, str):
            info["status"] = status
        record.info = clean_info(info)
        self.emit(record)
        self.done[call_id] = None
        if len(self.done) > _DONE_KEPT * 2:
            self.done = dict.fromkeys(list(self.done)[-_DONE_KEPT:])

    # ------------------------------------------------------------------ end and state

    def finish(self, *, settled: bool) -> None:
        for call_id, state in list(self.pending.items()):
            if settled or (state.get("_seen_output") and "_running" not in state):
                # Its output was read and no end event followed: this log does not record the exit status.
                self._finish_call(call_id, "unknown", None, source="none")
        if settled:
            self.polls.clear()

    def state(self) -> dict[str, Any]:
        for state in self.pending.values():
            state["_acc"] = excerpt(state.get("_acc") or "", _ACCUMULATED_LIMIT) or ""  # nothing unredacted is kept
        return {
            "session_id": self.session_id,
            "meta_seen": self.meta_seen,
            "cwd": self.cwd,
            "pending": self.pending,
            "processes": self.processes,
            "polls": self.polls,
            "done": list(self.done)[-_DONE_KEPT:],
        }
