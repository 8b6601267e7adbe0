"""Commands for single runs: run, resume, runs, show, validate, graph and the demo."""

from __future__ import annotations

import argparse
import json
import shlex
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..engine.hooks import RunHook
from ..engine.inputs import parse_assignments, parse_inputs
from ..engine.run_json import run_detail, run_summary

if TYPE_CHECKING:
    from ..engine.run.view import RunView

from .console import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    Folded,
    confirmed,
    print_commands,
    print_items,
    print_table,
)
from .console import (
    console as _console,
)
from .console import (
    open_home as _open_home,
)
from .console import (
    open_store as _open_store,
)
from .console import (
    print_json as _print_json,
)

if TYPE_CHECKING:
    from ..stores import Home


class _ProgressPrinter(RunHook):
    """A line per transition and action, and the LLM's choices, as the run takes them (a hook watching its steps)."""

    def __init__(self, console: Any):
        self.console = console

    def on_transition(
        self, *, run: RunView, state: str, trigger: str | None, source: str | None, decided_by: str, tick: int
    ) -> None:
        via = f" [dim]via {trigger} ({decided_by})[/dim]" if trigger else ""
        self.console.print(f"[bold cyan]→ {state}[/]{via}")

    def on_action(
        self, *, run: RunView, action: str, status: str, duration_ms: float, error: str | None, state: str
    ) -> None:
        mark = "[green]✓[/]" if status == "ok" else "[red]✗[/]"
        extra = f" [red]{error}[/]" if error else ("" if status == "ok" else f" [yellow]{status}[/]")
        self.console.print(f"   {mark} {action} [dim]{duration_ms:.0f} ms[/]{extra}")

    def on_decision(self, *, run: RunView, state: str, trigger: str, decided_by: str, reason: str | None) -> None:
        if decided_by == "llm":
            self.console.print(f"   [magenta]LLM chose {trigger}[/] [dim]{reason or ''}[/]")


def _summary(
    console: Any, result: Any, log_file: Path, args: argparse.Namespace | None = None, inputs: Any = None
) -> None:
    """How the run ended, in lines that fit the terminal (a figure never parted from its name), and for a waiting
    run the commands that continue it, each one pasteable as printed."""
    from rich.markup import escape

    d = result.to_dict()
    colour = {"final": "green", "waiting": "yellow", "error": "red"}[d["status"]]
    print_items(
        console,
        [
            f"[bold {colour}]{d['status']}[/] in [bold]{escape(d['state'])}[/]",
            f"run {d['run_id']}",
            f"steps {d['steps']}",
            f"fast-forwards {d['fast_forwards']}",
            f"rule decisions {d['rule_decisions']}",
            f"LLM calls {d['llm_calls']}",
            f"tokens {d['tokens']}",
        ],
    )
    if d.get("tokens_saved") is not None:  # a learning run (`policy: {learn: true}`)
        print_items(
            console,
            [
                f"replayed decisions {d['replayed_decisions']}",
                f"tokens saved {d['tokens_saved']}",
                f"LLM calls saved {d['llm_calls_saved']}",
            ],
        )
        diverged = d.get("diverged_at")
        if diverged:
            console.print(
                f"[yellow]diverged at step {diverged['step']} in {escape(str(diverged['state']))}: "
                f"expected {escape(str(diverged['expected']))}, observed {escape(str(diverged['observed']))}[/]",
                soft_wrap=False,
            )
    if d["error"]:
        console.print(f"[red]error:[/] {escape(d['error'])}  [dim](log: {escape(str(log_file))})[/]", soft_wrap=False)
    if d["status"] == "waiting":
        if d.get("waiting_for"):
            console.print(f"waiting for: {escape(d['waiting_for'])}", soft_wrap=False)
        if inputs:
            console.print(
                "inputs it takes (give them with --input NAME=VALUE): "
                + ", ".join(f"{n} ({i.type})" if i.type else n for n, i in inputs.items()),
                soft_wrap=False,
                markup=False,
            )
        base = shlex.split(resume_command(args, d["run_id"])) if args is not None else ["sherpa-skills", "resume"]
        console.print("continue with:" if not d["available_triggers"] else "continue with one of:")
        print_commands(console, *([base + ["--trigger", t] for t in d["available_triggers"]] or [base]))


@contextmanager
def _signals_stop_the_run() -> Iterator[None]:
    """SIGTERM (docker stop, systemd) stops a run as Ctrl-C does, by an exception where the run is; a second signal
    while it stops is ignored, so the run is still recorded as interrupted."""
    from ..errors import Interrupted

    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return
    # SIGINT only when Python handles it: a command started in the background (`&` in a script) ignores it on purpose.
    handled = [signal.SIGTERM] + (
        [signal.SIGINT] if signal.getsignal(signal.SIGINT) is signal.default_int_handler else []
    )

    def stop(signum: int, frame: Any) -> None:
        for s in handled:
            signal.signal(s, signal.SIG_IGN)
        raise Interrupted(signum)

    previous = {s: signal.signal(s, stop) for s in handled}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def resume_command(args: argparse.Namespace, run_id: str) -> str:
    """The command that resumes this run: the same home, and the options a run does not store."""
    words = ["sherpa-skills", "resume", run_id]
    for option, value in (
        ("--home", args.home),
        ("--model", args.model),
        ("--agent", args.agent),
        ("--file", args.file if args.command == "resume" else None),
    ):
        if value:
            words += [option, str(value)]
    if args.command == "resume" and args.allow_changed:
        words.append("--allow-changed")
    return shlex.join(words)


def _interrupted(agent: Any, args: argparse.Namespace, exc: KeyboardInterrupt) -> int:
    """Which run a signal stopped and how to resume it (stderr;
    under --json also an object on stdout); exit 128 + signal."""
    signum = getattr(exc, "signum", signal.SIGINT)
    name = signal.Signals(signum).name
    row = agent.store.get_run(agent.run_id) if agent.store is not None and agent.store.has_run(agent.run_id) else None
    if row is None:
        sys.stderr.write(
            f"sherpa-skills: interrupted ({name}) before run {agent.run_id} was recorded; nothing to resume\n"
        )
    elif row.status == "final":
        sys.stderr.write(
            f"sherpa-skills: interrupted ({name}); run {row.run_id} had already finished in state '{row.state}'\n"
        )
    else:
        sys.stderr.write(
            f"sherpa-skills: run {row.run_id} interrupted ({name}) in state '{row.state}'; "
            f"resume it with: {resume_command(args, row.run_id)}\n"
        )
    if args.json:
        _print_json(
            {
                "run_id": agent.run_id,
                "status": row.status if row else "interrupted",
                "state": row.state if row else None,
                "signal": name,
            }
        )
    return 128 + signum


def _log_run(home: Path, run_id: str) -> Path:
    """Log lines go to the run's JSON file (-v shows them too):
    the progress lines and the summary report what happens."""
    from ..logs import configure, log_file

    path = log_file(home, run_id)
    configure(level="critical", json_file=path)
    return path


def _execute(agent: Any, args: argparse.Namespace, home: Path, run: Callable[[], Any]) -> int:
    log = _log_run(home, agent.run_id)
    if not (args.json or args.quiet):
        console = _console(stderr=True)
        agent.add_hook(_ProgressPrinter(console))
    from ..tracing import trace_from_environment

    tracer = trace_from_environment(agent)  # OTEL_* variables set: the run as spans; else None, nothing imported
    try:
        with _signals_stop_the_run():
            result = run()
    except KeyboardInterrupt as exc:  # the agent marked the run interrupted; what was in flight reruns on resume
        return _interrupted(agent, args, exc)
    finally:
        if tracer is not None:
            tracer.close()
    if args.json:
        _print_json({k: v for k, v in result.to_dict().items()})
    elif not args.quiet:
        _summary(_console(stderr=True), result, log, args, agent.machine.spec.inputs)
    return EXIT_OK if result.status in ("final", "waiting") else EXIT_ERROR


def model_option(model: str | None) -> str | None:
    """`--model scripted/PATH` typed on the command line means PATH from where the user stands,
    not from the workflow's folder."""
    if model and model.startswith("scripted/"):
        path = Path(model[len("scripted/") :])
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
    from ..runtime import load_workflow

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
    from ..engine.run.identity import spec_hash
    from ..errors import UsageError
    from ..runtime import load_workflow

    store, home = _open_store(args)
    row = store.get_run(args.run_id)
    if row.status == "final":
        return _finished(args, store, row)
    if not row.workflow_path:
        raise UsageError(
            f"run {row.run_id} was not started from a workflow file, so the CLI cannot resume it; resume it from Python"
        )
    workflow = load_workflow(args.file or row.workflow_path)
    if spec_hash(workflow.machine) != row.spec_hash and not args.allow_changed:
        raise UsageError(
            f"workflow '{row.workflow_path}' changed since run {row.run_id} started; "
            "pass --allow-changed to resume with the new definition"
        )
    workflow.warm_up(args.model)
    _log_run(home, row.run_id)  # before the resume, which warns there about actions it reruns
    # The workflow's hooks come back with it: a learning run replays from where it was and is captured.
    agent = workflow.resume(
        store,
        row.run_id,
        rerun_interrupted=not args.no_rerun_interrupted,
        model=model_option(args.model),
        name=args.agent,
    )
    inputs = parse_inputs(workflow.spec, args.input, starting=False)
    targs = parse_assignments(args.arg, "--arg")
    if args.trigger is not None:
        agent.check_trigger(args.trigger, targs, inputs)  # a mistyped trigger: exit 2 before anything is stored
    return _execute(agent, args, home, lambda: agent.run(inputs, trigger=args.trigger, args=targs))


def _finished(args: argparse.Namespace, store: Any, row: Any) -> int:
    """`resume` of a run that already ended: its stored result, as the run printed it when it finished (exit 0);
    a trigger or input for it is refused, since nothing can happen to a final run."""
    from ..engine.agent import RunResult
    from ..errors import UsageError

    if args.trigger is not None or args.input or args.arg:
        raise UsageError(
            f"run {row.run_id} has finished (final in state '{row.state}'): it takes no --trigger, --input or --arg; "
            f"`sherpa-skills show {row.run_id}` shows it"
        )
    result = RunResult(
        row.run_id, "final", row.state, dict(row.counters), None, dict(store.load_belief(row.run_id).context)
    )
    if args.json:
        _print_json(result.to_dict())
    elif not args.quiet:
        _summary(_console(stderr=True), result, Path(), args)  # a final run has no error, so no log to point at
    return EXIT_OK


def cmd_runs(args: argparse.Namespace) -> int:
    store, _ = _open_store(args)
    rows, _ = store.search_runs(status=args.status, workflow=args.workflow, limit=args.limit)
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
    from ..engine.run_origin import log_place

    places = [log_place(r.host, r.home, r.run_id) for r in rows]
    elsewhere = any(p is not None and not p["here"] for p in places)
    if elsewhere:  # runs shared by machines: say which ran where (its log is there); `show` gives the path
        table.add_column("log", overflow="fold")
    for r, place in zip(rows, places, strict=True):
        where = (
            [] if not elsewhere else ["here" if place and place["here"] else f"on {place['host']}" if place else "?"]
        )
        table.add_row(
            r.run_id,
            Folded(r.workflow),
            Folded(r.status),
            Folded(r.state),
            str(r.counters.get("steps", 0)),
            str(r.counters.get("llm_calls", 0)),
            datetime.fromtimestamp(r.updated).strftime("%Y-%m-%d %H:%M:%S"),
            *where,
        )  # breaks at the space only
    if rows:
        print_table(_console(), table)
    else:
        _console().print("no runs yet")
    return EXIT_OK


def _show_removal(removal: Any, as_json: bool) -> None:
    if as_json:
        _print_json(removal.model_dump())
        return
    console = _console()
    n = len(removal.deleted)
    if n:
        console.print(
            f"{'would delete' if removal.dry_run else 'deleted'} {n} run{'s' if n != 1 else ''}: "
            f"{', '.join(removal.deleted)}",
            markup=False,
        )
    for k in removal.kept:
        console.print(f"kept {k.run_id}: {k.reason}", markup=False)
    if not n:
        console.print("no run to delete")
    if removal.dry_run:
        console.print("dry run: nothing was deleted")


def _remove(args: argparse.Namespace, house: Home, ids: list[str], what: str) -> int:
    """Show the plan and ask (unless --yes or --dry-run), then delete in one transaction that
    checks references again."""
    store, skills = house.runs, house.skills
    plan = skills.remove_runs(store, ids, force=args.force, dry_run=True)
    if args.dry_run or not plan.deleted:
        _show_removal(plan, args.json)
        return EXIT_OK
    if not args.yes and sys.stdin.isatty():  # the person answering sees what stays, too
        for k in plan.kept:
            sys.stderr.write(f"kept {k.run_id}: {k.reason}\n")
    confirmed(
        f"delete {len(plan.deleted)} run{'s' if len(plan.deleted) != 1 else ''} {what} ({', '.join(plan.deleted[:5])}"
        f"{', …' if len(plan.deleted) > 5 else ''})",
        args.yes,
    )
    _show_removal(skills.remove_runs(store, plan.deleted, force=args.force), args.json)
    return EXIT_OK


def cmd_runs_delete(args: argparse.Namespace) -> int:
    """Exact ids or unique prefixes; an unknown one, or a waiting/running run without --force,
    is bad usage and nothing goes."""
    from ..errors import NoSuchRun, UsageError
    from ..skills.face.models import ACTIVE_RUN_STATUSES as ACTIVE

    house = _open_home(args)
    store = house.runs
    rows = []
    for given in args.run_ids:
        try:
            rows.append(store.get_run(given))
        except NoSuchRun as exc:
            raise NoSuchRun(f"{exc}; nothing was deleted") from None
    active = [r for r in rows if r.status in ACTIVE]
    if active and not args.force:
        raise UsageError(
            f"{', '.join(f'{r.run_id} is {r.status}' for r in active)}: pass --force to delete "
            f"{'it' if len(active) == 1 else 'them'} anyway; nothing was deleted"
        )
    ids = list(dict.fromkeys(r.run_id for r in rows))
    return _remove(args, house, ids, "and everything they recorded")


def _age(seconds: float) -> str:
    """`--older-than` as the user would have written it (2w, 30d, 12h)."""
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def cmd_runs_prune(args: argparse.Namespace) -> int:
    import time

    house = _open_home(args)
    return _remove(
        args,
        house,
        house.skills.runs_older_than(house.runs, time.time() - args.older_than),
        f"last updated over {_age(args.older_than)} ago",
    )


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
    from rich.markup import escape

    from ..engine.run_origin import log_place

    place = log_place(row.host, row.home, row.run_id)
    console.print(f"log: {escape(place['text']) if place else 'not recorded (the run predates it)'}")
    console.print("[bold]trajectory[/]")
    for t in belief.trajectory:
        via = f" via {t.trigger} ({t.decided_by})" if t.trigger else ""
        console.print(f"  {t.tick:>4}  {t.state}{via}")
    console.print("[bold]execution log[/]")
    for e in belief.log:
        console.print(
            f"  {e.tick:>4}  {e.action:<16} {e.status:<8} {e.duration_ms:8.1f} ms  tokens {e.tokens}"
            + (f"  [red]{e.error}[/]" if e.error else "")
            + ("  [yellow]possibly repeated: in flight when the process died, run again[/]" if e.repeated else "")
        )
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
            checked.append(
                {
                    "file": file,
                    "kind": kind,
                    "ok": False,
                    "problems": [{"file": p.file, "line": p.line, "message": p.message} for p in exc.problems],
                }
            )
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
