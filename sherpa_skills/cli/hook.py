"""`sherpa-skills hook …`: live capture from an agent's hooks, and putting those hooks in place.

`hook claude-code` / `hook codex` is what the agent runs on each event: it reads the event on stdin, stores it, prints
nothing and exits 0 whatever happens (a problem goes to HOME/logs/hooks.jsonl), so it never blocks or slows the agent.
`main` sends `hook AGENT` here before building the whole parser: the hook is a fresh process per event.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

LIVE_AGENTS = ("claude-code", "codex")


#: Options the hook reads; a value of its own follows each (`--home H` or `--home=H`).
_VALUE_OPTIONS = ("--home", "--database")
#: Under `hook`, the commands a person runs: they keep the full parser and its usage errors.
_PERSON_COMMANDS = ("install", "uninstall")
_VERBOSE = re.compile(r"-v+|--verbose")


@dataclass
class HookArgs:
    """`hook AGENT` read leniently: what it understood, and every word it had to ignore."""

    agent: str
    home: str | None = None
    database: str | None = None
    ignored: list[str] = field(default_factory=list)


def _read_stdin(limit: int) -> bytes:
    """At most `limit` + 1 bytes of stdin; the rest is drained so the agent never blocks writing it."""
    stream = sys.stdin.buffer
    data = stream.read(limit + 1)
    while len(data) > limit and stream.read(1 << 20):
        pass
    return data


def _log_problem(
    home: str | None,
    agent: str,
    problem: str,
    payload: dict[str, Any] | None = None,
    event: str = "hook_event_not_stored",
) -> None:
    """One warning line in HOME/logs/hooks.jsonl, else in the default home's (the home given may be the problem);
    structlog is imported only when there is something to say."""
    hook_event = (payload or {}).get("hook_event_name")
    for where in dict.fromkeys((home, None)):
        try:
            from ..home import resolve_home
            from ..logs import configure

            folder = resolve_home(where) / "logs"
            folder.mkdir(parents=True, exist_ok=True)
            configure(level="critical", json_file=folder / "hooks.jsonl")
            import structlog

            structlog.get_logger("sherpa_skills.hook").warning(
                event,
                agent=agent[:80],
                problem=problem[:500],
                hook_event=str(hook_event)[:80] if hook_event else None,
            )
            return
        except Exception:  # noqa: BLE001, S112  the hook must exit 0 even when no log can be written
            continue


def run_hook(agent: str, home: str | None) -> int:
    """Read one event from stdin and store it; always 0, never a byte on stdout."""
    payload: dict[str, Any] | None = None
    try:
        from ..sessions.live import MAX_PAYLOAD, SOURCES, HookPayloadError, capture, parse_payload

        try:
            if sys.stdin is None:
                raise HookPayloadError("stdin is closed: no event to read")
            raw = _read_stdin(MAX_PAYLOAD)  # read first, whatever the agent's name: the agent never blocks writing
            if agent not in SOURCES:
                raise HookPayloadError(f"unknown agent '{agent}'; choose one of: {', '.join(SOURCES)}")
            payload = parse_payload(raw)
            capture(agent, payload, home)
        except HookPayloadError as exc:
            _log_problem(home, agent, str(exc), payload)
    except BaseException as exc:  # noqa: BLE001  a hook that fails must not fail the agent's tool call
        _log_problem(home, agent, f"{type(exc).__name__}: {exc}", payload)
    return 0


def _hook_words(argv: Sequence[str]) -> tuple[list[str], list[str]] | None:
    """(options before `hook`, words after it) when argv is `[OPTIONS] hook …`; None for any other command."""
    index = 0
    while index < len(argv):
        word = argv[index]
        if word == "hook":
            return list(argv[:index]), list(argv[index + 1 :])
        if not word.startswith("-"):
            return None
        index += 2 if word in _VALUE_OPTIONS else 1
    return None


def parse_hook_args(before: Sequence[str], after: Sequence[str]) -> HookArgs:
    """What an agent's `hook` command says, never refused: argparse would exit 2 on an unknown word, and exit 2
    feeds stderr to the model after a tool call and keeps the agent from stopping on Stop."""
    args = HookArgs("")
    named = False
    rest = [*before, *after]  # before `hook` come options only: the first bare word is the agent
    while rest:
        word = rest.pop(0)
        name, equals, value = word.partition("=")
        if name in _VALUE_OPTIONS:
            if not equals:
                if not rest:
                    args.ignored.append(f"'{word}' without a value")
                    continue
                value = rest.pop(0)
            setattr(args, name[2:], value)
        elif not word.startswith("-") and not named:
            args.agent, named = word, True
        elif not _VERBOSE.fullmatch(word):  # -v only raises a verbosity the hook never shows
            args.ignored.append(repr(word))
    return args


def fast_hook(argv: Sequence[str]) -> int | None:
    """Whatever an agent runs under `hook`, without the full parser: always 0. None for everything else, and for a
    person's `hook install|uninstall|--help` or an unknown name typed at a terminal (they want the usage error)."""
    split = _hook_words(argv)
    if split is None:
        return None
    before, after = split
    if {"-h", "--help"} & set(after):
        return None
    args = parse_hook_args(before, after)
    if args.agent in _PERSON_COMMANDS or (args.agent not in LIVE_AGENTS and _at_terminal()):
        return None
    if args.ignored:
        _log_problem(args.home, args.agent, f"ignored: {', '.join(args.ignored)}"[:500], event="hook_arguments_ignored")
    from ..db.url import choose

    try:
        choose(args.database)
    except Exception as exc:  # noqa: BLE001  a hook never fails the agent's tool call: logged, exit 0
        _log_problem(args.home, args.agent, str(exc))
        return 0
    return run_hook(args.agent, args.home)


def _at_terminal() -> bool:
    """A person typing, not an agent: agents always pipe the event in."""
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (OSError, ValueError):
        return False


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
    # markup=False: rich would read a path's `[…]`, and the fragment's `[features]`, as its own markup and drop it.
    if change.changed:
        console.print(f"{', '.join(change.changed)} hooks {verb} {change.file}", markup=False)
        if change.backup:
            console.print(f"the previous file is kept as {change.backup}", style="dim", markup=False)
    else:
        console.print(f"nothing to change in {change.file}", markup=False)
    if change.note and args.hook_command == "install":
        console.print(change.note, style="yellow", markup=False)
    if change.config_toml and args.hook_command == "install":
        console.print(f"\n{change.config_toml}", markup=False)
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
