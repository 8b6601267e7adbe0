# PYTHON_ARGCOMPLETE_OK  (argcomplete's marker: global completion may call this command)
"""The `sherpa-skills` command: the parser, and errors shown as one message and an exit code, never a traceback.

argparse keeps `--help` fast; rich and the engine are imported only by the command that needs them.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from .console import EXIT_CODES_EPILOG, EXIT_ERROR, EXIT_USAGE, duration, positive_int
from .runs import (
    cmd_demo,
    cmd_graph,
    cmd_resume,
    cmd_run,
    cmd_runs,
    cmd_runs_delete,
    cmd_runs_prune,
    cmd_show,
    cmd_validate,
)
from .tools import cmd_tools_relevant


class _VersionAction(argparse.Action):
    """`--version` from the installed metadata, read only when asked (importlib.metadata costs ~50 ms)."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str = argparse.SUPPRESS,
        default: str = argparse.SUPPRESS,
        help: str = "show the version and exit",
    ):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        from ..data import package_version

        sys.stdout.write(f"{parser.prog} {package_version()}\n")  # stdout, as argparse's own version action does
        parser.exit()


RUN_STATUSES = (
    "running",
    "waiting",
    "interrupted",
    "final",
    "error",
)  # engine.runstore's, not imported from there so --help stays fast
HOME_HELP = "state folder (default: $SHERPA_SKILLS_HOME or ~/.sherpa-skills)"
DATABASE_HELP = (
    "a postgresql://user@host/db URL: runs are kept there, shared by every machine that names it (default: "
    "$SHERPA_SKILLS_DATABASE, else SQLite in the home); no password in it: ?passfile=FILE, PGPASSFILE or ~/.pgpass"
)
VERBOSE_HELP = "show log lines on stderr: -v info, -vv debug (they always go to HOME/logs/*.jsonl)"


#: Help for options that mean the same in every command, for those a command gives no help of its own.
SHARED_HELP = {
    "--json": "print JSON instead of text (stdout carries the JSON only)",
    "--limit": "show at most this many",
}


def _shared_help(parser: argparse.ArgumentParser) -> None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _shared_help(sub)
        elif action.help is None:
            action.help = next((SHARED_HELP[o] for o in action.option_strings if o in SHARED_HELP), None)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sherpa-skills",
        description="A hierarchical state-machine agent runtime that learns procedures.",
        epilog=EXIT_CODES_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,  # keeps the exit-code table's lines
    )
    parser.add_argument("--version", action=_VersionAction)
    # Accepted before and after the command; SUPPRESS keeps a subcommand from resetting a value given before it.
    parser.add_argument("--home", help=HOME_HELP)
    parser.add_argument("--database", metavar="URL", help=DATABASE_HELP)
    parser.add_argument("--verbose", "-v", action="count", default=0, help=VERBOSE_HELP)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--home", default=argparse.SUPPRESS, help=HOME_HELP)
    common.add_argument("--database", metavar="URL", default=argparse.SUPPRESS, help=DATABASE_HELP)
    common.add_argument("--verbose", "-v", action="count", default=argparse.SUPPRESS, help=VERBOSE_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def add(name: str, fn: Callable[[argparse.Namespace], int], help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=help, description=help)
        p.set_defaults(fn=fn)
        return p

    def run_options(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--input",
            "-i",
            action="append",
            metavar="NAME=VALUE",
            help="a run input (JSON values are parsed); repeatable",
        )
        p.add_argument(
            "--json",
            action="store_true",
            help="print one JSON result object (stable; its fields: docs/concepts/command-line.md)",
        )
        p.add_argument("--quiet", "-q", action="store_true", help="no progress, no summary")
        p.add_argument(
            "--model", help="litellm model string (default: the workflow's llm.model, then $SHERPA_SKILLS_MODEL)"
        )
        p.add_argument(
            "--agent", help="the agent's name in shared memory and domains (default: the workflow, bound to its file)"
        )

    p = add("run", cmd_run, "run a YAML workflow until it is final, waiting for input, or fails")
    p.add_argument("file", help="the workflow file, or a built-in machine's name (planner, replay, capture)")
    run_options(p)
    p.add_argument(
        "--max-steps",
        type=positive_int,
        help="stop with an error after this many steps (default: the workflow's max_steps)",
    )
    p.add_argument(
        "--max-events",
        type=positive_int,
        help="multi-agent files: stop with an error after this many deliveries (default: the file's max_events)",
    )

    p = add("resume", cmd_resume, "continue a run from its last committed step, with outside input")
    p.add_argument("run_id")
    run_options(p)
    p.add_argument("--trigger", "-t", help="fire this transition first (a human decision)")
    p.add_argument("--arg", "-a", action="append", metavar="NAME=VALUE", help="an argument for --trigger; repeatable")
    p.add_argument("--file", help="load the workflow from this file instead of the one the run started from")
    p.add_argument("--allow-changed", action="store_true", help="resume even though the workflow file changed")
    p.add_argument(
        "--no-rerun-interrupted", action="store_true", help="stop instead of rerunning an action a crash interrupted"
    )

    p = add("runs", cmd_runs, "list recent runs (newest first); `runs delete`, `runs prune` remove them")
    p.add_argument("--json", action="store_true")
    p.add_argument("--limit", type=positive_int, default=50)
    p.add_argument("--status", choices=RUN_STATUSES, help="only runs with this status")
    p.add_argument("--workflow", metavar="NAME", help="only runs of this workflow (its name, as `runs` shows it)")
    rsub = p.add_subparsers(dest="runs_command", metavar="COMMAND")

    def removal_options(q: argparse.ArgumentParser) -> None:
        q.add_argument("--dry-run", action="store_true", help="say what would be deleted and kept; delete nothing")
        q.add_argument(
            "--yes", "-y", action="store_true", help="do not ask for confirmation (needed without a terminal)"
        )
        q.add_argument("--force", action="store_true", help="delete waiting and running runs too")
        q.add_argument(
            "--json",
            action="store_true",
            help="print {dry_run, deleted: [RUN_ID], kept: [{run_id, reason}], logs_deleted}",
        )

    q = rsub.add_parser(
        "delete",
        parents=[common],
        help="delete runs and everything they recorded (their log files too)",
        description="Delete runs, their steps, log entries, context and events, in one transaction, and their "
        "log files. Runs that something still refers to are kept, with the reason.",
    )
    q.set_defaults(fn=cmd_runs_delete)
    q.add_argument(
        "run_ids",
        nargs="+",
        metavar="RUN_ID",
        help="a run id or a unique prefix; an unknown one deletes nothing (exit 2)",
    )
    removal_options(q)
    q = rsub.add_parser(
        "prune",
        parents=[common],
        help="delete runs last updated longer ago than --older-than",
        description="Delete runs last updated longer ago than --older-than, as `runs delete` would.",
    )
    q.set_defaults(fn=cmd_runs_prune)
    q.add_argument(
        "--older-than", type=duration, required=True, metavar="AGE", help="12h, 30d, 2w (units s, m, h, d, w)"
    )
    removal_options(q)

    p = add("show", cmd_show, "show a run's trajectory, execution log and context")
    p.add_argument("run_id")
    p.add_argument("--json", action="store_true")

    p = add("validate", cmd_validate, "check workflow files; every problem as FILE:LINE: message, exit 2 if any")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--quiet", "-q", action="store_true", help="print only problems")
    p.add_argument(
        "--json", action="store_true", help="print {ok, files: [{file, kind, ok, problems: [{file, line, message}]}]}"
    )

    p = add("graph", cmd_graph, "print a workflow, a built-in machine or a team file as a Mermaid stateDiagram-v2")
    p.add_argument(
        "file", help="a workflow or team file, or a built-in machine's name (planner, replay, capture, heartbeat)"
    )

    tools = sub.add_parser("tools", parents=[common], help="find the tools relevant to a task")
    tsub = tools.add_subparsers(dest="tools_command", metavar="COMMAND", required=True)
    p = tsub.add_parser(
        "relevant",
        parents=[common],
        help="rank tools for TASK (registered actions, or --tools FILE)",
        description="rank tools for TASK with one Aho-Corasick pass (registered actions, or --tools FILE)",
    )
    p.set_defaults(fn=cmd_tools_relevant)
    p.add_argument("task")
    p.add_argument(
        "--tools", action="append", metavar="FILE", help="YAML/JSON list of {name, description, keywords}; repeatable"
    )
    p.add_argument("--limit", type=positive_int, default=5)
    p.add_argument("--json", action="store_true")

    from .heartbeat import add_heartbeat_parser
    from .learn.parser import add_learn_parser

    add_heartbeat_parser(sub, common)

    add_learn_parser(sub, common)

    from .events import add_events_parser

    add_events_parser(sub, common)

    from .sessions import add_sessions_parser

    add_sessions_parser(sub, common)

    from .memory import add_memory_parser

    add_memory_parser(sub, common)
    from .domains import add_domains_parser

    add_domains_parser(sub, common)

    from .hook import add_hook_parser

    add_hook_parser(sub, common)

    from .mcp import add_mcp_parser

    add_mcp_parser(sub, common)

    from .fork import add_fork_parser

    add_fork_parser(sub, common)

    from .ui import add_ui_parser

    add_ui_parser(sub, common)

    from .db import add_db_parser

    add_db_parser(sub, common)

    p = add(
        "demo", cmd_demo, "run the bundled support-triage demo offline (scripted model, temporary home unless --home)"
    )
    p.add_argument("--json", action="store_true")
    _shared_help(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from .hook import fast_hook

    # An agent's hook is a fresh process per event: it skips building the whole parser.
    hooked = fast_hook(sys.argv[1:] if argv is None else argv)
    if hooked is not None:
        return hooked
    parser = build_parser()
    if "_ARGCOMPLETE" in os.environ:  # set only by the shell's completion hook, so --help and every command pay nothing
        import argcomplete

        argcomplete.autocomplete(parser)
    args = parser.parse_args(argv)
    if not getattr(args, "fn", None):
        parser.print_help()
        return EXIT_USAGE
    from ..errors import NoSuchRun, SherpaError, StoreFileError, UsageError, WorkflowError
    from ..logs import configure, set_verbosity

    set_verbosity(args.verbose)
    # structlog's default prints every level to stdout; until a command sets up its log file, only errors show,
    # on stderr.
    configure(level="error")
    from ..db.url import choose
    from ..home import per_home_scope

    try:
        choose(args.database, home=args.home)  # every store the command opens keeps its truth there
        with per_home_scope():  # the per-home stores the command made close with it, as when its process exits
            return args.fn(args)
    except WorkflowError as exc:
        for problem in exc.problems:
            sys.stderr.write(f"{problem}\n")
        return EXIT_USAGE
    except (UsageError, StoreFileError, NoSuchRun) as exc:
        sys.stderr.write(f"sherpa-skills: {exc}\n")
        return EXIT_USAGE
    except SherpaError as exc:
        sys.stderr.write(f"sherpa-skills: {exc}\n")
        return EXIT_ERROR
    except KeyboardInterrupt as exc:
        sys.stderr.write("sherpa-skills: interrupted\n")
        return 128 + getattr(exc, "signum", 2)  # 130 for Ctrl-C, 143 for SIGTERM
    except Exception as exc:
        if args.verbose:
            raise
        if isinstance(exc, OSError) and exc.filename is not None:
            # A path the user named cannot be read or written (a folder, a missing parent, no permission).
            sys.stderr.write(f"sherpa-skills: '{str(exc.filename)[:300]}': {exc.strerror or exc}\n")
            return EXIT_USAGE
        # A bug, not bad input: one line for the user, the traceback with -v.
        sys.stderr.write(
            f"sherpa-skills: unexpected error: {type(exc).__name__}: {exc} (a bug: -v shows the traceback)\n"
        )
        return EXIT_ERROR
    finally:
        _close_home(args)
        set_verbosity(0)
        choose(None)


def _close_home(args: argparse.Namespace) -> None:
    """The stores the command opened (cli.console.open_home), closed once it ended, however it ended."""
    house = getattr(args, "opened_home", None)
    if house is None:
        return
    try:
        house.close()
    except Exception as exc:  # the command's answer is out already: a close that fails is worth a line, not a crash
        sys.stderr.write(f"sherpa-skills: closing the stores of {house.home} failed: {exc}\n")


if __name__ == "__main__":
    sys.exit(main())
