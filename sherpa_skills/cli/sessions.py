"""`sherpa-skills sessions …`: import session logs, list what was imported, show one session's commands."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..sessions._detect import FORMATS
from .console import EXIT_ERROR, EXIT_OK, Bar


def _home(args: argparse.Namespace) -> Path:
    from ..home import resolve_home
    from ..logs import configure

    home = resolve_home(args.home)
    (home / "logs").mkdir(exist_ok=True)
    configure(level="error", json_file=home / "logs" / "sessions.jsonl")
    return home


def _print_json(data: Any) -> None:
    import json

    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def cmd_import(args: argparse.Namespace) -> int:
    from rich.console import Console

    from ..sessions._importer import import_paths

    home = _home(args)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    with Bar("importing", as_json=args.json, size=True) as bar:
        files: list[str] = [""]

        def progress(done: int, total: int, result: Any) -> None:
            files[0] = f"file {done}/{total}" if total > 1 else ""

        summary = import_paths(
            [Path(p) for p in args.paths],
            home=home,
            fmt=args.format,
            progress=progress,
            read_progress=(lambda done, total: bar(done, total, files[0])) if bar.shown else None,
        )
    code = EXIT_OK if summary.files else EXIT_ERROR
    mined = None
    if summary.commands and not args.no_mine:
        from ..heartbeat.runner import mine_pending

        with Bar("mining", as_json=args.json) as bar:
            bar(0, None, f"{summary.commands} new commands")
            mined = mine_pending(home)  # None: a heartbeat holds the lock and mines these itself
        if mined is not None:
            summary.new_procedures = int(mined["new_candidates"])
    if args.json:
        _print_json(summary.model_dump(mode="json"))
        return code
    out = Console(highlight=False, soft_wrap=True)
    from rich.markup import escape

    for error in summary.errors:
        err.print(f"[yellow]warning:[/] {escape(error)}")
    if not summary.files:
        err.print("[red]nothing could be read[/]: no session logs at the given paths")
        return code
    out.print(
        f"[bold]{summary.commands}[/] new commands from {summary.files} files ({summary.unchanged_files} unchanged), "
        f"{summary.sessions} sessions: [green]{summary.succeeded} succeeded[/], [red]{summary.failed} failed[/], "
        f"[yellow]{summary.rejected} rejected[/], {summary.unknown} unknown"
        + (f"; {summary.skipped_lines} malformed lines skipped" if summary.skipped_lines else "")
        + (f"; {summary.unreadable_files} unreadable" if summary.unreadable_files else "")
        + (f"; {summary.unrecognised_files} not session logs" if summary.unrecognised_files else "")
    )
    if mined is not None:
        out.print(
            f"mined: {mined['new_candidates']} new candidate procedures, {mined['known']} known procedures seen again, "
            f"{mined['learnings']} failures learned (`sherpa-skills "
            "learn procedures --all`)"
        )
    elif summary.commands and not args.no_mine:
        out.print("a heartbeat is running; it will mine these commands")
    return code


#: `sessions list` shows this many sessions, the latest first (`--json` lists them all).
SESSIONS_SHOWN = 20


def cmd_list(args: argparse.Namespace) -> int:
    from ..stores import Home

    home = _home(args)
    with Home(home) as house:
        store = house.sessions
        files = store.files()
        sessions = store.sessions(None if args.json else SESSIONS_SHOWN)
        totals = {
            "files": len(files),
            "sessions": store.count_sessions(),
            "commands": store.count_commands(),
            "max_command_id": store.max_command_id(),
        }
    if args.json:
        _print_json(
            {
                **totals,
                "imported_files": [f.model_dump(mode="json") for f in files],
                "imported_sessions": [s.model_dump(mode="json") for s in sessions],
            }
        )
        return EXIT_OK
    from rich.console import Console
    from rich.markup import escape

    console = Console(highlight=False, soft_wrap=True)
    if not files:
        console.print("no session logs imported yet: try `sherpa-skills sessions import ~/.claude/projects`")
        return EXIT_OK
    for f in files:
        unread = f" [yellow]({f.size - f.offset} bytes not read yet)[/]" if f.offset < f.size else ""
        pending = f" [yellow]{f.pending_calls} calls waiting for a result[/]" if f.pending_calls else ""
        console.print(
            f"{f.format:<12} {f.commands:>7} commands: [green]{f.succeeded} ok[/] [red]{f.failed} failed[/] "
            f"[yellow]{f.rejected} rejected[/] {f.unknown} unknown, {f.lines_skipped} skipped lines  "
            f"{escape(f.path)}{unread}{pending}"
        )
    console.print(f"{totals['sessions']} sessions, {totals['commands']} commands")
    if sessions:
        _print_sessions(console, sessions, totals["sessions"])
    return EXIT_OK


def _print_sessions(console: Any, sessions: list[Any], total: int) -> None:
    from rich.table import Column, Table

    from .console import Folded, print_table, when

    table = Table(
        Column("session", no_wrap=True, overflow="fold"),
        Column("agent", no_wrap=True),
        Column("where", overflow="fold"),
        Column("started", no_wrap=True),
        Column("cmds", justify="right", no_wrap=True),
        Column("failed", justify="right", no_wrap=True),
        box=None,
        pad_edge=False,
        collapse_padding=True,
    )
    for s in sessions:
        # the id stays whole (it is what capture takes); the folder wraps between its parts
        started = when(s.started) if s.started is not None else "-"  # a history without time stamps
        table.add_row(s.id, s.agent, Folded(_where(s.cwd)), started, str(s.commands), str(s.failed))
    print_table(console, table)
    more = f"the latest {len(sessions)} of {total} (`--json` lists all); " if total > len(sessions) else ""
    example = next((s for s in sessions if s.succeeded + s.unknown), sessions[0])  # one with commands to keep
    console.print(
        f"{more}a session's commands, numbered to pick from for `learn capture-success --steps-from-session`: "
        f"`sherpa-skills sessions show {example.id}`"
    )


def _where(cwd: str | None) -> str:
    """A folder by its last two parts (the project, not the home it is under): the table keeps room for the id."""
    if not cwd:
        return "-"
    parts = cwd.rstrip("/").split("/")
    return cwd if len(parts) <= 3 else "…/" + "/".join(parts[-2:])


_SAID = {"success": "ok", "failure": "failed", "rejected": "refused", "unknown": "no outcome"}


def cmd_show(args: argparse.Namespace) -> int:
    from ..stores import Home

    home = _home(args)
    with Home(home) as house:
        store = house.sessions
        session = store.find_session(args.session_id)
        commands = store.session_commands(session.id, session.agent)
    if args.json:
        _print_json(
            {
                **session.model_dump(mode="json"),
                "command_list": [
                    {
                        "number": c.seq,
                        "command": c.command,
                        "outcome": c.outcome,
                        "exit_code": c.exit_code,
                        "cwd": c.cwd,
                        "timestamp": c.timestamp,
                        "description": c.description,
                        "agent": c.agent,
                    }
                    for c in commands
                ],
            }
        )
        return EXIT_OK
    from rich.console import Console
    from rich.markup import escape

    from .console import when

    console = Console(highlight=False, soft_wrap=True)
    started = when(session.started) if session.started is not None else "-"  # a history without time stamps
    console.print(
        f"[bold]{escape(session.id)}[/] ({session.agent}) in {escape(session.cwd or '-')}, started {started}: "
        f"{session.commands} commands, [green]{session.succeeded} ok[/], "
        f"[red]{session.failed} failed[/], [yellow]{session.rejected} rejected[/], {session.unknown} unknown"
    )
    colour = {"success": "green", "failure": "red", "rejected": "yellow", "unknown": "dim"}
    for c in commands:
        said = f"exit {c.exit_code}" if c.exit_code is not None else _SAID[c.outcome]
        if c.exit_code is not None and c.outcome != ("success" if c.exit_code == 0 else "failure"):
            said += f", {_SAID[c.outcome]}"
        # the command is as stored (redacted): its brackets are text, never markup; its later lines indented
        command = escape(c.command).replace("\n", "\n" + " " * 16)
        console.print(f"{c.seq:>4}. [{colour[c.outcome]}]{escape(said):<9}[/] {command}")
    usable = [c for c in commands if c.outcome in ("success", "unknown")][:5]
    if usable:
        from ..skills.face.text import spec_of, suggest_task_type

        task = suggest_task_type(c.command for c in usable)
        console.print(
            "keep commands as a procedure (failed ones are refused): `sherpa-skills learn capture-success "
            f"{task} --steps-from-session {escape(session.id)} --commands {spec_of([c.seq for c in usable])}`"
        )
    return EXIT_OK


def add_sessions_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    sessions = sub.add_parser(
        "sessions",
        parents=[common],
        help="import agent and shell session logs (for mining procedures)",
        description="Session logs (Claude Code, Codex CLI, bash and zsh histories) read into normalised, "
        "redacted command records.",
    )
    ssub = sessions.add_subparsers(dest="sessions_command", metavar="COMMAND", required=True)

    p = ssub.add_parser(
        "import",
        parents=[common],
        help="import session logs; only what is new since the last import is read",
        description="Import session logs from files or folders (walked recursively). Importing the same file "
        "again imports nothing new; a file that grew imports only its new lines.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument(
        "--format",
        choices=["auto", *FORMATS],
        default="auto",
        help="the logs' format (default: detected from each file's first lines)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object: files, sessions, commands, succeeded, failed, rejected, unknown, "
        "skipped_lines, new_procedures, ...",
    )
    p.add_argument("--no-mine", action="store_true", help="only import; leave mining to the next heartbeat")
    p.set_defaults(fn=cmd_import)

    p = ssub.add_parser(
        "list", parents=[common], help="imported files with their counts, and the sessions in them, latest first"
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="one JSON object: files, sessions, commands, imported_files, imported_sessions (all of them)",
    )
    p.set_defaults(fn=cmd_list)

    p = ssub.add_parser(
        "show",
        parents=[common],
        help="one session's commands, numbered, with their exit codes (redacted as stored)",
        description="One session's commands, numbered as `learn capture-success --commands` takes them. SESSION_ID "
        "is a session's id as `sessions list` shows it, AGENT:ID, or an unambiguous start of it.",
    )
    p.add_argument("session_id", metavar="SESSION_ID")
    p.add_argument("--json", action="store_true", help="the session and its command_list")
    p.set_defaults(fn=cmd_show)
