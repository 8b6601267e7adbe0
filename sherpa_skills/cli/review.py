"""`learn candidates` and `learn reject`: the review queue of procedures mined from sessions."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from .console import EXIT_OK
from .console import console as _console
from .console import print_json as _print_json


def candidate_summary(p: Any) -> dict[str, Any]:
    """What a person needs to decide: the steps, what varies (with examples), how often and where it was seen."""
    mined = p.context.get("mined") or {}
    return {
        "id": p.id,
        "task_type": p.task_type,
        "description": p.description,
        "steps": [s.command for s in p.steps],
        "parameters": mined.get("parameters", {}),
        "support": mined.get("support", p.success_count),
        "sessions": len(mined.get("sessions", [])),
        "successes": p.success_count,
        "long_running_steps": mined.get("long_running_steps", []),
        "project_dir": mined.get("project_dir"),
        "updated": p.updated,
    }


def cmd_candidates(args: argparse.Namespace) -> int:
    from ..home import resolve_home
    from ..skills.store.database import ProcedureDatabase

    store = ProcedureDatabase(home=resolve_home(args.home))
    rows = sorted(
        (candidate_summary(p) for p in store.procedures(args.task_type, "candidate")),
        key=lambda r: (-r["support"], r["task_type"]),
    )
    if args.json:
        _print_json(rows)
        return EXIT_OK
    from rich.markup import escape

    console = _console()
    if not rows:
        console.print("no candidates to review: mined routines appear here once they recur in two sessions or days")
        return EXIT_OK
    for r in rows:
        console.print(
            f"[bold]{r['id']}[/]  {r['task_type']}  [dim]seen {r['support']}× in {r['sessions']} session(s)"
            f"{', ' + str(r['successes']) + ' recorded successes' if r['successes'] else ''}[/]"
        )
        for i, step in enumerate(r["steps"]):
            mark = "  [yellow](long-running: not replayed blindly)[/]" if i in r["long_running_steps"] else ""
            console.print(f"    {i + 1}. {escape(step)}{mark}")
        for name, examples in r["parameters"].items():
            console.print(f"    [cyan]{{{{ {name} }}}}[/] e.g. " + escape(", ".join(repr(e) for e in examples[:3])))
    console.print(
        f"\n{len(rows)} candidate(s): `sherpa-skills learn promote ID` makes one replayable, "
        "`sherpa-skills learn reject ID` drops it for good"
    )
    return EXIT_OK


def cmd_reject(args: argparse.Namespace) -> int:
    from ..errors import UsageError
    from ..home import resolve_home
    from ..skills.store.database import ProcedureDatabase

    store = ProcedureDatabase(home=resolve_home(args.home))
    proc = store.get(args.id)
    if proc.status == "rejected":
        raise UsageError(f"{proc.id} is already rejected")
    proc = store.set_status(proc.id, "rejected")
    if args.json:
        _print_json({"id": proc.id, "status": proc.status})
    else:
        _console().print(f"{proc.id} rejected: it is not replayed, and mining will not propose it again")
    return EXIT_OK


def add_review_commands(
    add: Callable[[str, Callable[[argparse.Namespace], int], str], argparse.ArgumentParser],
) -> None:
    p = add("candidates", cmd_candidates, "mined routines waiting for review: steps, parameters with examples, support")
    p.add_argument("--task-type")
    p.add_argument("--json", action="store_true")

    p = add("reject", cmd_reject, "drop a candidate for good: never replayed, never proposed again")
    p.add_argument("id")
    p.add_argument("--json", action="store_true")
