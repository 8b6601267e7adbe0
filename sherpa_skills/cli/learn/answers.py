"""`learn aliases`, `learn forget` and `learn floor`: the wordings confirmed or rejected for procedures, and the
relevance floor those answers give."""

from __future__ import annotations

import argparse

from ..console import EXIT_OK, print_table
from ..console import console as _console
from ..console import print_json as _print_json
from .common import alias_origin, id_column, open_home


def cmd_aliases(args: argparse.Namespace) -> int:
    store = open_home(args).skills
    answers = store.aliases(args.procedure)
    if args.json:
        _print_json([a.model_dump(mode="json") for a in answers])
        return EXIT_OK
    if not answers:
        _console().print("no aliases or rejections yet: they are recorded when a needs-confirmation is answered")
        return EXIT_OK
    from rich.table import Table

    table = Table("id", "kind", id_column([a.procedure_id for a in answers], "procedure"), "wording", "scope", "from")
    for a in answers:
        origin = alias_origin(a.model_dump()) if a.kind == "alias" else f"rejected by {a.by}"
        table.add_row(a.id, a.kind, a.procedure_id, a.text, a.scope or "-", origin)
    print_table(_console(), table)
    return EXIT_OK


def cmd_forget(args: argparse.Namespace) -> int:
    answer = open_home(args).skills.forget(args.id)
    if args.json:
        _print_json({"forgotten": answer.model_dump(mode="json")})
    else:
        _console().print(f"forgot {answer.kind} {answer.id} of {answer.procedure_id}: {answer.text!r}")
    return EXIT_OK


def cmd_floor(args: argparse.Namespace) -> int:
    floors = open_home(args).skills.match_floors(args.task_type)
    if args.json:
        _print_json([f.model_dump(mode="json") for f in floors])
        return EXIT_OK
    from rich.table import Table

    table = Table(
        "scope", "floor", "basis", "answered by people", "saying wrong", "replays held", "claims (not counted)"
    )
    for f in floors:
        table.add_row(
            f.scope or "(none)", f"{f.floor:.4g}", f.basis, str(f.counted), str(f.wrong), str(f.held), str(f.claims)
        )
    print_table(_console(), table)
    for f in floors:
        _console().print(f"{f.scope or '(none)'}: {f.reason}", markup=False, highlight=False)
    return EXIT_OK
