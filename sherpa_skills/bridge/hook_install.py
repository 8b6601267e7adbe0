"""`hook install` / `hook uninstall`: our live-capture entries merged into an agent's hook settings, and taken out.

Claude Code reads `hooks` from `~/.claude/settings.json` (user) or `.claude/settings.json` (project); Codex from
`~/.codex/hooks.json` or `.codex/hooks.json`, in the same event → matcher group → handlers shape. Only handlers we add
are ours, recognised by their command read as shell words (`…/sherpa-skills hook AGENT [--home H]`); everything else
in the file is kept as it is. A file we change is copied to a timestamped backup first; installing twice changes
nothing the second time, and an older or duplicated entry of ours becomes the one current entry.
"""

from __future__ import annotations

import json
import os
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
#: What Codex needs in config.toml to run hooks at all: `hooks` since 0.130 (on by default in recent releases),
#: `codex_hooks` before (later ones still read it as an alias). Either name unknown to a release is only a warning.
CODEX_FEATURES = (
    "[features]\nhooks = true        # Codex 0.130 and later\ncodex_hooks = true  # the name earlier releases read\n"
)


@dataclass(frozen=True)
class AgentHooks:
    """Where one agent keeps its hooks and which events live capture listens to (event → matcher, None for none)."""

    name: str
    events: dict[str, str | None]
    user_file: str
    project_file: str
    #: Events whose handler runs in the background (`"async": true`): the agent does not wait for it.
    async_events: frozenset[str] = frozenset()
    config_toml: str | None = None


AGENTS: dict[str, AgentHooks] = {
    "claude-code": AgentHooks(
        "claude-code",
        {"PostToolUse": "Bash", "PostToolUseFailure": "Bash", "Stop": None, "SessionEnd": None},
        "~/.claude/settings.json",
        ".claude/settings.json",
        # Each Bash call waits for a synchronous hook; Stop and SessionEnd stay synchronous because they are the
        # last events of a `claude -p` run, whose teardown kills an async hook still running.
        async_events=frozenset({"PostToolUse", "PostToolUseFailure"}),
    ),
    "codex": AgentHooks(
        "codex",
        {"PostToolUse": "Bash", "Stop": None},  # Codex's tool hooks see Bash only; it has no SessionEnd event
        "~/.codex/hooks.json",
        ".codex/hooks.json",
        # No async: Codex releases up to at least 0.153 skip an async handler ("async hooks are not supported yet").
        config_toml=CODEX_FEATURES,
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
    #: Codex: the config.toml that must switch hooks on, and the fragment to put in it (valid TOML).
    config_file: str | None = None
    config_toml: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "file": self.file,
            "changed": self.changed,
            "backup": self.backup,
            "command": self.command,
            "note": self.note,
            "config_file": self.config_file,
            "config_toml": self.config_toml,
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
    """A handler `hook_command` wrote, for any installation path or home: read as the shell reads it, so a quoted
    path with a space is still ours and `echo sherpa-skills hook …` or `… && rm x` never is."""
    command = handler.get("command") if isinstance(handler, dict) else None
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if len(words) >= 2 and Path(words[0]).name == "sherpa-skills":
        rest = words[1:]
    elif len(words) >= 4 and words[1:3] == ["-m", "sherpa_skills"]:
        rest = words[3:]
    else:
        return False
    return rest == ["hook", agent] or (len(rest) == 4 and rest[:3] == ["hook", agent, "--home"])


def _handler(spec: AgentHooks, event: str, command: str) -> dict[str, Any]:
    handler: dict[str, Any] = {"type": "command", "command": command, "timeout": HOOK_TIMEOUT}
    if event in spec.async_events:
        handler["async"] = True
    return handler


def _without_ours(groups: list[Any], agent: str) -> tuple[list[Any], bool]:
    """The groups with our handlers taken out (a group left empty goes too), and whether there were any."""
    kept: list[Any] = []
    found = False
    for group in groups:
        handlers = group.get("hooks") if isinstance(group, dict) else None
        if isinstance(handlers, list) and any(is_ours(h, agent) for h in handlers):
            found = True
            rest = [h for h in handlers if not is_ours(h, agent)]
            if not rest:
                continue
            group = {**group, "hooks": rest}
        kept.append(group)
    return kept, found


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
    """Make our one handler per event the current one: added when missing, replaced when older or duplicated."""
    spec = _agent(agent)
    path = settings_file(agent, scope, directory)
    data = _load(path)
    command = hook_command(agent, home)
    hooks = data.setdefault("hooks", {})
    change = HookChange(agent, str(path), command=command)
    if spec.config_toml is not None:
        change.config_file = str(path.with_name("config.toml"))
        change.config_toml = spec.config_toml
        change.note = (
            f"Codex runs hooks only with its hooks feature on: put the lines below in {change.config_file} "
            "(into its [features] table if it has one; this command does not edit that file). Recent releases also "
            "run a new or changed hook only once you trust it in Codex's /hooks."
        )
    for event, matcher in spec.events.items():
        groups = hooks.setdefault(event, [])
        handler = _handler(spec, event, command)
        current = [
            (g.get("matcher"), h)
            for g in groups
            if isinstance(g, dict) and isinstance(g.get("hooks"), list)
            for h in g["hooks"]
            if is_ours(h, agent)
        ]
        if current == [(matcher, handler)]:
            continue
        kept, _ = _without_ours(groups, agent)
        group: dict[str, Any] = {"matcher": matcher} if matcher else {}
        group["hooks"] = [handler]
        hooks[event] = [*kept, group]
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
        kept, found = _without_ours(hooks[event], agent)
        if not found:
            continue
        change.changed.append(event)
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks and change.changed:
        del data["hooks"]
    if change.changed:
        change.backup = _write(path, data)
    return change
