"""`sherpa-skills hook …`: live capture from an agent's hooks, and putting those hooks in place.

`hook claude-code` / `hook codex` is what the agent runs on each event: it reads the event on stdin, stores it, prints
nothing and exits 0 whatever happens (a problem goes to HOME/logs/hooks.jsonl), so it never blocks or slows the agent.
`main` sends `hook AGENT` here before building the whole parser: the hook is a fresh process per event.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

LIVE_AGENTS = ("claude-code", "codex")


def _read_stdin(limit: int) -> bytes:
    """At most `limit` + 1 bytes of stdin; the rest is drained so the agent never blocks writing it."""
    stream = sys.stdin.buffer
    data = stream.read(limit + 1)
    while len(data) > limit and stream.read(1 << 20):
        pass
    return data


def _log_problem(home: str | None, agent: str, problem: str, payload: dict[str, Any] | None = None) -> None:
    """One warning line in HOME/logs/hooks.jsonl; structlog is imported only when there is something to say."""
    try:
        from ..home import resolve_home
        from ..logs import configure

        folder = resolve_home(home) / "logs"
        folder.mkdir(parents=True, exist_ok=True)
        configure(level="critical", json_file=folder / "hooks.jsonl")
        import structlog

        event = (payload or {}).get("hook_event_name")
        structlog.get_logger("sherpa_skills.hook").warning(
            "hook_event_not_stored", agent=agent, problem=problem[:500], hook_event=str(event)[:80] if event else None
        )
    except Exception:  # noqa: BLE001  the hook must exit 0 even when the log cannot be written
        pass


def run_hook(agent: str, home: str | None) -> int:
    """Read one event from stdin and store it; always 0, never a byte on stdout."""
    payload: dict[str, Any] | None = None
    try:
        from ..sessions.live import MAX_PAYLOAD, HookPayloadError, capture, parse_payload

        try:
            payload = parse_payload(_read_stdin(MAX_PAYLOAD))
            capture(agent, payload, home)
        except HookPayloadError as exc:
            _log_problem(home, agent, str(exc), payload)
    except BaseException as exc:  # noqa: BLE001  a hook that fails must not fail the agent's tool call
        _log_problem(home, agent, f"{type(exc).__name__}: {exc}", payload)
    return 0


def fast_hook(argv: Sequence[str]) -> int | None:
    """`hook claude-code|codex [--home H]` without the full parser; None when argv is anything else."""
    if len(argv) < 2 or argv[0] != "hook" or argv[1] not in LIVE_AGENTS:
        return None
    parser = argparse.ArgumentParser(prog=f"sherpa-skills hook {argv[1]}", add_help=False)
    parser.add_argument("--home")
    parser.add_argument("--database")
    parser.add_argument("--verbose", "-v", action="count", default=0)
    known, _ = parser.parse_known_args(list(argv[2:]))
    from ..db.url import choose

    try:
        choose(known.database)
    except Exception as exc:  # noqa: BLE001  a hook never fails the agent's tool call: logged, exit 0
        _log_problem(known.home, argv[1], str(exc))
        return 0
    return run_hook(argv[1], known.home)


def cmd_hook_event(args: argparse.Namespace) -> int:
    return run_hook(args.hook_agent, args.home)


def cmd_hook_change(args: argparse.Namespace) -> int:
    import os

    from ..bridge.hook_install import Scope, install, uninstall
    from .console import EXIT_OK
    from .console import console as _console
    from .console import print_json as _print_json

    scope: Scope = "project" if args.project else "user"
    if args.hook_command == "install":
        # The agent runs the hook without this shell's environment: a home chosen here is written into the command.
        change = install(args.agent, scope, args.dir, args.home or os.environ.get("SHERPA_SKILLS_HOME") or None)
    else:
        change = uninstall(args.agent, scope, args.dir)
    if args.json:
        _print_json(change.to_dict())
        return EXIT_OK
    console = _console()
    verb = "added to" if args.hook_command == "install" else "removed from"
    if change.changed:
        console.print(f"{', '.join(change.changed)} hooks {verb} {change.file}")
        if change.backup:
            console.print(f"[dim]the previous file is kept as {change.backup}[/]")
    else:
        console.print(f"nothing to change in {change.file}")
    if change.note and args.hook_command == "install":
        console.print(f"[yellow]{change.note}[/]")
    return EXIT_OK


def add_hook_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    hook = sub.add_parser(
        "hook",
        parents=[common],
        help="live capture: the command an agent's hooks run, and putting the hooks in place",
        description="Live capture from Claude Code and Codex hooks: `hook AGENT` stores one hook event read on "
        "stdin (nothing on stdout, exit 0 always); `hook install AGENT` merges the entries into the agent's settings.",
    )
    hsub = hook.add_subparsers(dest="hook_command", metavar="COMMAND", required=True)
    for agent in LIVE_AGENTS:
        p = hsub.add_parser(
            agent, parents=[common], help=f"store one {agent} hook event read on stdin (what the hook entry runs)"
        )
        p.set_defaults(fn=cmd_hook_event, hook_agent=agent)
    for name, what in (
        ("install", "merge live-capture hooks into the agent's settings (a backup first; idempotent)"),
        ("uninstall", "remove exactly the hooks `hook install` added"),
    ):
        p = hsub.add_parser(name, parents=[common], help=what, description=what)
        p.set_defaults(fn=cmd_hook_change)
        p.add_argument("agent", choices=LIVE_AGENTS)
        where = p.add_mutually_exclusive_group()
        where.add_argument(
            "--user", action="store_true", help="~/.claude/settings.json or ~/.codex/hooks.json (the default)"
        )
        where.add_argument(
            "--project", action="store_true", help=".claude/settings.json or .codex/hooks.json in --dir (default: here)"
        )
        p.add_argument("--dir", help="the project folder for --project (default: the current folder)")
        p.add_argument("--json", action="store_true", help="print {agent, file, changed, backup, command, note}")
