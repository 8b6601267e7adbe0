"""Claude Code transcripts (`~/.claude/projects/**/*.jsonl`, sub-agents in `<session>/subagents/agent-*.jsonl`).

Each Bash `tool_use` (an assistant message content item) is paired with its `tool_result` (a user
message content item) by id. The outcome comes from `is_error`, and the exit code from the
`Exit code N` prefix newer versions put on a failed result. A call the user rejected or interrupted,
or that permission settings refused, is `rejected`, not a failure. A command sent to the background
has no exit status in the log: `unknown`.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from pathlib import Path
from typing import Any

from ._base import LineParser, load_json_object
from ._records import CommandRecord, as_dict, as_int, clean_command, clean_info, clean_text, excerpt, iso_to_epoch

FORMAT = "claude-code"
SHELL_TOOLS = frozenset({"Bash"})

_REJECTED_PREFIXES = (
    "The user doesn't want to proceed with this tool use",
    "The user does not want to proceed with this tool use",
    "[Request interrupted by user",
    "User rejected tool use",
    "Claude requested permissions to use",  # refused by the permission settings, never asked
)
_DENIED = re.compile(r"^Permission to use \S+ .*has been denied", re.S)
_EXIT_CODE = re.compile(r"^(?:Error: )?Exit code (-?\d+)[ \t]*\n?")
_BACKGROUND = re.compile(r"^Command running in background with ID: (\S+)")
_PERSISTED = re.compile(r"Full output saved to: (.+?)\s*\n")
_PREVIEW = re.compile(r"Preview \(first [^)]*\):\n", re.S)
#: Sidechain uuid -> thread root entries kept between imports (only recent lines ever continue a thread).
_MAX_ROOTS = 4000


def result_text(content: object) -> str:
    """A tool_result's content as text: a string, or the text items of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for item in content:
            if isinstance(item, dict):
                if item.get("type") == "text" and isinstance(item.get("text"), str):
                    parts.append(item["text"])
            elif isinstance(item, str):
                parts.append(item)
        return "\n".join(parts)
    return "" if content is None else str(content)


def is_rejection(text: str, tool_use_result: object) -> bool:
    head = text.lstrip()[:300]
    if head.startswith(_REJECTED_PREFIXES) or _DENIED.match(head):
        return True
    if isinstance(tool_use_result, str):
        return tool_use_result.startswith(("User rejected tool use", "Error: [Request interrupted by user"))
    return isinstance(tool_use_result, dict) and tool_use_result.get("interrupted") is True


class ClaudeCodeParser(LineParser):
    def __init__(self, path: Path, state: dict[str, Any]):
        super().__init__(path, state)
        self.pending: dict[str, dict[str, Any]] = dict(state.get("pending", {}))
        self.roots: OrderedDict[str, str] = OrderedDict(state.get("roots", {}))
        self.default_session = path.stem

    # ------------------------------------------------------------------ lines

    def feed(self, line: bytes, lineno: int, offset: int) -> None:
        if not line.strip():
            return
        entry = load_json_object(line)
        if entry is None:
            self.skip(lineno)
            return
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        sidechain = entry.get("isSidechain") is True
        if sidechain:
            self._remember_thread(entry)
        if not isinstance(content, list):
            return
        for item in content:
            if not isinstance(item, dict):
                continue
            kind = item.get("type")
            if kind == "tool_use" and item.get("name") in SHELL_TOOLS:
                self._tool_use(entry, item, lineno, sidechain)
            elif kind == "tool_result" and item.get("tool_use_id") in self.pending:
                self._tool_result(entry, item)

    def _remember_thread(self, entry: dict[str, Any]) -> None:
        uuid, parent = entry.get("uuid"), entry.get("parentUuid")
        if not isinstance(uuid, str):
            return
        root = self.roots.get(parent, parent) if isinstance(parent, str) else uuid
        self.roots[uuid] = root
        if len(self.roots) > _MAX_ROOTS * 2:
            for _ in range(len(self.roots) - _MAX_ROOTS):
                self.roots.popitem(last=False)

    def _agent(self, entry: dict[str, Any], sidechain: bool) -> str | None:
        agent = entry.get("agentId")
        if isinstance(agent, str) and agent:
            return agent
        if sidechain and isinstance(entry.get("uuid"), str):
            # Older versions write sub-agent turns inline: one thread per sub-agent, told apart by its root.
            return "sidechain:" + self.roots.get(entry["uuid"], entry["uuid"])[:8]
        return None

    def _tool_use(self, entry: dict[str, Any], item: dict[str, Any], lineno: int, sidechain: bool) -> None:
        call_id = item.get("id")
        tool_input = as_dict(item.get("input"))
        command = tool_input.get("command")
        if not isinstance(call_id, str) or not isinstance(command, str) or not command.strip():
            return
        session = entry["sessionId"] if isinstance(entry.get("sessionId"), str) else self.default_session
        info: dict[str, Any] = {}
        if tool_input.get("run_in_background") is True:
            info["background"] = True
        if isinstance(entry.get("version"), str):
            info["version"] = entry["version"]
        if isinstance(entry.get("gitBranch"), str) and entry["gitBranch"]:
            info["git_branch"] = entry["gitBranch"]
        description = tool_input.get("description")
        record = CommandRecord(
            key=call_id,
            session_id=session,
            command=clean_command(command),
            outcome="unknown",
            line=lineno,
            timestamp=iso_to_epoch(entry.get("timestamp")),
            cwd=clean_text(entry.get("cwd")) if isinstance(entry.get("cwd"), str) else None,
            tool=str(item.get("name")),
            agent=self._agent(entry, sidechain),
            sidechain=sidechain,
            description=clean_text(description) if isinstance(description, str) else None,
            info=clean_info(info),
        )
        self.pending[call_id] = record.to_state()

    def _tool_result(self, entry: dict[str, Any], item: dict[str, Any]) -> None:
        record = CommandRecord.from_state(self.pending.pop(item["tool_use_id"]))
        text = result_text(item.get("content"))
        tool_use_result = entry.get("toolUseResult")
        finished = iso_to_epoch(entry.get("timestamp"))
        if finished is not None and record.timestamp is not None and finished >= record.timestamp:
            record.duration = round(finished - record.timestamp, 3)
        info = dict(record.info)
        match = _EXIT_CODE.match(text)
        background = _BACKGROUND.match(text)
        if is_rejection(text, tool_use_result):
            record.outcome = "rejected"
        elif match:
            record.exit_code = int(match.group(1))
            record.outcome = "success" if record.exit_code == 0 else "failure"
            text = text[match.end() :]
        elif item.get("is_error") is True:
            record.outcome = "failure"
        elif (
            background
            or info.get("background")
            or (isinstance(tool_use_result, dict) and tool_use_result.get("backgroundTaskId"))
        ):
            record.outcome = "unknown"  # still running when the log moved on; its exit status is not recorded here
            info["background"] = True
            task = background.group(1) if background else None
            if task is None and isinstance(tool_use_result, dict):
                task = tool_use_result.get("backgroundTaskId")
            if task:
                info["background_id"] = str(task)
        else:
            record.outcome = "success"
        if isinstance(tool_use_result, dict):
            code = as_int(tool_use_result.get("exitCode", tool_use_result.get("exit_code")))
            if code is not None and record.exit_code is None and record.outcome in ("success", "failure"):
                record.exit_code = code
            if isinstance(tool_use_result.get("returnCodeInterpretation"), str):
                info["return_code_interpretation"] = tool_use_result["returnCodeInterpretation"]
        if text.lstrip().startswith("<persisted-output>"):
            text = self._persisted_output(text, tool_use_result, record.session_id, info)
        record.output = excerpt(text)
        record.info = clean_info(info)
        self.emit(record)

    def _persisted_output(self, text: str, tool_use_result: Any, session: str, info: dict[str, Any]) -> str:
        """Large outputs live in a separate file that newer versions name; read it if it is here."""
        named = _PERSISTED.search(text)
        path_text = named.group(1) if named else None
        if isinstance(tool_use_result, dict) and isinstance(tool_use_result.get("persistedOutputPath"), str):
            path_text = tool_use_result["persistedOutputPath"]
        if path_text:
            info["persisted_output"] = path_text
            name = Path(path_text).name
            here = self.path.parent
            for candidate in (
                Path(path_text),
                here / session / "tool-results" / name,
                here.parent / "tool-results" / name,
                here / "tool-results" / name,
            ):
                try:
                    with candidate.open("rb") as handle:
                        data = handle.read(64 * 1024)
                except OSError:
                    continue
                info["persisted_output_found"] = True
                return data.decode("utf-8", errors="replace")
            info["persisted_output_found"] = False
        if (
            isinstance(tool_use_result, dict)
            and isinstance(tool_use_result.get("stdout"), str)
            and tool_use_result["stdout"]
        ):
            return tool_use_result["stdout"] + (
                ("\n" + tool_use_result["stderr"]) if tool_use_result.get("stderr") else ""
            )
        preview = _PREVIEW.search(text)
        return text[preview.end() :] if preview else text

    # ------------------------------------------------------------------ end and state

    def finish(self, *, settled: bool) -> None:
        if settled and self.pending:
            for call_id in list(self.pending):
                record = CommandRecord.from_state(self.pending.pop(call_id))
                record.info = {**record.info, "no_result": True}
                self.emit(record)

    def state(self) -> dict[str, Any]:
        roots = list(self.roots.items())[-_MAX_ROOTS:]
        return {"pending": self.pending, "roots": dict(roots)}
