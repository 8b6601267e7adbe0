"""Commands for single runs: run, resume, runs, show, validate, graph and the demo."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable

from .console import EXIT_ERROR, EXIT_OK, EXIT_USAGE, console as _console, open_store as _open_store, parse_assignments, parse_inputs, print_json as _print_json


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


def _summary(console: Any, result: Any, log_file: Path) -> None:
    d = result.to_dict()
    colour = {"final": "green", "waiting": "yellow", "error": "red"}[d["status"]]
    console.print(f"[bold {colour}]{d['status']}[/] in [bold]{d['state']}[/]  run {d['run_id']}  "
                  f"steps {d['steps']}  fast-forwards {d['fast_forwards']}  rule decisions {d['rule_decisions']}  "
                  f"LLM calls {d['llm_calls']}  tokens {d['tokens']}")
    if d.get("tokens_saved") is not None:  # a learning run (`policy: {replay: true}`)
        diverged = d.get("diverged_at")
        console.print(f"replayed decisions {d['replayed_decisions']}  tokens saved {d['tokens_saved']}  LLM calls saved {d['llm_calls_saved']}"
                      + (f"  [yellow]diverged at step {diverged['step']} in {diverged['state']}: expected {diverged['expected']}, "
                         f"observed {diverged['observed']}[/]" if diverged else ""))
    if d["error"]:
        console.print(f"[red]error:[/] {d['error']}  [dim](log: {log_file})[/]")
    if d["status"] == "waiting":
        if d.get("waiting_for"):
            console.print(f"waiting for: {d['waiting_for']}")
        hint = f" --trigger {d['available_triggers'][0]}" if d["available_triggers"] else ""
        console.print(f"waiting for input; continue with: sherpa-skills resume {d['run_id']} --input NAME=VALUE{hint}"
                      + (f"  (triggers: {', '.join(d['available_triggers'])})" if d["available_triggers"] else ""))


def _execute(agent: Any, args: argparse.Namespace, home: Path, run: Callable[[], Any]) -> int:
    from ..logs import configure, log_file

    # The progress lines and the summary report what happens; log lines go to the run's JSON file (-v shows them too).
    configure(level="critical", json_file=log_file(home, agent.run_id))
    if not (args.json or args.quiet):
        console = _console(stderr=True)
        agent.observe(_progress_printer(console))
    result = run()
    if args.json:
        _print_json({k: v for k, v in result.to_dict().items()})
    elif not args.quiet:
        _summary(_console(stderr=True), result, log_file)
    return EXIT_OK if result.status in ("final", "waiting") else EXIT_ERROR


def model_option(model: str | None) -> str | None:
    """`--model scripted/PATH` typed on the command line means PATH from where the user stands, not from the workflow's folder."""
    if model and model.startswith("scripted/"):
        path = Path(model[len("scripted/"):])
        if not path.is_absolute() and path.is_file():
            return f"scripted/{path.resolve()}"
    return model


def workflow_file(name: str) -> str:
    """A workflow path, or the name of a built-in machine (replay, capture, planner, ...)."""
    try:
        exists = Path(name).exists()
    except OSError:  # a name too long for a path: the loader reports it as FILE:1: cannot read
        return name
    if exists or name.endswith((".yaml", ".yml")):
        return name
    from ..data import data_dir

    builtin = data_dir("statemachines") / f"{name}.yaml"
    return str(builtin) if builtin.is_file() else name


def cmd_run(args: argparse.Namespace) -> int:
    from ..agents.team import is_team_file
    from ..engine.workflow import load_workflow

    if is_team_file(workflow_file(args.file)):
        from .events import run_team

        return run_team(args)
    workflow = load_workflow(workflow_file(args.file))
    workflow.warm_up(args.model)  # a real model: litellm loads in the background while the first steps run
    inputs = parse_inputs(workflow.spec, args.input, starting=True)  # bad or missing input: exit 2 before a run exists
    store, home = _open_store(args)
    agent = workflow.agent(store=store, model=model_option(args.model), max_steps=args.max_steps, name=args.agent)
    return _execute(agent, args, home, lambda: agent.run(inputs))


def cmd_resume(args: argparse.Namespace) -> int:
    from ..engine.agent import Agent, spec_hash
    from ..errors import UsageError
    from ..engine.workflow import load_workflow

    store, home = _open_store(args)
    row = store.get_run(args.run_id)
    if not row.workflow_path:
        raise UsageError(f"run {row.run_id} was not started from a workflow file, so the CLI cannot resume it; resume it from Python")
    workflow = load_workflow(args.file or row.workflow_path)
    if spec_hash(workflow.machine) != row.spec_hash and not args.allow_changed:
        raise UsageError(f"workflow '{row.workflow_path}' changed since run {row.run_id} started; pass --allow-changed to resume with the new definition")
    workflow.warm_up(args.model)
    agent = Agent.resume(store, row.run_id, workflow.machine, workflow.policy, rerun_interrupted=not args.no_rerun_interrupted,
                         base_dir=workflow.base_dir, model=model_option(args.model), name=args.agent)
    inputs = parse_inputs(workflow.spec, args.input, starting=False)
    targs = parse_assignments(args.arg, "--arg")
    return _execute(agent, args, home, lambda: agent.run(inputs, trigger=args.trigger, args=targs))


def run_summary(r: Any) -> dict[str, Any]:
    """One run as `runs --json` lists it (and the browser view's /api/runs)."""
    return {"run_id": r.run_id, "workflow": r.workflow, "status": r.status, "state": r.state, "steps": r.counters.get("steps", 0),
            "llm_calls": r.counters.get("llm_calls", 0), "created": r.created, "updated": r.updated, "error": r.error}


def run_detail(row: Any, belief: Any) -> dict[str, Any]:
    """One run as `show --json` prints it (and the browser view's /api/runs/ID)."""
    return {"run_id": row.run_id, "workflow": row.workflow, "workflow_path": row.workflow_path, "status": row.status,
            "state": row.state, "error": row.error, "inputs": row.inputs, **row.counters, "belief": belief.model_dump(mode="json")}


def cmd_runs(args: argparse.Namespace) -> int:
    store, _ = _open_store(args)
    rows = store.list_runs(args.limit)
    if args.json:
        _print_json([run_summary(r) for r in rows])
        return EXIT_OK
    from datetime import datetime

    from rich.table import Table

    # An ID is what the user copies into `show`/`resume`: never cut; the other columns fold instead.
    table = Table()
    table.add_column("run", no_wrap=True, min_width=max((len(r.run_id) for r in rows), default=3))
    for name in ("workflow", "status", "state"):
        table.add_column(name, overflow="fold")
    table.add_column("steps", justify="right", overflow="fold")
    table.add_column("LLM calls", justify="right", overflow="fold")
    table.add_column("updated", overflow="fold")
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
        _print_json(run_detail(row, belief))
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
                      + (f"  [red]{e.error}[/]" if e.error else "")
                      + ("  [yellow]possibly repeated: in flight when the process died, run again[/]" if e.repeated else ""))
    console.print("[bold]context[/]")
    console.print_json(json.dumps(belief.context, default=str))
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    from ..agents.team import is_team_file, load_team
    from ..engine.workflow import load_workflow
    from ..errors import WorkflowError

    checked: list[dict[str, Any]] = []
    for file in args.files:
        path = workflow_file(file)
        kind = "team" if is_team_file(path) else "workflow"
        try:
            (load_team if kind == "team" else load_workflow)(path)
        except WorkflowError as exc:
            checked.append({"file": file, "kind": kind, "ok": False,
                            "problems": [{"file": p.file, "line": p.line, "message": p.message} for p in exc.problems]})
        else:
            checked.append({"file": file, "kind": kind, "ok": True, "problems": []})
    ok = all(c["ok"] for c in checked)
    if args.json:
        _print_json({"ok": ok, "files": checked})
    else:
        for c in checked:
            for p in c["problems"]:
                sys.stdout.write(f"{p['file']}:{p['line']}: {p['message']}\n")
            if c["ok"] and not args.quiet:
                sys.stdout.write(f"{c['file']}: ok\n")
    return EXIT_OK if ok else EXIT_USAGE


def cmd_graph(args: argparse.Namespace) -> int:
    from ..agents.team import is_team_file

    path = workflow_file(args.file)
    if is_team_file(path):
        from ..agents.diagram import team_to_mermaid
        from ..agents.team import load_team

        sys.stdout.write(team_to_mermaid(load_team(path)))
        return EXIT_OK
    from ..engine.diagram import to_mermaid
    from ..engine.workflow import load_workflow

    sys.stdout.write(to_mermaid(load_workflow(path).machine))
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(home=args.home, as_json=args.json)
