"""`learn health`, `learn failures` and `learn stats`: how procedures fare, what failed, what replay saved."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..console import EXIT_OK, Folded, compact_table, print_table
from ..console import console as _console
from ..console import print_json as _print_json
from .common import id_column, open_home, quiet_logs

if TYPE_CHECKING:
    from ...skills.api import SkillStore


def cmd_health(args: argparse.Namespace) -> int:
    reports = open_home(args).skills.health()
    if args.degraded_only:
        reports = [r for r in reports if r.status not in ("healthy", "new")]
    if args.json:
        _print_json([r.model_dump(mode="json") for r in reports])
        return EXIT_OK
    # "success" is the rolling rate over the counted executions; "runs" every execution; the pattern wraps.
    table = compact_table(
        id_column((r.procedure_id for r in reports), "procedure"), "status", "success", "runs", "failure pattern"
    )
    for r in reports:
        rate = (
            "-"
            if r.rolling_success_rate is None
            else f"{r.rolling_success_rate:.0%} of {r.counted_executions}"
            + (" (too few)" if r.counted_executions < r.min_evidence else "")
        )
        table.add_row(
            r.procedure_id, Folded(r.status), Folded(rate), str(r.total_executions), Folded(r.failure_pattern or "")
        )
    if reports:
        print_table(_console(), table)
    else:
        _console().print("nothing to report")
    return EXIT_OK


def cmd_failures(args: argparse.Namespace) -> int:
    house = open_home(args)
    store, home = house.skills, house.home
    if args.task is not None:
        return _failures_for_task(args, store, home)
    rows = store.failures(args.task_type, limit=args.limit)
    if args.json:
        _print_json([r.model_dump(mode="json") for r in rows])
        return EXIT_OK
    from rich.markup import escape

    console = _console()
    for r in rows:
        console.print(
            f"[red]✗[/] {escape(r.command)}  [dim]({r.task_type or '-'}, exit {r.exit_code})[/]\n"
            f"    {escape(r.error[:200])}"
        )
    if not rows:
        console.print("no captured failures")
    return EXIT_OK


def _failures_for_task(args: argparse.Namespace, store: SkillStore, home: Path) -> int:
    """The learnings the planner would be shown for this task: found by meaning, each with its relevance and why."""
    from rich.markup import escape

    from ...errors import UsageError

    if not args.task.strip():
        raise UsageError("--task needs the task's text (what the planner would be asked to do)")
    quiet_logs(args, home)
    found = store.failures_for(args.task, args.task_type, limit=args.limit)
    if args.json:
        _print_json(
            {
                **found.model_dump(mode="json", exclude={"found"}),
                "learnings": [
                    {**x.learning.model_dump(mode="json"), **x.model_dump(mode="json", exclude={"learning"})}
                    for x in found.found
                ],
            }
        )
        return EXIT_OK
    console = _console()
    if found.degraded:
        console.print(f"[yellow]{found.degraded}[/]")
    for x in found.found:
        r = x.learning
        seen = f", failed {r.seen} times" if r.seen > 1 else ""
        console.print(
            f"[red]✗[/] {escape(r.command)}  [dim]({r.task_type or '-'}, exit {r.exit_code}{seen})[/]\n"
            f"    {escape(r.error[:200])}\n"
            f"    [dim]{x.why}[/]"
        )
    if not found.found:
        console.print(
            f"no captured failure is about this task ({found.considered} considered, "
            f"{found.mode} floor {found.floor:g})"
        )
    return EXIT_OK


def cmd_stats(args: argparse.Namespace) -> int:
    data = open_home(args).skills.stats()
    if args.json:
        _print_json(data)
        return EXIT_OK
    # Headers short on purpose, so 80 columns hold a table: "div." diverged replays, "tokens"/"calls" saved.
    table = compact_table(
        id_column((r["procedure_id"] for r in data["per_procedure"]), "procedure"),
        "kind",
        "replays",
        "div.",
        "tokens",
        "calls",
        title="per procedure",
    )
    for r in data["per_procedure"]:
        table.add_row(
            r["procedure_id"],
            r["kind"],
            str(r["replays"]),
            str(r["diverged"]),
            str(r["tokens_saved"]),
            str(r["llm_calls_saved"]),
        )
    console = _console()
    if data["per_procedure"]:
        print_table(console, table)
    if data["per_workflow"]:
        table = compact_table(
            "workflow / task type", "procs", "replays", "div.", "tokens", "calls", title="per workflow"
        )
        for r in data["per_workflow"]:
            table.add_row(
                Folded(r["task_type"]),
                str(r["procedures"]),
                str(r["replays"]),
                str(r["diverged"]),
                str(r["tokens_saved"]),
                str(r["llm_calls_saved"]),
            )
        print_table(console, table)
    recent = data["per_run"][-args.runs :]
    if recent:
        table = compact_table(
            id_column((r["run_id"] for r in recent), "run"),
            id_column((r["procedure_id"] for r in recent), "procedure"),
            "v",
            "outcome",
            "LLM",
            "tokens",
            "calls",
            title=f"last {len(recent)} of {len(data['per_run'])} runs (--json lists all)",
        )
        for r in recent:
            table.add_row(
                r["run_id"],
                r["procedure_id"],
                str(r["version"]),
                Folded(r["outcome"]),
                str(r["llm_calls"]),
                str(r["tokens_saved"]),
                str(r["llm_calls_saved"]),
            )
        print_table(console, table)
    console.print(
        "div.: replays that diverged; tokens, calls: tokens and LLM calls saved; LLM: calls made", soft_wrap=False
    )
    memory = data["decision_memory"]
    if memory["per_workflow"]:
        table = compact_table("workflow", "runs", "answered", "tokens (est.)", title="decision memory")
        for r in memory["per_workflow"]:
            table.add_row(Folded(r["workflow"]), str(r["runs"]), str(r["llm_calls_saved"]), str(r["tokens_saved"]))
        print_table(console, table)
    console.print(
        f"total: {data['replays']} replays, {data['tokens_saved']} tokens and {data['llm_calls_saved']} LLM calls saved"
        + (
            f" ({memory['llm_calls_saved']} calls and {memory['tokens_saved']} tokens by the decision memory)"
            if memory["llm_calls_saved"]
            else ""
        )
    )
    return EXIT_OK
