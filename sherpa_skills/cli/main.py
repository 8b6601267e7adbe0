"""The `sherpa-skills` command: the parser, and errors shown as one message and an exit code, never a traceback.

argparse keeps `--help` fast; rich and the engine are imported only by the command that needs them.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, Sequence

from .console import EXIT_ERROR, EXIT_USAGE
from .runs import cmd_demo, cmd_graph, cmd_resume, cmd_run, cmd_runs, cmd_show, cmd_validate
from .tools import cmd_tools_relevant


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sherpa-skills", description="A hierarchical state-machine agent runtime that learns procedures.")
    parser.add_argument("--version", action="version", version="%(prog)s 0.1.0")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--home", help="state folder (default: $SHERPA_SKILLS_HOME or ~/.sherpa-skills)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def add(name: str, fn: Callable[[argparse.Namespace], int], help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=help, description=help)
        p.set_defaults(fn=fn)
        return p

    def run_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--input", "-i", action="append", metavar="NAME=VALUE", help="a run input (JSON values are parsed); repeatable")
        p.add_argument("--json", action="store_true", help="print one JSON result object (stable, see README)")
        p.add_argument("--quiet", "-q", action="store_true", help="no progress, no summary")
        p.add_argument("--model", help="litellm model string (default: the workflow's llm.model, then $SHERPA_SKILLS_MODEL)")

    p = add("run", cmd_run, "run a YAML workflow until it is final, waiting for input, or fails")
    p.add_argument("file", help="the workflow file, or a built-in machine's name (planner, replay, capture)")
    run_options(p)
    p.add_argument("--max-steps", type=int, help="stop with an error after this many steps (default: the workflow's max_steps)")
    p.add_argument("--max-events", type=int, help="multi-agent files: stop with an error after this many deliveries (default: the file's max_events)")

    p = add("resume", cmd_resume, "continue a run from its last committed step, with outside input")
    p.add_argument("run_id")
    run_options(p)
    p.add_argument("--trigger", "-t", help="fire this transition first (a human decision)")
    p.add_argument("--arg", "-a", action="append", metavar="NAME=VALUE", help="an argument for --trigger; repeatable")
    p.add_argument("--file", help="load the workflow from this file instead of the one the run started from")
    p.add_argument("--allow-changed", action="store_true", help="resume even though the workflow file changed")
    p.add_argument("--no-rerun-interrupted", action="store_true", help="stop instead of rerunning an action a crash interrupted")

    p = add("runs", cmd_runs, "list recent runs")
    p.add_argument("--json", action="store_true")
    p.add_argument("--limit", type=int, default=50)

    p = add("show", cmd_show, "show a run's trajectory, execution log and context")
    p.add_argument("run_id")
    p.add_argument("--json", action="store_true")

    p = add("validate", cmd_validate, "check workflow files; every problem as FILE:LINE: message, exit 2 if any")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--quiet", "-q", action="store_true", help="print only problems")

    p = add("graph", cmd_graph, "print a workflow as a Mermaid stateDiagram-v2")
    p.add_argument("file")

    tools = sub.add_parser("tools", parents=[common], help="find the tools relevant to a task")
    tsub = tools.add_subparsers(dest="tools_command", metavar="COMMAND", required=True)
    p = tsub.add_parser("relevant", parents=[common], help="rank tools for TASK (registered actions, or --tools FILE)",
                        description="rank tools for TASK with one Aho-Corasick pass (registered actions, or --tools FILE)")
    p.set_defaults(fn=cmd_tools_relevant)
    p.add_argument("task")
    p.add_argument("--tools", action="append", metavar="FILE", help="YAML/JSON list of {name, description, keywords}; repeatable")
    p.add_argument("--limit", type=int, default=5)
    p.add_argument("--json", action="store_true")

    from .heartbeat import add_heartbeat_parser
    from .learn import add_learn_parser

    add_heartbeat_parser(sub, common)

    add_learn_parser(sub, common)

    from .events import add_events_parser

    add_events_parser(sub, common)

    from .sessions import add_sessions_parser

    add_sessions_parser(sub, common)

    from .memory import add_memory_parser

    add_memory_parser(sub, common)

    from .ui import add_ui_parser

    add_ui_parser(sub, common)

    p = add("demo", cmd_demo, "run the bundled support-triage demo offline (scripted model, temporary home unless --home)")
    p.add_argument("--json", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "fn", None):
        parser.print_help()
        return EXIT_USAGE
    from ..errors import SherpaError, UsageError, WorkflowError

    try:
        return args.fn(args)
    except WorkflowError as exc:
        for problem in exc.problems:
            sys.stderr.write(f"{problem}\n")
        return EXIT_USAGE
    except UsageError as exc:
        sys.stderr.write(f"sherpa-skills: {exc}\n")
        return EXIT_USAGE
    except SherpaError as exc:
        sys.stderr.write(f"sherpa-skills: {exc}\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        sys.stderr.write("sherpa-skills: interrupted\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
