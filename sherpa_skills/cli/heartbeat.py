"""`sherpa-skills heartbeat`: once, on a schedule, or its stored reports."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .console import EXIT_ERROR, EXIT_OK, console as _console, print_json as _print_json


def _show(console: Any, report: dict[str, Any]) -> None:
    if report.get("status") == "skipped":
        holder = (report.get("lock") or {}).get("holder") or {}
        console.print(f"[yellow]skipped[/]: another heartbeat holds the lock (pid {holder.get('pid')}, {holder.get('age_secs')} s old)")
        return
    from ..heartbeat.actions import render_markdown

    if report.get("status") == "error":
        console.print(f"[red]heartbeat failed[/]: {report.get('error')}")
        return
    from rich.markdown import Markdown

    console.print(Markdown(render_markdown(report)))


def cmd_heartbeat(args: argparse.Namespace) -> int:
    from ..heartbeat.runner import parse_every, run_every, run_once
    from ..home import resolve_home
    from ..logs import configure

    home = resolve_home(args.home)
    (home / "logs").mkdir(exist_ok=True)
    configure(level="error", json_file=home / "logs" / "heartbeat.jsonl")
    if args.what == "report":
        from ..heartbeat.state import HeartbeatState

        state = HeartbeatState(home)
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

    if args.every:
        schedule = parse_every(args.every)
        try:
            run_every(home, schedule, show, args.watch)
        except KeyboardInterrupt:
            console.print("heartbeat scheduler stopped")
        return EXIT_OK
    report = run_once(home, args.watch)
    show(report)
    return EXIT_OK if report.get("status") in ("ran", "skipped") else EXIT_ERROR


def add_heartbeat_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("heartbeat", parents=[common], help="mine sessions, recompute health, maintain the store (once or on a schedule)",
                       description="Run the heartbeat machine: lock → extract → crystallise → health → maintenance → report → release. "
                                   "`heartbeat report` shows stored reports.")
    p.set_defaults(fn=cmd_heartbeat)
    p.add_argument("what", nargs="?", choices=["run", "report"], default="run")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true", help="one heartbeat (the default)")
    mode.add_argument("--every", metavar="WHEN", help="heartbeats in the foreground every DURATION (30m, 1h…) or on a cron "
                                                      "expression ('*/15 * * * *', @hourly; local time); Ctrl-C stops")
    p.add_argument("--watch", action="append", default=[], metavar="PATH", help="also read these session paths this time")
    p.add_argument("--last", type=int, default=1, help="with `report`: how many reports")
    p.add_argument("--json", action="store_true")
