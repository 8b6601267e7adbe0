"""`learn export` and `learn import`: procedures and learnings as a JSON file, or as Agent Skills."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..console import EXIT_ERROR, EXIT_OK, Bar, hint, hint_words, print_commands
from ..console import console as _console
from ..console import print_json as _print_json
from .common import open_home, quiet_logs

if TYPE_CHECKING:
    from ...skills.api import SkillStore


def cmd_export(args: argparse.Namespace) -> int:
    store = open_home(args).skills
    if args.skills:
        return _export_skills(args, store)
    data = store.export_data()
    text = json.dumps(data, indent=2)
    if args.file and args.file != "-":
        Path(args.file).write_text(text + "\n", encoding="utf-8")
        if args.json:
            _print_json({"exported": len(data["procedures"]), "learnings": len(data["learnings"]), "file": args.file})
        else:
            _console(stderr=True).print(f"exported {len(data['procedures'])} procedures to {args.file}")
    else:
        sys.stdout.write(text + "\n")
    return EXIT_OK


def _export_skills(args: argparse.Namespace, store: SkillStore) -> int:
    from ...bridge.skill_export import export_skills
    from ...errors import UsageError

    if args.file:
        raise UsageError("learn export: give FILE or --skills DIR, not both")
    result = export_skills(store, args.skills)
    if args.json:
        _print_json(result.to_dict())
        return EXIT_OK
    console = _console()
    console.print(f"exported {len(result.exported)} procedures as Agent Skills in {result.directory}")
    for done in result.exported:
        console.print(f"  {done['skill']}  [dim]{done['procedure_id']}[/]")
    for skipped in result.skipped:
        console.print(f"  [dim]skipped {skipped['procedure_id']}: {skipped['reason']}[/]")
    return EXIT_OK


def _import_skills(args: argparse.Namespace, store: SkillStore) -> int:
    from ...bridge.skill_export import import_skills
    from ...errors import UsageError

    if args.file:
        raise UsageError("learn import: give FILE or --skills DIR, not both")
    result = import_skills(store, args.skills)
    if args.json:
        _print_json(result.to_dict())
    else:
        console = _console()
        console.print(
            f"imported {len(result.candidates)} store as candidates for review, {len(result.known)} already known; "
            "see them and how to promote one with:",
            soft_wrap=False,
        )
        print_commands(console, hint_words(args, "learn", "candidates"))
        for problem in result.problems:
            _console(stderr=True).print(f"  {problem}")
    return EXIT_OK if not result.problems else EXIT_ERROR


def cmd_import(args: argparse.Namespace) -> int:
    from ...errors import UsageError

    house = open_home(args)

    store, home = house.skills, house.home
    quiet_logs(args, home)  # indexing loads the embedder, whose log lines belong in the log file, never in --json
    if args.skills:
        return _import_skills(args, store)
    if not args.file:
        raise UsageError("learn import needs FILE (a `learn export` file) or --skills DIR")
    try:
        data = json.loads(Path(args.file).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read {args.file}: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != "sherpa-skills/procedures":
        raise UsageError(f"{args.file} is not a `learn export` file (format sherpa-skills/procedures)")
    with Bar("importing", as_json=args.json) as bar:
        done = store.import_data(data, args.file, progress=lambda i, n: bar(i, n, "procedures"))
    with Bar("indexing", as_json=args.json) as bar:
        warning = store.index_imported(done.fresh, progress=lambda i, n: bar(i, n, "imported procedures"))
    added, skipped, problems, fresh = len(done.fresh), done.skipped, done.problems, done.fresh
    summary = {
        "added": added,
        "candidates": [p.id for p in fresh if p.status == "candidate"],
        "skipped": skipped,
        "problems": problems,
        "indexed": 0 if warning else len(fresh),
        "index_warning": warning,
    }
    if args.json:
        _print_json(summary)
    else:
        console = _console()
        console.print(
            f"imported {added} procedures as candidates for review, skipped {skipped} already known"
            + (f"; {len(problems)} invalid" if problems else "")
            + "; see them and how to promote one with:",
            soft_wrap=False,
        )
        print_commands(console, hint_words(args, "learn", "candidates"))
        if warning:
            _console(stderr=True).print(
                f"procedure index not updated: {warning} (run `{hint(args, 'learn', 'reindex')}`)"
            )
        for p in problems:
            _console(stderr=True).print(f"  {p}")
    return EXIT_OK if not problems else EXIT_ERROR
