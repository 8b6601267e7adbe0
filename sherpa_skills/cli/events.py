"""CLI for multi-agent files and events: `run TEAM.yaml` (one process),
`agent` (one agent on Redis), `send` (publish)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..engine.inputs import parse_inputs
from .console import (
    EXIT_ERROR,
    EXIT_OK,
    positive_int,
)
from .console import (
    console as _console,
)
from .console import (
    open_store as _open_store,
)
from .console import (
    print_json as _print_json,
)


def _delivery_printer(console: Any) -> Callable[[Any], None]:
    colours = {"handled": "green", "duplicate": "dim", "unavailable": "yellow", "invalid": "yellow", "error": "red"}

    def show(d: Any) -> None:
        from rich.markup import escape

        e = d.event
        via = escape(f"[{e.topic}]") if e.recipient is None else f"(to {e.recipient})"
        line = (
            f"[bold]{e.name}[/] {e.sender} → {d.agent} {via}  [{colours.get(d.outcome, 'white')}]{d.outcome}[/] → "
            f"{d.state} ({d.status})"
        )
        if d.emitted:
            line += f"  [dim]emits {', '.join(x['name'] for x in d.emitted)}[/]"
        console.print(line)
        if d.reason and d.outcome != "handled":
            console.print(f"   [yellow]{escape(d.reason)}[/]")

    return show


def _problem_printer(console: Any) -> Callable[[Any], None]:
    def show(p: Any) -> None:
        from rich.markup import escape

        data = p.to_dict() if hasattr(p, "to_dict") else p
        console.print(f"[yellow]{data.get('kind')}:[/] {escape(str(data.get('problem')))}")

    return show


def _log_to(home: Path, name: str) -> None:
    """Log lines go to the file (-v shows them too): the delivery and problem lines report what happens, once."""
    from ..logs import configure, log_file

    configure(level="critical", json_file=log_file(home, name))


def run_team(args: argparse.Namespace) -> int:
    """`sherpa-skills run TEAM.yaml`: every agent in this process,
    events delivered in FIFO order until none is pending."""
    from ..agents.team import TeamRunner, load_team

    team = load_team(args.file)
    inputs = parse_inputs(
        team.spec, args.input, starting=False
    )  # required ones are checked with the defaults, by the team
    store, home = _open_store(args)
    quiet = args.json or args.quiet
    _log_to(home, f"team-{team.name}")
    console = _console(stderr=True)
    runner = TeamRunner(
        team,
        store=store,
        model=args.model,
        max_events=getattr(args, "max_events", None),
        on_delivery=None if quiet else _delivery_printer(console),
        on_problem=None if quiet else _problem_printer(console),
    )
    result = runner.run(inputs)
    if args.json:
        _print_json(result.to_dict())
    elif not args.quiet:
        c = result.counters
        colour = "green" if result.status == "done" else "red"
        console.print(
            f"[bold {colour}]{result.status}[/]  team {team.name}  deliveries {c['delivered']}  "
            f"handled {c['handled']}  "
            f"refused {c['unavailable'] + c['invalid']}  duplicates {c['duplicate']}  malformed "
            f"{c['malformed']}  unrouted {c['unrouted']}"
        )
        for agent, runs in result.runs.items():
            for r in runs.values():
                console.print(f"  {agent:<12} run {r.run_id}  [bold]{r.status}[/] in {r.state}")
        if team.spec.output and result.output is not None:
            console.print(f"[bold]{team.spec.output}:[/] {result.output}")
        if result.error:
            console.print(f"[red]error:[/] {result.error}")
    return EXIT_OK if result.status == "done" else EXIT_ERROR


def _bus(url: str | None, prefix: str) -> Any:
    from ..errors import UsageError

    if not url:
        raise UsageError(
            "this command needs --bus redis://HOST:PORT/DB (the in-process bus lives only inside `sherpa-skills run`)"
        )
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise UsageError(f"--bus '{url}' is not supported; use redis://HOST:PORT/DB")
    from ..agents.redis_bus import RedisBus

    return RedisBus(url, prefix=prefix)


def _member(file: str, name: str | None, subscribe: list[str] | None) -> tuple[str, Any, list[str]]:
    """The agent to serve: a member of a team file (by --name), or a plain workflow with --subscribe topics."""
    from ..agents.team import is_team_file, load_team
    from ..errors import UsageError
    from ..runtime import load_workflow

    if is_team_file(file):
        team = load_team(file)
        if not name or name not in team.members:
            raise UsageError(f"--name must be one of the agents in {file}: {', '.join(team.members)}")
        member = team.members[name]
        return name, member.workflow, member.subscribe + list(subscribe or [])
    workflow = load_workflow(file)
    return name or workflow.spec.name, workflow, list(subscribe or [])


def cmd_agent(args: argparse.Namespace) -> int:
    """Serve one agent from the Redis bus until --max-events, --idle-exit or SIGTERM/SIGINT."""
    from ..agents.service import AgentService

    name, workflow, topics = _member(args.file, args.name, args.subscribe)
    bus = _bus(args.bus, args.prefix)
    store, home = _open_store(args)
    quiet = args.json or args.quiet
    _log_to(home, f"agent-{name}")
    console = _console(stderr=True)
    service = AgentService(
        name,
        workflow,
        topics,
        bus,
        store,
        consumer=args.consumer,
        model=args.model,
        claim_idle=args.claim_idle,
        on_delivery=None if quiet else _delivery_printer(console),
        on_problem=None if quiet else _problem_printer(console),
    )

    def stop(signum: int, frame: Any) -> None:
        service.stop_requested = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    streams = service.start()
    workflow.warm_up(args.model)  # litellm loads (seconds) while the agent waits for its first event
    sys.stderr.write(f"agent {name} ready (consumer {service.consumer}; group {name} on {', '.join(streams)})\n")
    sys.stderr.flush()
    result = service.serve(max_events=args.max_events, idle_exit=args.idle_exit)
    if args.json:
        _print_json(result.to_dict())
    elif not args.quiet:
        c = result.counters
        console.print(
            f"[bold]agent {name} stopped[/] ({result.stopped})  consumed {c['consumed']}  handled {c['handled']}  "
            f"duplicates {c['duplicate']}  refused {c['unavailable'] + c['invalid']}  malformed {c['malformed']}  "
            f"errors {c['error']}  redelivered {c['redelivered']}  emitted {c['emitted']}"
        )
    bus.close()
    return EXIT_ERROR if result.counters["error"] else EXIT_OK


def cmd_send(args: argparse.Namespace) -> int:
    """Publish one event (or a team file's initial event) on the Redis bus;
    an event nobody hears is reported (exit 1)."""
    from ..engine.events import parse_event
    from ..errors import UsageError

    bus = _bus(args.bus, args.prefix)
    bus.ping()
    if args.initial:
        from ..agents.team import load_team

        team = load_team(args.initial)
        events = team.initial_events(parse_inputs(team.spec, args.input, starting=False))
        overrides = {k: v for k, v in (("correlation_id", args.correlation_id), ("id", args.id)) if v}
        events = [parse_event({**e.body(), **overrides}) for e in events]
    else:
        if not args.name or not (args.topic or args.recipient):
            raise UsageError("send needs --name and --topic or --recipient (or --initial TEAM.yaml)")
        try:
            payload = json.loads(args.payload) if args.payload else {}
        except ValueError as exc:
            raise UsageError(f"--payload is not JSON: {exc}") from None
        data = {
            "name": args.name,
            "topic": args.topic,
            "recipient": args.recipient,
            "payload": payload,
            "sender": args.sender,
            "correlation_id": args.correlation_id,
            "id": args.id,
        }
        events = [parse_event({k: v for k, v in data.items() if v is not None})]
    results = [bus.publish(e) for e in events]
    bus.close()
    if args.json:
        _print_json([r.to_dict() for r in results])
    else:
        for r in results:
            e = r.event
            if r.ok:
                sys.stderr.write(
                    f"sent {e.name} (id {e.id}, correlation {e.correlation_id}) to {', '.join(r.receivers)}\n"
                )
            else:
                sys.stderr.write(f"sherpa-skills: {r.kind}: {r.problem}\n")
    return EXIT_OK if all(r.ok for r in results) else EXIT_ERROR


def add_events_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    def add(name: str, fn: Callable[[argparse.Namespace], int], help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=help, description=help)
        p.set_defaults(fn=fn)
        return p

    def bus_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--bus", required=True, metavar="URL", help="redis://HOST:PORT/DB")
        p.add_argument("--prefix", default="sherpa", help="key prefix of the streams (default: sherpa)")
        p.add_argument("--json", action="store_true", help="print one JSON result")

    p = add("agent", cmd_agent, "run one agent of a multi-agent file (or a workflow) as its own process on a Redis bus")
    p.add_argument(
        "file", help="a multi-agent file (pick the agent with --name), or a workflow file (with --subscribe)"
    )
    p.add_argument("--name", help="the agent to run (its consumer group on the bus)")
    bus_options(p)
    p.add_argument("--subscribe", action="append", metavar="TOPIC", help="an extra topic to hear; repeatable")
    p.add_argument(
        "--consumer", help="consumer name within the agent's group (default: the agent's name; give replicas their own)"
    )
    p.add_argument("--max-events", type=positive_int, help="stop after consuming this many events")
    p.add_argument("--idle-exit", type=float, metavar="SECS", help="stop after this many seconds without an event")
    p.add_argument(
        "--claim-idle",
        type=float,
        default=60.0,
        metavar="SECS",
        help="take over events another consumer of this agent left unacknowledged this long (default 60)",
    )
    p.add_argument("--model", help="litellm model string for every run of this agent")
    p.add_argument("--quiet", "-q", action="store_true")

    p = add(
        "send", cmd_send, "publish an event on a Redis bus (a task, or a human operator's answer to a waiting agent)"
    )
    bus_options(p)
    p.add_argument("--name", "-n", help="the event name: the trigger it fires in the receiving agent")
    p.add_argument("--topic", "-t", help="publish to this topic")
    p.add_argument("--recipient", "-r", help="send to this agent directly")
    p.add_argument("--payload", "-p", help="the payload as a JSON object (the transition's arguments)")
    p.add_argument(
        "--correlation-id", "-c", help="the task this event belongs to (default: a new task, the event's id)"
    )
    p.add_argument("--sender", default="operator", help="who sends it (default: operator)")
    p.add_argument("--id", help="the event id (default: random); resending an id is deduplicated by durable agents")
    p.add_argument("--initial", metavar="TEAM.yaml", help="send the initial event(s) of a multi-agent file instead")
    p.add_argument(
        "--input", "-i", action="append", metavar="NAME=VALUE", help="an input for --initial's payload templates"
    )
