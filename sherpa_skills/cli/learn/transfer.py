"""`learn export` and `learn import`: procedures and learnings as a JSON file, or as Agent Skills."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..console import EXIT_ERROR, EXIT_OK, Bar, hint, hint_words, print_commands
from ..console import console as _console
from ..console import print_json as _print_json
from .common import _quiet_logs, _stores


def cmd_export(args: argparse.Namespace) -> int:
    store, _, _ = _stores(args)
    if args.skills:
        return _export_skills(args, store)
    data: dict[str, Any] = {
        "format": "sherpa-skills/procedures",
        "version": 1,
        "procedures": [
            {
                **p.model_dump(mode="json"),
                "versions": [
                    store.get(p.id, v["version"]).model_dump(mode="json")
                    for v in store.versions(p.id)
                    if v["version"] != p.version
                ],
            }
            for p in store.procedures(status=None)
        ],
        "learnings": [x.model_dump(mode="json") for x in store.learnings(limit=100_000)],
    }
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


def _export_skills(args: argparse.Namespace, store: Any) -> int:
    from ...bridge.skill_export import export_skills
    from ...errors import UsageError
    from ...skills.api import SkillStore

    if args.file:
        raise UsageError("learn export: give FILE or --skills DIR, not both")
    result = export_skills(SkillStore(args.home), args.skills)
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


def _import_skills(args: argparse.Namespace, store: Any) -> int:
    from ...bridge.skill_export import import_skills
    from ...errors import UsageError
    from ...skills.api import SkillStore

    if args.file:
        raise UsageError("learn import: give FILE or --skills DIR, not both")
    result = import_skills(SkillStore(args.home), args.skills)
    if args.json:
        _print_json(result.to_dict())
    else:
        console = _console()
        console.print(
            f"imported {len(result.candidates)} skills as candidates for review, {len(result.known)} already known; "
            "see them and how to promote one with:",
            soft_wrap=False,
        )
        print_commands(console, hint_words(args, "learn", "candidates"))
        for problem in result.problems:
            _console(stderr=True).print(f"  {problem}")
    return EXIT_OK if not result.problems else EXIT_ERROR


def cmd_import(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from ...errors import UsageError
    from ...skills.store.models import CapturedLearning, CapturedProcedure
    from ...skills.store.signatures import step_signature

    store, _, home = _stores(args)
    _quiet_logs(args, home)  # indexing loads the embedder, whose log lines belong in the log file, never in --json
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
    added = skipped = 0
    problems = []
    fresh: list[Any] = []
    listed = data.get("procedures") or []
    with Bar("importing", as_json=args.json) as bar:
        for i, raw in enumerate(listed):
            bar(i, len(listed), "procedures")
            try:
                proc = CapturedProcedure.model_validate({k: v for k, v in raw.items() if k != "versions"})
            except ValidationError as exc:
                first = exc.errors()[0]
                where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
                problems.append(f"procedures[{i}]{where}: {first['msg'].removeprefix('Value error, ')}")
                continue
            known = store.find_by_signature(step_signature(proc.steps), proc.task_type)
            exists = known is not None
            if not exists:
                try:
                    store.get(proc.id)
                    exists = True
                except Exception:
                    exists = False
            if exists:
                skipped += 1
                continue
            # A file's counts are its author's word: kept as a claim, never counted; the steps wait for review.
            stored, _ = store.add_candidate(
                proc,
                "import",
                f"import:{Path(args.file).name}",
                successes=proc.success_count + proc.claimed_successes,
                failures=proc.failure_count + proc.claimed_failures,
                note=f"imported from {args.file}",
            )
            fresh.append(stored)
            added += 1
    for raw in data.get("learnings") or []:
        try:
            store.add_learning(CapturedLearning.model_validate({**raw, "id": None}))
        except ValidationError:
            pass
    from ...skills.match.matcher import Matcher

    # The index embeds the new procedures now, in batches: matching never silently falls back to words alone.
    matcher = Matcher(store)
    warnings = []
    with Bar("indexing", as_json=args.json) as bar:
        for i in range(0, len(fresh), 256):
            bar(i, len(fresh), "imported procedures")
            warnings.append(matcher.index_many(fresh[i : i + 256]))
    warning = next((w for w in warnings if w), None)
    from ...skills.match.failures import FailureFinder

    FailureFinder(store).sync()  # imported learnings are found by meaning on the next plan
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
