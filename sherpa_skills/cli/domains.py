"""`sherpa-skills domains …`: agents' domains — liveness, status, decisions, and the proposals waiting for a person."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..engine.inputs import parse_assignments
from .console import EXIT_OK, hint_words, open_home, person, print_commands
from .console import console as _console
from .console import print_json as _print_json
from .console import when as _when

if TYPE_CHECKING:
    from ..memory.domains import Domains


@contextmanager
def _domains(args: argparse.Namespace) -> Iterator[Domains]:
    with open_home(args) as house:
        yield house.domains


def cmd_list(args: argparse.Namespace) -> int:
    with _domains(args) as store:
        rows = store.list()
        proposals = store.proposals()
    if args.json:
        _print_json({"domains": rows, "proposals": proposals})
        return EXIT_OK
    console = _console()
    if not rows:
        console.print("no domains yet: a workflow declaring `domain: NAME` creates its domain on its first run")
        return EXIT_OK
    from rich.table import Table

    table = Table("domain", "agent", "runs", "last run", "outcome", "open proposals")
    for d in rows:
        last = _when(d["last_run"]) + (" [yellow](stale)[/]" if d["stale"] else "")
        table.add_row(d["name"], d["agent"], str(d["runs"]), last, d["last_outcome"] or "-", str(d["open_proposals"]))
    console.print(table)
    for p in proposals:
        console.print(
            f"proposal {p['id']} {p['domain']}.{p['key']} = {p['value']!r} by {p['proposed_by']}"
            + (f": {p['reason']}" if p["reason"] else ""),
            markup=False,
        )
    if proposals:
        # A command that runs as pasted: the first proposal's id, and the person at this terminal as the operator.
        console.print("accept one with:")
        print_commands(console, hint_words(args, "domains", "accept", proposals[0]["id"], "--operator", person()))
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    with _domains(args) as store:
        data = {
            **store.get(args.name),
            "decisions": store.decisions(args.name),
            "changelog": store.changelog(args.name, args.limit),
            "proposals": store.proposals(args.name, "all"),
        }
    if args.json:
        _print_json(data)
        return EXIT_OK
    console = _console()
    console.print(
        f"[bold]{data['name']}[/] (agent {data['agent']}): {data['runs']} runs, last {_when(data['last_run'])}"
    )
    console.print(f"status: {data['status']!r}", markup=False)
    for key, value in data["decisions"].items():
        console.print(f"decision {key} = {value!r}", markup=False)
    for c in data["changelog"]:
        console.print(f"  {_when(c['at'])}  {c['kind']:<8} {c['entry']}", markup=False)
    return EXIT_OK


def cmd_decide(args: argparse.Namespace) -> int:
    from ..errors import UsageError

    values = parse_assignments(args.assignments, "decision")
    if not values:
        raise UsageError("domains decide: give at least one KEY=VALUE")
    with _domains(args) as store:
        for key, value in values.items():
            store.decide(args.name, key, value, by=args.operator)
        decisions = store.decisions(args.name)
    if args.json:
        _print_json({"domain": args.name, "set": values, "by": args.operator, "decisions": decisions})
        return EXIT_OK
    _console().print(f"{args.name}: {', '.join(values)} set by {args.operator}")
    return EXIT_OK


def _settle(accept: bool) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        with _domains(args) as store:
            done = store.settle(args.id, accept=accept, by=args.operator, note=args.note)
        if args.json:
            _print_json(done)
        else:
            _console().print(
                f"proposal {done['id']} {done['status']}: {done['domain']}.{done['key']} = {done['value']!r}",
                markup=False,
            )
        return EXIT_OK

    return run


def add_domains_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "domains",
        parents=[common],
        help="agents' domains: liveness, status, decisions, open proposals",
        description="Each agent declaring `domain: NAME` keeps decisions (set here), a status and a changelog "
        "across its runs; proposals wait here for a person.",
    )
    p.set_defaults(fn=cmd_list)
    p.add_argument("--json", action="store_true")
    dsub = p.add_subparsers(dest="domains_command", metavar="COMMAND")

    def add(name: str, fn: Callable[[argparse.Namespace], int], help: str) -> argparse.ArgumentParser:
        q = dsub.add_parser(name, parents=[common], help=help, description=help)
        q.set_defaults(fn=fn)
        q.add_argument("--json", action="store_true")
        return q

    q = add("show", cmd_show, "one domain: status, decisions, changelog, proposals")
    q.add_argument("name")
    q.add_argument("--limit", type=int, default=20, help="changelog entries (newest first)")
    q = add("decide", cmd_decide, "set decisions (rules, thresholds) the domain's agent reads at each run start")
    q.add_argument("name")
    q.add_argument("assignments", nargs="+", metavar="KEY=VALUE", help="JSON values are parsed")
    q.add_argument("--operator", required=True, help="who decides (recorded in the changelog)")
    for name, accept in (("accept", True), ("reject", False)):
        q = add(name, _settle(accept), f"{name} a proposal" + (": its value becomes the decision" if accept else ""))
        q.add_argument("id")
        q.add_argument("--operator", required=True)
        q.add_argument("--note")
