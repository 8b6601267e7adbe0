"""`sherpa-skills fork RUN_ID --at N`: a new run from the state a run was in after step N, the original untouched."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..engine.inputs import parse_inputs
from .console import EXIT_OK, console, print_json


def add_fork_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    help = "start a new run from the state a run was in after step N (its actions execute; the original is untouched)"
    p = sub.add_parser("fork", parents=[common], help=help, description=help)
    p.set_defaults(fn=cmd_fork)
    p.add_argument("run_id")
    p.add_argument(
        "--at", type=int, required=True, metavar="N", help="the step to fork from (`show`/the view number them)"
    )
    p.add_argument(
        "--input", "-i", action="append", metavar="NAME=VALUE", help="an input that replaces the run's; repeatable"
    )
    p.add_argument("--trigger", "-t", help="fire this transition first, instead of what the run did next")
    p.add_argument("--arg", "-a", action="append", metavar="NAME=VALUE", help="an argument for --trigger; repeatable")
    p.add_argument("--file", help="load the workflow from this file instead of the one the run started from")
    p.add_argument("--allow-changed", action="store_true", help="fork even though the workflow changed since that step")
    p.add_argument("--dry-run", action="store_true", help="say what the fork would start from and run; run nothing")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask before the fork's actions run")
    p.add_argument(
        "--json", action="store_true", help="print one JSON object (the plan with --dry-run, else the result)"
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress, no summary")
    p.add_argument("--model", help="litellm model string (default: the workflow's llm.model)")
    p.add_argument("--agent", help="the agent's name in shared memory and domains")


def _describe(plan: Any) -> str:
    lines = [
        f"fork run {plan.parent_run_id} at step {plan.at}: a new run starts in state '{plan.state}' "
        f"of workflow '{plan.workflow}' and runs from there — its actions execute; run {plan.parent_run_id} is "
        "left as it is.",
        f"  context carried over: {', '.join(plan.context_keys) or 'none'}",
    ]
    if plan.inputs:
        lines.append(f"  inputs replaced: {', '.join(f'{k}={v!r}' for k, v in plan.inputs.items())}")
    if plan.trigger:
        lines.append(f"  first transition: {plan.trigger}")
    elif plan.waiting:
        lines.append(f"  state '{plan.state}' waits for input; transitions: {', '.join(plan.available) or 'none'}")
    if plan.redacted_keys:
        lines.append(
            f"  stored redacted (pass them again with --input if the fork needs them): {', '.join(plan.redacted_keys)}"
        )
    if plan.changed:
        lines.append(f"  under the workflow as it is now ({plan.machine_now}), not as step {plan.at} ran it")
    return "\n".join(lines)


def _ask(yes: bool) -> None:
    from ..errors import UsageError

    if yes:
        return
    if not sys.stdin.isatty():
        raise UsageError(
            "a fork runs its actions: pass --yes to start it without a terminal to ask (or --dry-run to see the plan)"
        )
    sys.stderr.write("start the fork? [y/N] ")
    sys.stderr.flush()
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise UsageError("not confirmed: no fork was made")


def cmd_fork(args: argparse.Namespace) -> int:
    from ..engine.fork import plan_fork, start_fork
    from ..engine.inputs import parse_assignments
    from ..errors import UsageError
    from ..runtime import load_workflow
    from .console import open_store
    from .runs import _execute, model_option

    store, home = open_store(args)
    row = store.get_run(args.run_id)
    source = args.file or row.workflow_path
    if not source:
        raise UsageError(f"run {row.run_id} was not started from a workflow file; fork it from Python (engine.fork)")
    workflow = load_workflow(source)
    inputs = parse_inputs(workflow.spec, args.input, starting=False)
    targs = parse_assignments(args.arg, "--arg")
    plan = plan_fork(
        store,
        row.run_id,
        args.at,
        workflow.machine,
        inputs=inputs,
        trigger=args.trigger,
        allow_changed=args.allow_changed,
    )
    if args.dry_run:
        if args.json:
            print_json({**plan.to_dict(), "dry_run": True})
        else:
            console().print(_describe(plan), markup=False, highlight=False)
        return EXIT_OK
    if not args.json:
        console(stderr=True).print(_describe(plan), markup=False, highlight=False)
    _ask(args.yes)
    workflow.warm_up(args.model)
    agent = start_fork(store, plan, workflow, model=model_option(args.model), name=args.agent)
    if plan.trigger is not None:
        agent.check_trigger(plan.trigger, targs, plan.inputs)
    return _execute(agent, args, home, lambda: agent.run(plan.inputs, trigger=plan.trigger, args=targs))
