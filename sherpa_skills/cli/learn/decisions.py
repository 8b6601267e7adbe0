"""`learn decisions`: the decision memory by workflow and state, and forgetting a state's examples."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..console import EXIT_OK, print_table
from ..console import console as _console
from ..console import print_json as _print_json
from ..console import when as _when
from .common import open_home

if TYPE_CHECKING:
    from ...skills.api import SkillStore


def cmd_decisions(args: argparse.Namespace) -> int:
    store = open_home(args).skills
    if args.forget is not None:
        return _forget_state(args, store)
    if args.states:
        summaries = store.decision_states(args.workflow, args.error_bound)
        if args.json:
            _print_json(summaries)
            return EXIT_OK
        _show_states(summaries)
        return EXIT_OK
    rows = store.decision_counts(args.workflow)
    if args.json:
        _print_json(rows)
        return EXIT_OK
    if not rows:
        _console().print(
            "no decisions learned yet: a workflow that learns (`policy: {learn: true}`) keeps its LLM's decisions"
        )
        return EXIT_OK
    from rich.table import Table

    table = Table("workflow", "state", "trigger", "examples", "last")
    for r in rows:
        table.add_row(r["workflow"], r["state"], r["trigger"], str(r["examples"]), _when(r["last"]))
    print_table(_console(), table)
    _show_states(store.decision_states(args.workflow, args.error_bound))
    return EXIT_OK


def _show_states(summaries: list[dict[str, Any]]) -> None:
    from rich.table import Table

    table = Table(
        "workflow", "state", "examples", "calibrated coverage", "bound", "held", "why it abstains", title="by state"
    )
    for r in summaries:
        table.add_row(
            r["workflow"],
            r["state"],
            str(r["examples"]),
            f"{100 * r['coverage']:.0f} %",
            f"{r['bound']:g}",
            "yes" if r["bound_held"] else "no",
            r["abstains"],
        )
    print_table(_console(), table)


def _forget_state(args: argparse.Namespace, store: SkillStore) -> int:
    """`learn decisions WORKFLOW --forget STATE`: every example of the state, after the workflow changed there."""
    from ...errors import UsageError

    if not args.workflow:
        raise UsageError("learn decisions --forget STATE needs the WORKFLOW whose state it is")
    gone = store.forget_decisions(args.workflow, args.forget)
    if args.json:
        _print_json({"workflow": args.workflow, "state": args.forget, "forgotten": gone})
    else:
        _console().print(f"forgot {gone} example(s) of '{args.forget}' in {args.workflow}")
    return EXIT_OK
