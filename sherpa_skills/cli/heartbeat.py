"""`sherpa-skills heartbeat`: once, on a schedule, or its stored reports."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from ..engine.hooks import HookReport, RunHook
from .console import EXIT_ERROR, EXIT_OK, positive_int
from .console import console as _console
from .console import print_json as _print_json

if TYPE_CHECKING:
    from ..engine.run.result import RunResult
    from ..engine.run.view import RunView


def _show(console: Any, report: dict[str, Any]) -> None:
    if report.get("status") == "skipped":
        holder = (report.get("lock") or {}).get("holder") or {}
        console.print(
            f"[yellow]skipped[/]: another heartbeat holds the lock (on {holder.get('host')}, pid {holder.get('pid')}, "
            f"{holder.get('age_secs')} s old)"
        )
        return
    from ..heartbeat.actions import render_markdown

    if report.get("status") == "error":
        console.print(f"[red]heartbeat failed[/]: {report.get('error')}")
        return
    from rich.markdown import Markdown

    console.print(Markdown(render_markdown(report)), soft_wrap=False)  # soft wrap would crop a long alert at the edge


class _Progress(RunHook):
    """On a terminal (never with --json): a line per finished phase with its own time,
    and a spinner while the next one works. A run hook: it hears each transition and the run's stop."""

    def __init__(self, console: Any | None):
        import time

        self.clock = time.monotonic
        self.status = None
        self.console = console
        self.phase: str | None = None  # the state whose work is running now
        if console is not None and console.is_terminal:
            self.status = console.status("heartbeat: taking the lock")
            self.status.start()
        self.since = self.clock()

    def on_stop(self, *, run: RunView, result: RunResult) -> HookReport | None:
        if self.console is not None and self.status is not None:
            # The run ended (its final state does no work); with --every, the next one starts afresh.
            self.phase = None
            self.status.update("heartbeat: waiting for the next one")
        return None

    def on_transition(
        self, *, run: RunView, state: str, trigger: str | None, source: str | None, decided_by: str, tick: int
    ) -> None:
        if self.console is None or self.status is None:
            return
        # The engine reports a state as it enters it, before its on_enter actions (the phase's work) run:
        # entering one state is when the one before it has finished.
        step = str(state).rsplit("/", 1)[-1]
        now = self.clock()
        if self.phase is not None:
            self.console.print(f"  [green]✓[/] {self.phase} [dim]{now - self.since:.1f} s[/]")
        self.phase, self.since = step, now
        self.status.update(f"heartbeat: {step}")

    def stop(self) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None


def cmd_heartbeat(args: argparse.Namespace) -> int:
    from ..heartbeat.runner import parse_every, run_every, run_once
    from ..home import resolve_home
    from ..logs import configure

    home = resolve_home(args.home)
    (home / "logs").mkdir(exist_ok=True)
    configure(level="error", json_file=home / "logs" / "heartbeat.jsonl")
    if args.what == "report":
        from ..heartbeat.state import HeartbeatState
        from ..stores import Home

        with Home(home) as house:
            state = HeartbeatState(house.database)
            try:
                reports = state.reports(args.last)
            finally:
                state.close()
        if args.json:
            _print_json([{k: v for k, v in r.items() if k != "markdown"} for r in reports])
        else:
            for r in reversed(reports):
                sys.stdout.write(r["markdown"] + "\n")
            if not reports:
                sys.stdout.write("no heartbeat has run yet\n")
        return EXIT_OK
    console = _console(stderr=args.json)

    def show(report: dict[str, Any]) -> None:
        if args.json:
            _print_json(report)
            sys.stdout.flush()
        else:
            _show(console, report)

    progress = _Progress(None if args.json else _console(stderr=True))
    if args.every:
        schedule = parse_every(args.every)
        try:
            run_every(home, schedule, show, args.watch, progress=progress)
        except KeyboardInterrupt:
            console.print("heartbeat scheduler stopped")
        finally:
            progress.stop()
        return EXIT_OK
    try:
        report = run_once(home, args.watch, progress=progress)
    finally:
        progress.stop()
    show(report)
    return EXIT_OK if report.get("status") in ("ran", "skipped") else EXIT_ERROR


def add_heartbeat_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "heartbeat",
        parents=[common],
        help="mine sessions, recompute health, maintain the store (once or on a schedule)",
        description="Run the heartbeat machine: lock → extract → crystallise → health → maintenance "
        "→ report → release. `heartbeat report` shows stored reports.",
    )
    p.set_defaults(fn=cmd_heartbeat)
    p.add_argument("what", nargs="?", choices=["run", "report"], default="run")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true", help="one heartbeat (the default)")
    mode.add_argument(
        "--every",
        metavar="WHEN",
        help="heartbeats in the foreground every DURATION (30m, 1h…) or on a cron "
        "expression ('*/15 * * * *', @hourly; local time); Ctrl-C stops",
    )
    p.add_argument(
        "--watch", action="append", default=[], metavar="PATH", help="also read these session paths this time"
    )
    p.add_argument("--last", type=positive_int, default=1, help="with `report`: how many reports")
    p.add_argument("--json", action="store_true")
