"""`sherpa-skills db copy --from HOME --to postgresql://…` (and back): a store moved to another database, checked by
counts."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from .console import EXIT_ERROR, EXIT_OK, Bar, console, print_json

if TYPE_CHECKING:
    from ..db.components import Component


def add_db_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    db = sub.add_parser("db", parents=[common], help="move the truth store between databases")
    dsub = db.add_subparsers(dest="db_command", metavar="COMMAND", required=True)
    help = "copy a store (a home folder, or a postgresql:// URL) into an empty one, and compare every table's rows"
    p = dsub.add_parser("copy", parents=[common], help=help, description=help)
    p.set_defaults(fn=cmd_db_copy)
    p.add_argument("--from", dest="source", required=True, metavar="HOME|URL", help="the home folder or database read")
    p.add_argument(
        "--to",
        dest="target",
        required=True,
        metavar="HOME|URL",
        help="the home folder (created if missing) or database written; it must hold no rows yet",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help='print {"source", "target", "tables": [{"name", "source", "target"}], "skipped", "rebuilt", "ok"}',
    )


def cmd_db_copy(args: argparse.Namespace) -> int:
    from ..db.copy import copy_store
    from ..db.endpoints import is_url
    from ..db.url import check_command_line

    for spec, option in ((args.source, "--from"), (args.target, "--to")):
        if is_url(spec):
            check_command_line(spec, option=option)
    with Bar("copying", as_json=args.json) as bar:
        report = copy_store(
            args.source, args.target, store_components(), progress=lambda table, done, total: bar(done, total, table)
        )
    if args.json:
        print_json(report.model_dump())
    else:
        out = console()
        width = max([len(t.name) for t in report.tables] + [5])
        out.print(f"copied {report.source} → {report.target}")
        out.print(f"  {'table':<{width}}  {'source':>8}  {'target':>8}")
        for table in report.tables:
            mark = "" if table.source == table.target else "  [red]differs[/]"
            out.print(f"  {table.name:<{width}}  {table.source:>8}  {table.target:>8}{mark}")
        for skipped in report.skipped:
            out.print(f"  [dim]skipped {skipped.name}: {skipped.reason}[/]")
        if report.rebuilt:
            out.print(f"  rebuilt from the copied rows: {', '.join(report.rebuilt)}")
    if not report.ok:
        differing = ", ".join(t.name for t in report.tables if t.source != t.target)
        sys.stderr.write(f"sherpa-skills: the counts differ after the copy: {differing}\n")
        return EXIT_ERROR
    return EXIT_OK


def store_components() -> list[Component]:
    """Every part of the truth store and its migrations, imported only when a copy asks (so `--help` stays fast)."""
    from ..agents.task_store import COMPONENT as teams
    from ..agents.task_store import MIGRATIONS as team_tasks
    from ..agents.task_store import MOVED_FROM as teams_moved_from
    from ..db.components import Component
    from ..engine.run_schema import MIGRATIONS as runs
    from ..heartbeat.state import MIGRATIONS as heartbeat
    from ..memory._schema import MIGRATIONS as memory
    from ..memory.domains import MIGRATIONS as domains
    from ..sessions._store import MIGRATIONS as sessions
    from ..skills.face.models import MIGRATIONS as skills
    from ..skills.face.models import fill_fts

    return [
        Component("runs", runs),
        Component(teams, team_tasks, moved_from=teams_moved_from),
        Component("heartbeat", heartbeat),
        Component("skills", skills, refill=fill_fts),
        Component("sessions", sessions),
        Component("memory", memory),
        Component("domains", domains),
    ]
