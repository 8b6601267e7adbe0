"""`sherpa-skills learn …`: the skill store from the command line (capture, list, replay, health, stats)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..skills.store.stats import procedure_detail, procedure_summary, stats
from .console import (
    EXIT_ERROR,
    EXIT_NEEDS_CONFIRMATION,
    EXIT_OK,
    Folded,
    parse_assignments,
    positive_int,
    print_table,
)
from .console import (
    console as _console,
)
from .console import (
    print_json as _print_json,
)
from .console import (
    when as _when,
)


def _stores(args: argparse.Namespace) -> tuple[Any, Any, Path]:
    from ..engine.runstore import RunStore
    from ..home import resolve_home
    from ..skills.store.database import ProcedureDatabase

    home = resolve_home(args.home)
    return ProcedureDatabase(home=home), RunStore(home=home), home


def _quiet_logs(args: argparse.Namespace, home: Path) -> None:
    from ..logs import configure

    (home / "logs").mkdir(exist_ok=True)
    configure(level="error", json_file=home / "logs" / "learn.jsonl")


def _id_column(ids: Any, header: str = "id") -> Any:
    """A column that never cuts an id, however narrow the terminal: other columns give way."""
    from rich.table import Column

    return Column(header, no_wrap=True, overflow="fold", min_width=max([len(header), *(len(i) for i in ids)]))


# ---------------------------------------------------------------- capture


def load_steps_file(path: str) -> dict[str, Any]:
    """A YAML or JSON list of steps, or an object with description, tags, pre/postconditions and steps."""
    from pydantic import TypeAdapter, ValidationError

    from ..errors import WorkflowError
    from ..skills.store.models import ProcedureStep, StepsFile
    from ..yaml_source import load_yaml_file

    located = load_yaml_file(path)
    try:
        if isinstance(located.data, list):
            steps = TypeAdapter(list[ProcedureStep]).validate_python(located.data)
            return {"steps": [s.model_dump() for s in steps]}
        parsed = StepsFile.model_validate(located.data)
    except ValidationError as exc:
        raise WorkflowError(
            [
                located.problem(
                    tuple(e["loc"]), f"{'.'.join(map(str, e['loc']))}: {e['msg'].removeprefix('Value error, ')}"
                )
                for e in exc.errors()
            ]
        ) from None
    return {**parsed.model_dump(exclude={"steps"}), "steps": [s.model_dump() for s in parsed.steps]}


def cmd_capture(args: argparse.Namespace) -> int:
    from ..errors import UsageError
    from ..skills.api import SkillStore

    if bool(args.from_run) == bool(args.steps_file):
        raise UsageError("give exactly one of --from-run RUN_ID or --steps-file FILE")
    _, runs, home = _stores(args)
    _quiet_logs(args, home)
    skills = SkillStore(home)
    inputs: dict[str, Any] = {"task_type": args.task_type}
    if args.from_run:
        inputs["run_id"] = runs.get_run(args.from_run).run_id
    else:
        inputs.update(load_steps_file(args.steps_file))
    if args.description:
        inputs["description"] = args.description
    if args.tag:
        inputs["tags"] = args.tag
    if args.procedure:
        inputs["procedure_id"] = skills.get(args.procedure).id
    result = skills._capture(inputs)
    payload: dict[str, Any] = {
        "outcome": result.outcome,
        "run_id": result.run_id,
        "filtered": result.filtered,
        "secrets_to_env": result.secrets_to_env,
    }
    if result.outcome in ("error", "rejected"):
        payload["reason" if result.outcome == "rejected" else "error"] = result.reason
    elif result.procedure is not None:
        payload.update(result.procedure.model_dump(mode="json"))
        payload["index_warning"] = result.index_warning
    if args.json:
        _print_json(payload)
    else:
        console = _console()
        if result.outcome == "captured":
            console.print(
                f"[green]captured[/] {payload['id']} v{payload['version']} ({payload['task_type']}, "
                f"{len(payload['steps'])} steps, confidence {payload['confidence']:.2f})"
            )
            if payload["confidence"] < 0.8:
                console.print(
                    "  not replayed yet: one success is not proof; a second success or `sherpa-skills learn promote "
                    f"{payload['id']}` makes it replayable"
                )
        elif result.outcome == "duplicate":
            console.print(
                f"[yellow]already known[/]: {payload['id']} gained a success (now {payload['success_count']}, "
                f"confidence {payload['confidence']:.2f})"
            )
        else:
            console.print(f"[red]not captured[/]: {payload.get('reason') or payload.get('error')}")
        for f in result.filtered:
            console.print(f"  [dim]left out: {f['command']} ({f['reason']})[/]")
        if result.secrets_to_env:
            console.print(
                "  [yellow]a literal secret was replaced by an environment variable[/]: "
                f"{', '.join(result.secrets_to_env)} (set it before replaying; the value was not stored)"
            )
        if payload.get("index_warning"):
            console.print(
                f"[yellow]procedure index not updated[/]: {payload['index_warning']} (run "
                "`sherpa-skills learn reindex`)"
            )
    return EXIT_OK if result.outcome in ("captured", "duplicate") else EXIT_ERROR


# ---------------------------------------------------------------- listing


def cmd_procedures(args: argparse.Namespace) -> int:
    store, _, _ = _stores(args)
    rows = [procedure_summary(store, p) for p in store.procedures(args.task_type, None if args.all else "active")]
    if args.json:
        _print_json(rows)
        return EXIT_OK
    from rich.table import Column, Table

    # The description gives way first (it wraps): unwrapped, its text took the width of every column but the id's.
    table = Table(
        _id_column(r["id"] for r in rows),
        Column("task type", max_width=20, overflow="fold"),
        *(Column(h, no_wrap=True, min_width=len(h)) for h in ("v", "confidence", "ok", "failed", "health", "steps")),
        Column("description", overflow="fold", ratio=1, min_width=10),
    )
    for r in rows:
        size = (
            f"{r['decisions']} decisions" if r["kind"] == "trajectory" else f"{r['steps']} shell"
        )  # the kind, by what it holds
        table.add_row(
            r["id"],
            Folded(r["task_type"]),
            str(r["version"]),
            f"{r['confidence']:.2f}",
            str(r["success_count"]),
            str(r["failure_count"]),
            Folded(r["health"]),
            Folded(size),
            Folded(r["description"]),
        )
    if rows:
        print_table(_console(), table)
    else:
        _console().print("no procedures yet: capture one with `sherpa-skills learn capture-success`")
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    from rich.markup import escape

    store, _, _ = _stores(args)
    p = store.get(args.id, args.version)
    data = procedure_detail(store, p)
    health, executions = store.health(p.id, version=p.version), store.executions(p.id, limit=10)
    if args.json:
        _print_json(data)
        return EXIT_OK
    console = _console()
    console.print(f"[bold]{p.id}[/] v{p.version} — {p.task_type} — confidence {p.confidence:.2f} — {health.status}")
    if p.description:
        console.print(p.description)
    for i, s in enumerate(p.steps, 1):
        pattern = f", /{s.expected_output_pattern}/" if s.expected_output_pattern else ""
        extra = f"  [dim]exit {s.expected_exit_code}{pattern}, timeout {s.timeout_secs:g}s[/]"
        console.print(f"  {i}. {s.command}{extra}")
    for i, d in enumerate(p.decisions, 1):
        arg_text = f" {json.dumps(d.args)}" if d.args else ""
        checks = "".join(f", check {c.action} {json.dumps(c.features)}" for c in d.checks if c.features is not None)
        console.print(f"  {i}. in {d.state}: {d.trigger}{arg_text}  [dim]({d.decided_by}{checks})[/]")
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
        console.print(f"alias {a['id']}: {a['text']!r}  [dim](confirmed by {a['by']}{_scope(a)})[/]")
    for a in data["rejections"]:
        console.print(f"rejected {a['id']}: {a['text']!r}  [dim](by {a['by']}{_scope(a)})[/]")
    for b in data["branches"]:
        path = " → ".join(f"{d['state']}: {d['trigger']}" for d in b["decisions"])
        console.print(f"branch taken by {b['runs']} run(s), leaving at decision {b['step']} in {b['state']}: {path}")
        console.print(f"  [dim]{b['reason']}[/]")
    for e in executions:
        # A reason quotes the command's stderr: its brackets are text, not rich markup.
        console.print(f"  [dim]{e.outcome:<9} v{e.version} step {e.diverged_step or '-'} {escape(e.reason or '')}[/]")
    return EXIT_OK


def _scope(answer: dict[str, Any]) -> str:
    return f", only for task type {answer['scope']}" if answer.get("scope") else ""


# ---------------------------------------------------------------- replay


def _confirm(console: Any, pending: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """y/n/edit at the confirmation state; without a terminal nothing runs."""
    if not sys.stdin.isatty():
        return "refuse", {}
    proc = pending["procedure"]
    console.print(
        f"[bold]{proc['id']}[/] v{proc['version']} (confidence {proc['confidence']:.2f}, "
        f"replayed {proc['replayed']} times) will run:"
    )
    for step in pending["steps"]:
        console.print(f"  {step['index']}. {step['command']}")
    while True:
        answer = input("Run these steps? [y]es / [n]o / [e]dit parameters: ").strip().lower()
        if answer in ("y", "yes"):
            return "approve", {}
        if answer in ("n", "no", ""):
            return "refuse", {}
        if answer in ("e", "edit"):
            raw = input("parameters as NAME=VALUE, separated by spaces: ").split()
            return "edit", {"params": parse_assignments(raw, "parameter")}


def replay_payload(result: Any) -> dict[str, Any]:
    from ..skills.api import replay_payload as payload

    return payload(result)


def cmd_replay(args: argparse.Namespace) -> int:
    from ..errors import UsageError
    from ..skills.api import SkillStore

    _, _, home = _stores(args)
    _quiet_logs(args, home)
    skills = SkillStore(home)
    console = _console(stderr=args.json)
    if args.reject:
        if args.procedure or args.execute:
            raise UsageError(
                "--reject records that the task is none of the offered procedures: no --procedure or --execute"
            )
        return _reject(args, skills, console)

    def replay(procedure_id: str | None) -> dict[str, Any]:
        return skills.replay(
            args.query,
            procedure_id=procedure_id,
            task_type=args.task_type,
            params=parse_assignments(args.param, "--param"),
            execute=args.execute,
            cwd=args.cwd,
            min_confidence=args.min_confidence,
            verify=_verify_model(args.verify, args.verify_model),
            confirm=None if args.yes else (lambda pending: _confirm(console, pending)),
        )

    payload = replay(args.procedure)
    if payload["status"] == "needs-confirmation" and not args.json and sys.stdin.isatty():
        chosen = _which_one(console, payload)  # the person at the terminal is the judge
        if chosen is None:
            rejected = skills.reject(args.query, [c["procedure_id"] for c in payload["candidates"]], args.task_type)
            console.print(f"remembered: not asked about {len(rejected)} procedure(s) for this task again")
            return EXIT_ERROR
        payload = replay(chosen)
    if payload["status"] == "refused" and not sys.stdin.isatty() and args.execute and not args.yes:
        payload["reason"] = "not confirmed: executing needs confirmation; pass --yes to execute without asking"
    if args.json:
        _print_json(payload)
    else:
        _show_replay(console, payload)
    if payload["status"] == "needs-confirmation":
        return EXIT_NEEDS_CONFIRMATION
    return EXIT_OK if payload["status"] in ("dry-run", "succeeded") else EXIT_ERROR


def _which_one(console: Any, payload: dict[str, Any]) -> str | None:
    """ "which one? [1-k / n]" over the offered candidates; the chosen id, or None for none of them."""
    candidates = payload["candidates"]
    console.print("[yellow]not sure which procedure this task is[/]; plausible:")
    for i, c in enumerate(candidates, 1):
        params = "".join(f"; {k}={v}" for k, v in c["params"].items())
        console.print(f"  {i}. {c['procedure_id']}: {c['description']}  [dim](score {c['score']:.2f}{params})[/]")
    while True:
        answer = input(f"which one? [1-{len(candidates)} / n]: ").strip().lower()
        if answer in ("n", "no", "none", ""):
            return None
        if answer.isdigit() and 1 <= int(answer) <= len(candidates):
            return str(candidates[int(answer) - 1]["procedure_id"])


def _reject(args: argparse.Namespace, skills: Any, console: Any) -> int:
    rejected = skills.reject(args.query, None, args.task_type)
    payload = {
        "status": "rejected" if rejected else "no-match",
        "rejected": [a.model_dump(mode="json") for a in rejected],
        "reason": None if rejected else "nothing was offered for this task: there is nothing to reject",
    }
    if args.json:
        _print_json(payload)
    elif rejected:
        for a in rejected:
            console.print(f"rejected {a.id}: {a.procedure_id} is not {a.text!r}; it will not be offered for it again")
    else:
        console.print(f"[yellow]{payload['reason']}[/]")
    return EXIT_OK if rejected else EXIT_ERROR


def cmd_decisions(args: argparse.Namespace) -> int:
    from ..skills.decide.examples import example_counts
    from ..skills.decide.summary import state_summaries

    store = _stores(args)[0]
    if args.forget is not None:
        return _forget_state(args, store)
    if args.states:
        summaries = state_summaries(store, args.workflow, args.error_bound)
        if args.json:
            _print_json(summaries)
            return EXIT_OK
        _show_states(summaries)
        return EXIT_OK
    rows = example_counts(store, args.workflow)
    if args.json:
        _print_json(rows)
        return EXIT_OK
    if not rows:
        _console().print(
            "no decisions learned yet: a workflow that learns (`policy: {learn: true}`) keeps its LLM's decisions"
        )
        return EXIT_OK
    from rich.table import Table

    table = Table("workflow", "state", "trigger", "examples", "last")
    for r in rows:
        table.add_row(r["workflow"], r["state"], r["trigger"], str(r["examples"]), _when(r["last"]))
    print_table(_console(), table)
    _show_states(state_summaries(store, args.workflow, args.error_bound))
    return EXIT_OK


def _show_states(summaries: list[dict[str, Any]]) -> None:
    from rich.table import Table

    table = Table(
        "workflow", "state", "examples", "calibrated coverage", "bound", "held", "why it abstains", title="by state"
    )
    for r in summaries:
        table.add_row(
            r["workflow"],
            r["state"],
            str(r["examples"]),
            f"{100 * r['coverage']:.0f} %",
            f"{r['bound']:g}",
            "yes" if r["bound_held"] else "no",
            r["abstains"],
        )
    print_table(_console(), table)


def _forget_state(args: argparse.Namespace, store: Any) -> int:
    """`learn decisions WORKFLOW --forget STATE`: every example of the state, after the workflow changed there."""
    from ..errors import UsageError
    from ..skills.decide.memory import DecisionMemory

    if not args.workflow:
        raise UsageError("learn decisions --forget STATE needs the WORKFLOW whose state it is")
    gone = DecisionMemory(store).forget_state(args.workflow, args.forget)
    if args.json:
        _print_json({"workflow": args.workflow, "state": args.forget, "forgotten": gone})
    else:
        _console().print(f"forgot {gone} example(s) of '{args.forget}' in {args.workflow}")
    return EXIT_OK


def cmd_aliases(args: argparse.Namespace) -> int:
    from ..skills.api import SkillStore

    skills = SkillStore(_stores(args)[2])
    answers = skills.aliases(args.procedure)
    if args.json:
        _print_json([a.model_dump(mode="json") for a in answers])
        return EXIT_OK
    if not answers:
        _console().print("no aliases or rejections yet: they are recorded when a needs-confirmation is answered")
        return EXIT_OK
    from rich.table import Table

    table = Table("id", "kind", _id_column([a.procedure_id for a in answers], "procedure"), "wording", "scope", "by")
    for a in answers:
        table.add_row(a.id, a.kind, a.procedure_id, a.text, a.scope or "-", a.by)
    print_table(_console(), table)
    return EXIT_OK


def cmd_forget(args: argparse.Namespace) -> int:
    from ..skills.api import SkillStore

    answer = SkillStore(_stores(args)[2]).forget(args.id)
    if args.json:
        _print_json({"forgotten": answer.model_dump(mode="json")})
    else:
        _console().print(f"forgot {answer.kind} {answer.id} of {answer.procedure_id}: {answer.text!r}")
    return EXIT_OK


def _verify_model(flag: bool, named: str | None) -> str | None:
    """--verify-model, else with --verify SHERPA_SKILLS_VERIFY_MODEL or SHERPA_SKILLS_MODEL;
    None leaves it to the env."""
    import os

    from ..errors import UsageError
    from ..llm.call import MODEL_ENV
    from ..skills.match.verifier import MODEL_ENV as VERIFY_ENV

    if named is not None:
        if not named.strip():
            raise UsageError("--verify-model needs a model name (a litellm model string, or scripted/PATH.yaml)")
        return named.strip()
    if not flag:
        return None
    model = os.environ.get(VERIFY_ENV, "").strip() or os.environ.get(MODEL_ENV, "").strip()
    if not model:
        raise UsageError(f"--verify needs a model: --verify-model MODEL, or set {VERIFY_ENV} (or {MODEL_ENV})")
    return model


def _show_replay(console: Any, p: dict[str, Any]) -> None:
    from rich.markup import escape

    from ..skills.replay.divergence import why

    if p["degraded"]:
        console.print(f"[yellow]{p['degraded']}[/]")
    v = p.get("verification")
    if v:
        said = f"chose {v['procedure_id']}" if v["procedure_id"] else "chose none"
        console.print(f"[dim]the judge {v['model']} {said} ({v['calls']} call(s), {v['tokens']} tokens)[/]")
    if p["status"] == "needs-confirmation":
        console.print(f"[yellow]needs confirmation[/]: {p['reason']}")
        for i, c in enumerate(p["candidates"], 1):
            console.print(f"  {i}. {c['procedure_id']}: {c['description']}  [dim](score {c['score']:.2f})[/]")
        console.print("choose: --procedure ID (remembered as an alias), or --reject for none of these")
        return
    if p["status"] == "no-match":
        console.print(f"[yellow]no procedure to replay[/]: {p['reason'] or 'nothing matched'}")
        for m in (p.get("matches") or [])[:3]:
            if m.get("reason"):
                console.print(f"  [dim]{m['procedure_id']}: {m['reason']}[/]")
        return
    head = (
        f"[bold]{p['procedure_id']}[/] v{p['version']} (confidence {p['confidence']:.2f}, "
        f"replayed {p['replayed_before']} times)"
        if p["procedure_id"]
        else ""
    )
    colour = {"succeeded": "green", "dry-run": "cyan"}.get(p["status"], "red")
    console.print(f"[bold {colour}]{p['status']}[/] {head}")
    if p.get("params_from_task"):
        console.print("parameters from the task: " + ", ".join(f"{k}={v}" for k, v in p["params_from_task"].items()))
    # Why a step diverged is what its stderr says: shown under that step (or, for a postcondition, the reason).
    divergence = p.get("divergence") or {}
    tail = divergence.get("stderr_tail")
    at_step = divergence.get("step") if tail else None
    for s in p["steps"]:
        mark = "" if "passed" not in s else ("[green]✓[/] " if s["passed"] else "[red]✗[/] ")
        said = f"  [red]{escape(s['reason'])}[/]" if s.get("reason") else ""
        console.print(f"  {mark}{s['index']}. {escape(s['command'])}{said}")
        if at_step is not None and s["index"] == at_step:
            _show_tail(console, tail)
    if p["status"] == "dry-run":
        console.print("dry run: nothing was executed; add --execute to run these steps")
    elif p["reason"] and p["status"] != "succeeded" and at_step is None:
        reason, quoted = str(p["reason"]), why("", tail)
        if tail and reason.endswith(quoted):  # the tail's last line, said once: in the tail printed below
            reason = reason[: -len(quoted)]
        console.print(f"reason: {escape(reason)}")
        _show_tail(console, tail)
    console.print(f"[dim]LLM calls {p['llm_calls']}, run {p['run_id']}[/]")


def _show_tail(console: Any, tail: str | None) -> None:
    """A diverged command's stderr tail (redacted, escapes removed), indented under what it explains."""
    from rich.markup import escape

    for line in (tail or "").splitlines():
        console.print(f"       [dim]{escape(line)}[/]")


# ---------------------------------------------------------------- health, failures, stats


def cmd_health(args: argparse.Namespace) -> int:
    from rich.markup import escape

    store, _, _ = _stores(args)
    reports = [store.health(p.id) for p in store.procedures()]
    if args.degraded_only:
        reports = [r for r in reports if r.status not in ("healthy", "new")]
    if args.json:
        _print_json([r.model_dump(mode="json") for r in reports])
        return EXIT_OK
    from rich.table import Column, Table

    table = Table(
        _id_column((r.procedure_id for r in reports), "procedure"),
        "status",
        "rolling success",
        "executions",
        Column("failure pattern", overflow="ellipsis", ratio=1),
    )
    for r in reports:
        rate = (
            "-"
            if r.rolling_success_rate is None
            else f"{r.rolling_success_rate:.0%} of {r.counted_executions}"
            + (" (too few)" if r.counted_executions < r.min_evidence else "")
        )
        table.add_row(r.procedure_id, r.status, rate, str(r.total_executions), escape(r.failure_pattern or ""))
    _console().print(table if reports else "nothing to report")
    return EXIT_OK


def cmd_failures(args: argparse.Namespace) -> int:
    store, _, home = _stores(args)
    if args.task is not None:
        return _failures_for_task(args, store, home)
    rows = store.learnings(args.task_type, limit=args.limit)
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


def _failures_for_task(args: argparse.Namespace, store: Any, home: Path) -> int:
    """The learnings the planner would be shown for this task: found by meaning, each with its relevance and why."""
    from rich.markup import escape

    from ..errors import UsageError
    from ..skills.match.failures import FailureFinder

    if not args.task.strip():
        raise UsageError("--task needs the task's text (what the planner would be asked to do)")
    _quiet_logs(args, home)
    found = FailureFinder(store).find(args.task, args.task_type, limit=args.limit)
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
    store, _, _ = _stores(args)
    data = stats(store)
    if args.json:
        _print_json(data)
        return EXIT_OK
    from rich.table import Table

    table = Table(
        _id_column((r["procedure_id"] for r in data["per_procedure"]), "procedure"),
        "task type",
        "kind",
        "replays",
        "diverged",
        "tokens saved",
        "LLM calls saved",
        title="per procedure",
    )
    for r in data["per_procedure"]:
        table.add_row(
            r["procedure_id"],
            r["task_type"],
            r["kind"],
            str(r["replays"]),
            str(r["diverged"]),
            str(r["tokens_saved"]),
            str(r["llm_calls_saved"]),
        )
    console = _console()
    console.print(table)
    if data["per_workflow"]:
        table = Table(
            "workflow / task type",
            "procedures",
            "replays",
            "diverged",
            "tokens saved",
            "LLM calls saved",
            title="per workflow",
        )
        for r in data["per_workflow"]:
            table.add_row(
                r["task_type"],
                str(r["procedures"]),
                str(r["replays"]),
                str(r["diverged"]),
                str(r["tokens_saved"]),
                str(r["llm_calls_saved"]),
            )
        console.print(table)
    recent = data["per_run"][-args.runs :]
    if recent:
        table = Table(
            _id_column((r["run_id"] for r in recent), "run"),
            "procedure",
            "v",
            "outcome",
            "LLM calls",
            "tokens saved",
            "LLM calls saved",
            title=f"last {len(recent)} of {len(data['per_run'])} runs (--json lists all)",
        )
        for r in recent:
            table.add_row(
                r["run_id"],
                r["procedure_id"],
                str(r["version"]),
                r["outcome"],
                str(r["llm_calls"]),
                str(r["tokens_saved"]),
                str(r["llm_calls_saved"]),
            )
        console.print(table)
    memory = data["decision_memory"]
    if memory["per_workflow"]:
        table = Table("workflow", "runs", "decisions answered", "tokens saved (estimated)", title="decision memory")
        for r in memory["per_workflow"]:
            table.add_row(r["workflow"], str(r["runs"]), str(r["llm_calls_saved"]), str(r["tokens_saved"]))
        console.print(table)
    console.print(
        f"total: {data['replays']} replays, {data['tokens_saved']} tokens and {data['llm_calls_saved']} LLM calls saved"
        + (
            f" ({memory['llm_calls_saved']} calls and {memory['tokens_saved']} tokens by the decision memory)"
            if memory["llm_calls_saved"]
            else ""
        )
    )
    return EXIT_OK


# ---------------------------------------------------------------- maintenance


def cmd_reindex(args: argparse.Namespace) -> int:
    """Embed every procedure and learning again, in batches,
    with a progress bar on the terminal (never silent on long work)."""
    import time

    from ..skills.match.failures import FailureFinder
    from ..skills.match.matcher import Matcher

    store, _, home = _stores(args)
    _quiet_logs(args, home)  # the embedder's and the index's log lines go to the log file, never into --json
    total = store.count()
    started = time.perf_counter()
    console = _console(stderr=True)
    if args.json or total < 50:
        count = Matcher(store).reindex()
    elif not console.is_terminal:  # a log, not a bar: one line per batch
        count = Matcher(store).reindex(progress=lambda done: console.print(f"embedded {done}/{total} procedures"))
    else:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        with Progress(
            TextColumn("embedding procedures"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=console,
        ) as progress:
            task = progress.add_task("reindex", total=total)
            count = Matcher(store).reindex(progress=lambda done: progress.update(task, completed=done))
    learnings = FailureFinder(store).reindex()
    seconds = time.perf_counter() - started
    if args.json:
        _print_json(
            {
                "reindexed": count,
                "learnings": learnings,
                "seconds": round(seconds, 3),
                "per_second": round((count + learnings) / seconds, 1) if seconds else None,
            }
        )
    else:
        _console(stderr=False).print(
            f"indexes rebuilt from the store: {count} procedures and {learnings} learnings in {seconds:.1f} s"
        )
    return EXIT_OK


def cmd_promote(args: argparse.Namespace) -> int:
    from ..skills.store.scoring import replay_refusal

    store, _, _ = _stores(args)
    p = store.promote(store.get(args.id).id, by=args.agent)
    health = store.health(p.id)
    promotion = store.promotions(p.id)[-1]
    refusal = replay_refusal(p, health)  # replay's own gate: promote never promises what replay refuses
    if args.json:
        _print_json(
            {
                **p.model_dump(mode="json"),
                "health": health.status,
                "replayable": refusal is None,
                "refusal": refusal,
                "promotion": promotion,
            }
        )
        return EXIT_OK
    console = _console()
    verdict = (
        f"it can be replayed (confidence {p.confidence:.2f})"
        if refusal is None
        else f"it cannot be replayed yet: {refusal}"
    )
    console.print(f"{p.id} is active and promoted by {promotion['promoted_by']}: {verdict}")
    earlier = promotion["executions_before"]
    console.print(
        f"health starts a fresh evidence window ({health.status}): "
        f"its {earlier} earlier execution{'s' if earlier != 1 else ''} "
        f"(was {promotion['health_before']}) no longer count, and are kept (`learn show`)"
        if earlier
        else f"health: {health.status} until it runs"
    )
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    store, _, _ = _stores(args)
    if args.skills:
        return _export_skills(args, store)
    data: dict[str, Any] = {
        "format": "sherpa-skills/procedures",
        "version": 1,
        "procedures": [
            {
                **p.model_dump(mode="json"),
                "versions": [
                    store.get(p.id, v["version"]).model_dump(mode="json")
                    for v in store.versions(p.id)
                    if v["version"] != p.version
                ],
            }
            for p in store.procedures(status=None)
        ],
        "learnings": [x.model_dump(mode="json") for x in store.learnings(limit=100_000)],
    }
    text = json.dumps(data, indent=2)
    if args.file and args.file != "-":
        Path(args.file).write_text(text + "\n", encoding="utf-8")
        if args.json:
            _print_json({"exported": len(data["procedures"]), "learnings": len(data["learnings"]), "file": args.file})
        else:
            _console(stderr=True).print(f"exported {len(data['procedures'])} procedures to {args.file}")
    else:
        sys.stdout.write(text + "\n")
    return EXIT_OK


def _export_skills(args: argparse.Namespace, store: Any) -> int:
    from ..bridge.skill_export import export_skills
    from ..errors import UsageError

    if args.file:
        raise UsageError("learn export: give FILE or --skills DIR, not both")
    result = export_skills(store, args.skills)
    if args.json:
        _print_json(result.to_dict())
        return EXIT_OK
    console = _console()
    console.print(f"exported {len(result.exported)} procedures as Agent Skills in {result.directory}")
    for done in result.exported:
        console.print(f"  {done['skill']}  [dim]{done['procedure_id']}[/]")
    for skipped in result.skipped:
        console.print(f"  [dim]skipped {skipped['procedure_id']}: {skipped['reason']}[/]")
    return EXIT_OK


def _import_skills(args: argparse.Namespace, store: Any) -> int:
    from ..bridge.skill_export import import_skills
    from ..errors import UsageError

    if args.file:
        raise UsageError("learn import: give FILE or --skills DIR, not both")
    result = import_skills(store, args.skills)
    if args.json:
        _print_json(result.to_dict())
    else:
        console = _console()
        console.print(
            f"imported {len(result.candidates)} skills as candidates for review (`learn candidates`; `learn promote "
            f"ID` makes one replayable); {len(result.known)} already known"
        )
        for problem in result.problems:
            _console(stderr=True).print(f"  {problem}")
    return EXIT_OK if not result.problems else EXIT_ERROR


def cmd_import(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from ..errors import UsageError
    from ..skills.store.database import step_signature
    from ..skills.store.models import CapturedLearning, CapturedProcedure

    store, _, home = _stores(args)
    _quiet_logs(args, home)  # indexing loads the embedder, whose log lines belong in the log file, never in --json
    if args.skills:
        return _import_skills(args, store)
    if not args.file:
        raise UsageError("learn import needs FILE (a `learn export` file) or --skills DIR")
    try:
        data = json.loads(Path(args.file).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read {args.file}: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != "sherpa-skills/procedures":
        raise UsageError(f"{args.file} is not a `learn export` file (format sherpa-skills/procedures)")
    added = skipped = 0
    problems = []
    fresh: list[Any] = []
    for i, raw in enumerate(data.get("procedures") or []):
        try:
            proc = CapturedProcedure.model_validate({k: v for k, v in raw.items() if k != "versions"})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
            problems.append(f"procedures[{i}]{where}: {first['msg'].removeprefix('Value error, ')}")
            continue
        known = store.find_by_signature(step_signature(proc.steps), proc.task_type)
        exists = known is not None
        if not exists:
            try:
                store.get(proc.id)
                exists = True
            except Exception:
                exists = False
        if exists:
            skipped += 1
            continue
        # A file's counts are its author's word: kept as a claim, never counted; the steps wait for review.
        stored, _ = store.add_candidate(
            proc,
            "import",
            f"import:{Path(args.file).name}",
            successes=proc.success_count + proc.claimed_successes,
            failures=proc.failure_count + proc.claimed_failures,
            note=f"imported from {args.file}",
        )
        fresh.append(stored)
        added += 1
    for raw in data.get("learnings") or []:
        try:
            store.add_learning(CapturedLearning.model_validate({**raw, "id": None}))
        except ValidationError:
            pass
    from ..skills.match.matcher import Matcher

    # The index embeds the new procedures now, in batches: matching never silently falls back to words alone.
    matcher = Matcher(store)
    warning = next((w for w in (matcher.index_many(fresh[i : i + 256]) for i in range(0, len(fresh), 256)) if w), None)
    from ..skills.match.failures import FailureFinder

    FailureFinder(store).sync()  # imported learnings are found by meaning on the next plan
    summary = {
        "added": added,
        "candidates": [p.id for p in fresh if p.status == "candidate"],
        "skipped": skipped,
        "problems": problems,
        "indexed": 0 if warning else len(fresh),
        "index_warning": warning,
    }
    if args.json:
        _print_json(summary)
    else:
        _console().print(
            f"imported {added} procedures as candidates for review (`learn candidates`; `learn promote ID` makes one "
            f"replayable), skipped {skipped} already known" + (f"; {len(problems)} invalid" if problems else "")
        )
        if warning:
            _console(stderr=True).print(f"procedure index not updated: {warning} (run `sherpa-skills learn reindex`)")
        for p in problems:
            _console(stderr=True).print(f"  {p}")
    return EXIT_OK if not problems else EXIT_ERROR


# ---------------------------------------------------------------- parser


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

    p = add("capture-success", cmd_capture, "crystallise a successful run, or a steps file, into a procedure")
    p.add_argument("task_type")
    p.add_argument("--from-run", metavar="RUN_ID")
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

    p = add("forget", cmd_forget, "remove one alias (a<N>) or rejection (r<N>)")
    p.add_argument("id", metavar="ALIAS_ID")
    p.add_argument("--json", action="store_true")

    from ..skills.store.scoring import RULE

    p = add("health", cmd_health, "rolling success rate and status of every procedure")
    p.epilog = RULE
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

    from .review import add_review_commands

    add_review_commands(add)
