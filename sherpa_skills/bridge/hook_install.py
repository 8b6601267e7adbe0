"""`hook install` / `hook uninstall`: our live-capture entries merged into an agent's hook settings, and taken out.

Claude Code reads `hooks` from `~/.claude/settings.json` (user) or `.claude/settings.json` (project); Codex from
`~/.codex/hooks.json` or `.codex/hooks.json`, in the same event → matcher group → handlers shape. Only groups we add
are ours, recognised by their command (`… sherpa-skills … hook AGENT`); everything else in the file is kept as it is.
A file we change is copied to a timestamped backup first; installing twice changes nothing the second time.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import UsageError

Scope = Literal["user", "project"]
#: Seconds an agent waits for our hook; it answers in well under one, this only bounds a stuck disk.
HOOK_TIMEOUT = 30


@dataclass(frozen=True)
class AgentHooks:
    """Where one agent keeps its hooks and which events live capture listens to (event → matcher, None for none)."""

    name: str
    events: dict[str, str | None]
    user_file: str
    project_file: str
    note: str | None = None


AGENTS: dict[str, AgentHooks] = {
    "claude-code": AgentHooks(
        "claude-code",
        {"PostToolUse": "Bash", "PostToolUseFailure": "Bash", "Stop": None, "SessionEnd": None},
        "~/.claude/settings.json",
        ".claude/settings.json",
    ),
    "codex": AgentHooks(
        "codex",
        {"PostToolUse": "Bash", "Stop": None},  # Codex's tool hooks see Bash only; it has no SessionEnd event
        "~/.codex/hooks.json",
        ".codex/hooks.json",
        note="Codex runs hooks only with the feature switched on: put `[features]` / `codex_hooks = true` in "
        "~/.codex/config.toml (releases that enable hooks by default need nothing). This command does not edit it.",
    ),
}


@dataclass
class HookChange:
    agent: str
    file: str
    changed: list[str] = field(default_factory=list)
    backup: str | None = None
    command: str | None = None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "file": self.file,
            "changed": self.changed,
            "backup": self.backup,
            "command": self.command,
            "note": self.note,
        }


def _agent(name: str) -> AgentHooks:
    if name not in AGENTS:
        raise UsageError(f"unknown agent '{name}'; choose one of: {', '.join(AGENTS)}")
    return AGENTS[name]


def settings_file(agent: str, scope: Scope, directory: str | Path | None = None) -> Path:
    """The file the agent reads its hooks from, for the user or for the project in `directory` (default: here)."""
    spec = _agent(agent)
    if scope == "user":
        if agent == "codex" and os.environ.get("CODEX_HOME"):
            return Path(os.environ["CODEX_HOME"]).expanduser() / "hooks.json"
        return Path(spec.user_file).expanduser()
    return Path(directory or ".").resolve() / spec.project_file


def hook_command(agent: str, home: str | Path | None = None) -> str:
    """The command the agent runs: this installation's `sherpa-skills` by absolute path (a venv need not be on the
    agent's PATH), else `python -m sherpa_skills`; `--home` only when one was given."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is not None and script.name == "sherpa-skills" and script.exists():
        argv = [str(script.resolve())]
    elif found := shutil.which("sherpa-skills"):
        argv = [found]
    else:
        argv = [sys.executable, "-m", "sherpa_skills"]
    argv += ["hook", agent]
    if home is not None:
        argv += ["--home", str(Path(home).expanduser().resolve())]
    return shlex.join(argv)


def is_ours(handler: Any, agent: str) -> bool:
    command = handler.get("command") if isinstance(handler, dict) else None
    if not isinstance(command, str):
        return False
    return (
        re.search(rf"(sherpa-skills|-m sherpa_skills)\b.* hook {re.escape(agent)}( --home \S+)?$", command) is not None
    )


def _load(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        where = f"{path}:{line}" if line else str(path)
        raise UsageError(f"{where}: not valid JSON ({exc}); fix it first, nothing was changed") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: holds a JSON {type(data).__name__}, not an object; nothing was changed")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict) or not all(isinstance(v, list) for v in hooks.values()):
        raise UsageError(f"{path}: 'hooks' must map each event to a list of matcher groups; nothing was changed")
    return data


def _write(path: Path, data: dict[str, Any]) -> str | None:
    """Write the file (atomically), after copying the old one aside; the backup's path, if there was a file."""
    backup = None
    if path.exists():
        backup_path = path.with_name(f"{path.name}.sherpa-skills-backup-{time.strftime('%Y%m%dT%H%M%S')}")
        shutil.copy2(path, backup_path)
        backup = str(backup_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(temporary, path)
    return backup


def install(
    agent: str, scope: Scope = "user", directory: str | Path | None = None, home: str | Path | None = None
) -> HookChange:
    """Add our handler to each event live capture needs, unless an entry of ours is already there."""
    spec = _agent(agent)
    path = settings_file(agent, scope, directory)
    data = _load(path)
    command = hook_command(agent, home)
    hooks = data.setdefault("hooks", {})
    change = HookChange(agent, str(path), command=command, note=spec.note)
    for event, matcher in spec.events.items():
        groups = hooks.setdefault(event, [])
        if any(is_ours(h, agent) for g in groups if isinstance(g, dict) for h in g.get("hooks") or []):
            continue
        group: dict[str, Any] = {"matcher": matcher} if matcher else {}
        group["hooks"] = [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT}]
        groups.append(group)
        change.changed.append(event)
    if change.changed:
        change.backup = _write(path, data)
    return change


def uninstall(agent: str, scope: Scope = "user", directory: str | Path | None = None) -> HookChange:
    """Remove our handlers, and the groups and events they leave empty; nothing else."""
    _agent(agent)
    path = settings_file(agent, scope, directory)
    change = HookChange(agent, str(path))
    data = _load(path)
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return change
    for event in list(hooks):
        kept_groups = []
        for group in hooks[event]:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(handlers, list) and any(is_ours(h, agent) for h in handlers):
                rest = [h for h in handlers if not is_ours(h, agent)]
                if event not in change.changed:
                    change.changed.append(event)
                if not rest:
                    continue
                group = {**group, "hooks": rest}
            kept_groups.append(group)
        if kept_groups or event not in change.changed:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    if not hooks and change.changed:
        del data["hooks"]
    if change.changed:
        change.backup = _write(path, data)
    return change
