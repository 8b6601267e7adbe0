"""`learn candidates` and `learn reject`: the review queue — procedures mined from sessions, captured by an agent,
or imported — none of which runs until a person promotes it."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from .console import EXIT_OK, hint_words, open_home, print_commands, visible
from .console import console as _console
from .console import print_json as _print_json


def cmd_candidates(args: argparse.Namespace) -> int:
    from ..skills.face.reading import candidate_summary

    skills = open_home(args).skills
    rows = sorted(
        (candidate_summary(p) for p in skills.candidates(args.task_type)),
        key=lambda r: (-r["support"], r["task_type"]),
    )
    if args.json:
        _print_json(rows)
        return EXIT_OK
    console = _console()
    if not rows:
        console.print("no candidates to review: mined routines appear here once they recur in two sessions or days")
        return EXIT_OK
    for r in rows:
        seen = [f"seen {r['support']}× in {r['sessions']} session(s)"] if r["support"] else []
        if r["successes"]:
            seen.append(f"{r['successes']} success(es) captured here")
        if r["claimed_successes"] or r["claimed_failures"]:
            seen.append(f"claimed {r['claimed_successes']} ok / {r['claimed_failures']} failed, not counted")
        who = ", ".join(t for t in r["tags"] if t.startswith("agent:")) or r["source"]
        # What a person promotes is what they read here: every text as it would run, never as markup or escapes.
        head = f"[bold]{visible(r['id'])}[/]  {visible(r['task_type'])}"
        console.print(f"{head}  [dim]from {visible(who)}; {'; '.join(seen) or 'no evidence'}[/]")
        for check in r["preconditions"]:
            console.print(f"    before: {visible(check)}")
        for i, step in enumerate(r["steps"]):
            mark = "  [yellow](long-running: not replayed blindly)[/]" if i in r["long_running_steps"] else ""
            console.print(f"    {i + 1}. {visible(step)}{mark}")
        for check in r["postconditions"]:
            console.print(f"    after: {visible(check)}")
        for folder in r["cwd"]:
            console.print(f"    runs in: {visible(folder)}")
        for name, examples in r["parameters"].items():
            console.print(
                f"    [cyan]{{{{ {visible(name)} }}}}[/] e.g. " + visible(", ".join(repr(e) for e in examples[:3]))
            )
    console.print(f"\n{len(rows)} candidate(s): promote one to make it replayable, or reject it for good:")
    print_commands(
        console,
        hint_words(args, "learn", "promote", rows[0]["id"]),
        hint_words(args, "learn", "reject", rows[0]["id"]),
    )
    return EXIT_OK


def cmd_reject(args: argparse.Namespace) -> int:
    proc = open_home(args).skills.reject_candidate(args.id)
    if args.json:
        _print_json({"id": proc.id, "status": proc.status})
    else:
        _console().print(f"{proc.id} rejected: it is not replayed, and mining will not propose it again")
    return EXIT_OK


def add_review_commands(
    add: Callable[[str, Callable[[argparse.Namespace], int], str], argparse.ArgumentParser],
) -> None:
    p = add(
        "candidates",
        cmd_candidates,
        "procedures waiting for review (mined, an agent's, imported): every command, parameters, support, claims",
    )
    p.add_argument("--task-type")
    p.add_argument("--json", action="store_true")

    p = add("reject", cmd_reject, "drop a candidate for good: never replayed, never proposed again")
    p.add_argument("id")
    p.add_argument("--json", action="store_true")
