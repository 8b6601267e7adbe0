"""The `sherpa-skills` command: run, resume, inspect, validate and draw workflows.

argparse keeps `--help` fast; rich and the engine are imported only by the command that needs them.
Errors are shown as one message and an exit code, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


def parse_assignments(pairs: Sequence[str] | None, what: str = "--input") -> dict[str, Any]:
    """`k=v` pairs; a value that parses as JSON (numbers, true, {...}) is taken as JSON, else as text."""
    from .errors import UsageError

    values: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"{what} '{pair}' is not NAME=VALUE")
        try:
            values[key] = json.loads(raw)
        except ValueError:
            values[key] = raw
    return values


# ---------------------------------------------------------------- output helpers


def _console(stderr: bool = False) -> Any:
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True)


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str, sort_keys=False) + "\n")


def _progress_printer(console: Any) -> Callable[[str, dict[str, Any]], None]:
    def show(kind: str, p: dict[str, Any]) -> None:
        if kind == "transition":
            via = f" [dim]via {p['trigger']} ({p['decided_by']})[/dim]" if p.get("trigger") else ""
            console.print(f"[bold cyan]→ {p['state']}[/]{via}")
        elif kind == "action":
            mark = "[green]✓[/]" if p["status"] == "ok" else "[red]✗[/]"
            extra = f" [red]{p['error']}[/]" if p.get("error") else ("" if p["status"] == "ok" else f" [yellow]{p['status']}[/]")
            console.print(f"   {mark} {p['action']} [dim]{p['duration_ms']:.0f} ms[/]{extra}")
        elif kind == "decision" and p["decided_by"] == "llm":
            console.print(f"   [magenta]LLM chose {p['trigger']}[/] [dim]{p.get('reason') or ''}[/]")

    return show


def _summary(console: Any, result: Any) -> None:
    d = result.to_dict()
    colour = {"final": "green", "waiting": "yellow", "error": "red"}[d["status"]]
    console.print(f"[bold {colour}]{d['status']}[/] in [bold]{d['state']}[/]  run {d['run_id']}  "
                  f"steps {d['steps']}  fast-forwards {d['fast_forwards']}  rule decisions {d['rule_decisions']}  "
                  f"LLM calls {d['llm_calls']}  tokens {d['tokens']}")
    if d["error"]:
        console.print(f"[red]error:[/] {d['error']}")
    if d["status"] == "waiting":
        if d.get("waiting_for"):
            console.print(f"waiting for: {d['waiting_for']}")
        hint = f" --trigger {d['available_triggers'][0]}" if d["available_triggers"] else ""
        console.print(f"waiting for input; continue with: sherpa-skills resume {d['run_id']} --input NAME=VALUE{hint}"
                      + (f"  (triggers: {', '.join(d['available_triggers'])})" if d["available_triggers"] else ""))


# ---------------------------------------------------------------- commands


def _open_store(args: argparse.Namespace) -> Any:
    from .home import resolve_home
    from .runstore import RunStore

    home = resolve_home(args.home)
    return RunStore(home=home), home


def _execute(agent: Any, args: argparse.Namespace, home: Path, run: Callable[[], Any]) -> int:
    from .logs import configure

    (home / "logs").mkdir(exist_ok=True)
    configure(level="error" if (args.json or args.quiet) else "warning", json_file=home / "logs" / f"{agent.run_id}.jsonl")
    if not (args.json or args.quiet):
        console = _console(stderr=True)
        agent.observe(_progress_printer(console))
    result = run()
    if args.json:
        _print_json({k: v for k, v in result.to_dict().items()})
    elif not args.quiet:
        _summary(_console(stderr=True), result)
    return EXIT_OK if result.status in ("final", "waiting") else EXIT_ERROR


def workflow_file(name: str) -> str:
    """A workflow path, or the name of a built-in machine (replay, capture, planner, ...)."""
    if Path(name).exists() or name.endswith((".yaml", ".yml")):
        return name
    from .data import data_dir

    builtin = data_dir("statemachines") / f"{name}.yaml"
    return str(builtin) if builtin.is_file() else name


def cmd_run(args: argparse.Namespace) -> int:
    from .multiagent import is_team_file
    from .workflow import load_workflow

    if is_team_file(workflow_file(args.file)):
        from .cli_events import run_team

        return run_team(args)
    workflow = load_workflow(workflow_file(args.file))
    store, home = _open_store(args)
    agent = workflow.agent(store=store, model=args.model, max_steps=args.max_steps)
    inputs = parse_assignments(args.input)
    return _execute(agent, args, home, lambda: agent.run(inputs))


def cmd_resume(args: argparse.Namespace) -> int:
    from .agent import Agent, spec_hash
    from .errors import UsageError
    from .workflow import load_workflow

    store, home = _open_store(args)
    row = store.get_run(args.run_id)
    if not row.workflow_path:
        raise UsageError(f"run {row.run_id} was not started from a workflow file, so the CLI cannot resume it; resume it from Python")
    workflow = load_workflow(args.file or row.workflow_path)
    if spec_hash(workflow.machine) != row.spec_hash and not args.allow_changed:
        raise UsageError(f"workflow '{row.workflow_path}' changed since run {row.run_id} started; pass --allow-changed to resume with the new definition")
    agent = Agent.resume(store, row.run_id, workflow.machine, workflow.policy, rerun_interrupted=not args.no_rerun_interrupted,
                         base_dir=workflow.base_dir, model=args.model)
    inputs = parse_assignments(args.input)
    targs = parse_assignments(args.arg, "--arg")
    return _execute(agent, args, home, lambda: agent.run(inputs, trigger=args.trigger, args=targs))


def cmd_runs(args: argparse.Namespace) -> int:
    store, _ = _open_store(args)
    rows = store.list_runs(args.limit)
    if args.json:
        _print_json([{"run_id": r.run_id, "workflow": r.workflow, "status": r.status, "state": r.state, "steps": r.counters.get("steps", 0),
                      "llm_calls": r.counters.get("llm_calls", 0), "created": r.created, "updated": r.updated, "error": r.error} for r in rows])
        return EXIT_OK
    from datetime import datetime

    from rich.table import Table

    table = Table("run", "workflow", "status", "state", "steps", "LLM calls", "updated")
    for r in rows:
        table.add_row(r.run_id, r.workflow, r.status, r.state, str(r.counters.get("steps", 0)), str(r.counters.get("llm_calls", 0)),
                      datetime.fromtimestamp(r.updated).strftime("%Y-%m-%d %H:%M:%S"))
    _console().print(table if rows else "no runs yet")
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    store, _ = _open_store(args)
    row = store.get_run(args.run_id)
    belief = store.load_belief(row.run_id)
    if args.json:
        _print_json({"run_id": row.run_id, "workflow": row.workflow, "workflow_path": row.workflow_path, "status": row.status,
                     "state": row.state, "error": row.error, "inputs": row.inputs, **row.counters, "belief": belief.model_dump(mode="json")})
        return EXIT_OK
    console = _console()
    console.print(f"[bold]run {row.run_id}[/] — {row.workflow} — [bold]{row.status}[/] in {row.state}")
    if row.error:
        console.print(f"[red]error:[/] {row.error}")
    console.print("[bold]trajectory[/]")
    for t in belief.trajectory:
        via = f" via {t.trigger} ({t.decided_by})" if t.trigger else ""
        console.print(f"  {t.tick:>4}  {t.state}{via}")
    console.print("[bold]execution log[/]")
    for e in belief.log:
        console.print(f"  {e.tick:>4}  {e.action:<16} {e.status:<8} {e.duration_ms:8.1f} ms  tokens {e.tokens}"
                      + (f"  [red]{e.error}[/]" if e.error else ""))
    console.print("[bold]context[/]")
    console.print_json(json.dumps(belief.context, default=str))
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    from .errors import WorkflowError
    from .multiagent import is_team_file, load_team
    from .workflow import load_workflow

    failed = False
    for file in args.files:
        try:
            (load_team if is_team_file(file) else load_workflow)(file)
        except WorkflowError as exc:
            failed = True
            for problem in exc.problems:
                sys.stdout.write(f"{problem}\n")
        else:
            if not args.quiet:
                sys.stdout.write(f"{file}: ok\n")
    return EXIT_USAGE if failed else EXIT_OK


def cmd_graph(args: argparse.Namespace) -> int:
    from .mermaid import to_mermaid
    from .workflow import load_workflow

    sys.stdout.write(to_mermaid(load_workflow(args.file).machine))
    return EXIT_OK


def cmd_tools_relevant(args: argparse.Namespace) -> int:
    from .tools import ToolIndex, load_tools, registered_tools

    tools = [t for f in args.tools for t in load_tools(f)] if args.tools else registered_tools()
    ranked = ToolIndex(tools).relevant(args.task, limit=args.limit)
    if args.json:
        _print_json([r.to_dict() for r in ranked])
        return EXIT_OK
    console = _console()
    for r in ranked:
        console.print(f"[bold]{r.tool.name}[/] [dim]{r.score:.2f}[/]  {r.tool.description}  [dim]({', '.join(r.matched)})[/]")
    if not ranked:
        console.print(f"no tool among {len(tools)} matches that task")
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(home=args.home, as_json=args.json)


# ---------------------------------------------------------------- parser


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

    from .cli_heartbeat import add_heartbeat_parser
    from .cli_learn import add_learn_parser

    add_heartbeat_parser(sub, common)

    add_learn_parser(sub, common)

    from .cli_events import add_events_parser

    add_events_parser(sub, common)

    from .sessions.cli import add_sessions_parser

    add_sessions_parser(sub, common)

    from .cli_memory import add_memory_parser

    add_memory_parser(sub, common)

    p = add("demo", cmd_demo, "run the bundled support-triage demo offline (scripted model, temporary home unless --home)")
    p.add_argument("--json", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "fn", None):
        parser.print_help()
        return EXIT_USAGE
    from .errors import SherpaError, UsageError, WorkflowError

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
