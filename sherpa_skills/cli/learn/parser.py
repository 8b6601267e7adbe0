"""The `learn` command's parser: every subcommand, its flags and the function that runs it."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ...skills.face.models import REPLAY_RULE
from ..console import positive_int
from .answers import cmd_aliases, cmd_floor, cmd_forget
from .capture import cmd_capture
from .decisions import cmd_decisions
from .health import cmd_failures, cmd_health, cmd_stats
from .listing import cmd_procedures, cmd_show
from .maintenance import cmd_promote, cmd_reindex
from .replay import cmd_replay
from .transfer import cmd_export, cmd_import


def _bound(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--error-bound must be a number, not {text!r}") from None
    if not 0 < value <= 0.2:
        raise argparse.ArgumentTypeError(f"--error-bound must be in (0, 0.2], not {value:g}")
    return value


def add_learn_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    learn = sub.add_parser(
        "learn",
        parents=[common],
        help="the skill store: capture, replay and health of procedures",
        description="Procedures captured from successful runs, replayed step by step without the LLM.",
    )
    lsub = learn.add_subparsers(dest="learn_command", metavar="COMMAND", required=True)

    def add(name: str, fn: Callable[[argparse.Namespace], int], help: str) -> argparse.ArgumentParser:
        p = lsub.add_parser(name, parents=[common], help=help, description=help)
        p.set_defaults(fn=fn)
        return p

    p = add(
        "capture-success",
        cmd_capture,
        "crystallise a successful run, a steps file, or commands picked from an imported session, into a procedure",
    )
    p.add_argument("task_type")
    p.add_argument("--from-run", metavar="RUN_ID")
    p.add_argument(
        "--steps-from-session",
        metavar="SESSION_ID",
        help="an imported session (`sessions list`; an unambiguous start of its id will do): its commands that worked",
    )
    p.add_argument(
        "--commands",
        metavar="3-7,9",
        help="with --steps-from-session: only these commands, numbered as `sessions show` numbers them; a failed one "
        "is refused",
    )
    p.add_argument(
        "--steps-file",
        metavar="FILE",
        help="YAML or JSON: a list of steps, or {description, tags, preconditions, postconditions, steps}",
    )
    p.add_argument("--description")
    p.add_argument("--tag", action="append")
    p.add_argument("--procedure", metavar="ID", help="store as the next version of this procedure")
    p.add_argument("--json", action="store_true")

    p = add("procedures", cmd_procedures, "list procedures")
    p.add_argument("--task-type")
    p.add_argument("--all", action="store_true", help="include candidates not yet promoted")
    p.add_argument("--json", action="store_true")

    p = add("show", cmd_show, "one procedure: steps, versions, recent executions")
    p.add_argument("id")
    p.add_argument("--version", type=int)
    p.add_argument("--json", action="store_true")

    p = add("replay", cmd_replay, "find a procedure for QUERY and replay it (a dry run unless --execute)")
    p.add_argument("query")
    p.add_argument("--param", "-p", action="append", metavar="NAME=VALUE")
    p.add_argument("--execute", action="store_true", help="run the steps (asks for confirmation unless --yes)")
    p.add_argument("--yes", "-y", action="store_true", help="execute without asking")
    p.add_argument(
        "--procedure",
        metavar="ID",
        help="replay this procedure instead of matching; with QUERY, the answer to a needs-confirmation, "
        "remembered as an alias",
    )
    p.add_argument(
        "--reject", action="store_true", help="the task is none of the offered procedures: remembered, not asked again"
    )
    p.add_argument("--task-type")
    p.add_argument("--cwd", help="where the steps run (default: here)")
    p.add_argument(
        "--min-confidence",
        type=float,
        default=None,
        help="a floor on confidence of your own (0 accepts any); unset, the replay rule decides: 0.8 until a person "
        "promotes the procedure, then its health alone (`learn health --help`)",
    )
    p.add_argument(
        "--verify",
        action="store_true",
        help="a model judges a plausible match: one short multiple-choice LLM call (model: --verify-model, else "
        "SHERPA_SKILLS_VERIFY_MODEL, else SHERPA_SKILLS_MODEL); SHERPA_SKILLS_VERIFY_MODEL alone turns it on too",
    )
    p.add_argument("--verify-model", metavar="MODEL", help="the judge's model (implies --verify)")
    p.add_argument("--json", action="store_true")

    p = add("decisions", cmd_decisions, "the decision memory: how many decisions each workflow's LLM took, by state")
    p.add_argument("workflow", nargs="?", metavar="WORKFLOW")
    p.add_argument(
        "--states",
        action="store_true",
        help="per state: examples, calibrated coverage, whether the bound holds, why it abstains",
    )
    p.add_argument("--error-bound", type=_bound, metavar="DELTA", help="the bound to report at (default: settings')")
    p.add_argument("--forget", metavar="STATE", help="forget every example of STATE (after the workflow changed)")
    p.add_argument("--json", action="store_true")

    p = add("aliases", cmd_aliases, "confirmed wordings (aliases) and rejected ones, of every procedure or one")
    p.add_argument("procedure", nargs="?", metavar="PROCEDURE")
    p.add_argument("--json", action="store_true")

    p = add(
        "floor",
        cmd_floor,
        "the relevance a task needs to replay directly, per scope: the shipped floor, or the one the questions a "
        "person answered in this store give (agents' and model judges' answers are claims, not counted)",
    )
    p.add_argument("--task-type", help="only this task type's scope (default: the unscoped one and every answered one)")
    p.add_argument("--json", action="store_true")

    p = add("forget", cmd_forget, "remove one alias (a<N>) or rejection (r<N>)")
    p.add_argument("id", metavar="ALIAS_ID")
    p.add_argument("--json", action="store_true")

    p = add("health", cmd_health, "rolling success rate and status of every procedure")
    p.epilog = REPLAY_RULE
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("--degraded-only", action="store_true")
    p.add_argument("--json", action="store_true")

    p = add(
        "failures",
        cmd_failures,
        "captured failures (defensive learnings); with --task, those the planner is shown for it",
    )
    p.add_argument(
        "--task",
        metavar="TEXT",
        help="the failures this task is about, found as the planner finds them (by meaning; "
        "those of --task-type always count), each with its relevance and why",
    )
    p.add_argument("--task-type", help="without --task: only this task type's failures")
    p.add_argument("--limit", type=positive_int, default=50)
    p.add_argument("--json", action="store_true")

    p = add("stats", cmd_stats, "tokens and LLM calls saved by replay, per procedure, per workflow and per run")
    p.add_argument(
        "--runs", type=positive_int, default=10, metavar="N", help="show the last N runs (default 10; --json lists all)"
    )
    p.add_argument("--json", action="store_true")

    p = add(
        "reindex",
        cmd_reindex,
        "rebuild the semantic indexes of procedures and learnings from the store, in batches, with progress",
    )
    p.add_argument("--json", action="store_true")

    p = add(
        "promote",
        cmd_promote,
        "make a procedure replayable: a candidate becomes active, promotion counts as its second success, "
        "and its health starts a fresh evidence window (earlier executions kept, not counted)",
    )
    p.add_argument("id")
    p.add_argument("--agent", help="who vouches for it, recorded with the promotion (default: the OS user)")
    p.add_argument("--json", action="store_true")

    p = add("export", cmd_export, "write every procedure and learning as JSON, or procedures as Agent Skills")
    p.add_argument("file", nargs="?", help="output file (default: stdout)")
    p.add_argument(
        "--skills",
        metavar="DIR",
        help="write each healthy shell procedure as DIR/NAME/SKILL.md (agentskills.io) with scripts/replay.sh",
    )
    p.add_argument("--json", action="store_true", help="with FILE: print a JSON summary")

    p = add("import", cmd_import, "read procedures from a `learn export` file, or Agent Skills; known ones are skipped")
    p.add_argument("file", nargs="?")
    p.add_argument(
        "--skills",
        metavar="DIR",
        help="read SKILL.md folders: ours come back as procedures, hand-written ones as candidates for review",
    )
    p.add_argument("--json", action="store_true")

    from ..review import add_review_commands

    add_review_commands(add)
