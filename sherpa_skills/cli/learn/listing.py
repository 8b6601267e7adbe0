"""`learn procedures` and `learn show`: the procedures of the home, and one in full."""

from __future__ import annotations

import argparse
import json

from ..console import EXIT_OK, Folded, compact_table, print_table, visible
from ..console import console as _console
from ..console import print_json as _print_json
from ..console import when as _when
from .common import alias_origin, id_column, open_home, scope_note


def cmd_procedures(args: argparse.Namespace) -> int:
    store = open_home(args).skills
    rows = store.summaries(args.task_type, include_candidates=args.all)
    if args.json:
        _print_json(rows)
        return EXIT_OK
    from rich.table import Column

    # Headers short on purpose (80 columns hold the id and every figure); the task gives way: it wraps.
    table = compact_table(
        id_column(r["id"] for r in rows),
        *(Column(h, no_wrap=True, min_width=len(h)) for h in ("v", "conf", "ok/fail")),
        "health",
        Column("task (steps)", overflow="fold", ratio=1, min_width=10),
    )
    for r in rows:
        # The kind, by what it holds: shell steps, or a workflow's decisions.
        size = f"{r['decisions']} decisions" if r["kind"] == "trajectory" else f"{r['steps']} shell steps"
        table.add_row(
            r["id"],
            str(r["version"]),
            f"{r['confidence']:.2f}",
            f"{r['success_count']}/{r['failure_count']}",
            Folded(r["health"]),
            Folded(f"{r['task_type']} ({size})" + (f": {r['description']}" if r["description"] else "")),
        )
    if rows:
        print_table(_console(), table)
    else:
        _console().print("no procedures yet: capture one (`sherpa-skills learn capture-success --help` says how)")
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    from rich.markup import escape

    shown = open_home(args).skills.show(args.id, args.version)
    p, data, health, executions = shown.procedure, shown.detail, shown.health, shown.executions
    if args.json:
        _print_json(data)
        return EXIT_OK
    console = _console()
    # A candidate is reviewed here before it is promoted: every text as it would run, never as markup or escapes.
    console.print(
        f"[bold]{visible(p.id)}[/] v{p.version} — {visible(p.task_type)} — confidence {p.confidence:.2f} — "
        f"{health.status}"
    )
    if p.description:
        console.print(visible(p.description))
    for i, s in enumerate(p.steps, 1):
        pattern = f", /{visible(s.expected_output_pattern)}/" if s.expected_output_pattern else ""
        extra = f"  [dim]exit {s.expected_exit_code}{pattern}, timeout {s.timeout_secs:g}s[/]"
        console.print(f"  {i}. {visible(s.command)}{extra}")
    for i, d in enumerate(p.decisions, 1):
        arg_text = f" {json.dumps(d.args)}" if d.args else ""
        checks = "".join(f", check {c.action} {json.dumps(c.features)}" for c in d.checks if c.features is not None)
        console.print(
            f"  {i}. in {visible(d.state)}: {visible(d.trigger + arg_text)}  [dim]({d.decided_by}{checks})[/]"
        )
    legacy = (
        f" ({p.legacy_successes} and {p.legacy_failures} from before counts kept their source)"
        if p.legacy_successes or p.legacy_failures
        else ""
    )
    console.print(
        f"versions: {', '.join(str(v['version']) for v in data['versions'])}; "
        f"successes {p.success_count}, failures {p.failure_count}{legacy}; source {p.source}"
        + (f"; status {p.status}" if p.status != "active" else "")
    )

    for c in data["claims"]:  # an agent wrote these words: shown as text, never as markup
        said = f"{c['successes']} success(es)" if c["successes"] else f"{c['failures']} failure(s)"
        note = f": {escape(c['note'])}" if c["note"] else ""
        console.print(f"claim by {escape(c['claimed_by'])} ({c['source']}): {said}, not counted{note}")
    for m in data["promotions"]:
        console.print(
            f"promoted by {m['promoted_by']} on {_when(m['promoted_at'])} (v{m['version']}, was {m['health_before']}"
            + (
                f"; {m['executions_before']} earlier executions and {m['failure_before']} failures no longer count)"
                if m["executions_before"]
                else ")"
            )
        )
    for a in data["aliases"]:
        console.print(f"alias {a['id']}: {escape(repr(a['text']))}  [dim]({alias_origin(a)}{scope_note(a)})[/]")
    for a in data["rejections"]:
        console.print(f"rejected {a['id']}: {escape(repr(a['text']))}  [dim](by {escape(a['by'])}{scope_note(a)})[/]")
    for b in data["branches"]:
        path = " → ".join(f"{d['state']}: {d['trigger']}" for d in b["decisions"])
        console.print(f"branch taken by {b['runs']} run(s), leaving at decision {b['step']} in {b['state']}: {path}")
        console.print(f"  [dim]{b['reason']}[/]")
    for e in executions:
        # A reason quotes the command's stderr: its brackets are text, not rich markup.
        console.print(f"  [dim]{e.outcome:<9} v{e.version} step {e.diverged_step or '-'} {escape(e.reason or '')}[/]")
    return EXIT_OK
