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
    Bar,
    Folded,
    compact_table,
    hint,
    hint_words,
    parse_assignments,
    positive_int,
    print_commands,
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
from .steps_file import load_steps_file  # noqa: F401  (cmd_capture's; kept importable from here)


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


def cmd_capture(args: argparse.Namespace) -> int:
    from ..errors import UsageError
    from ..skills.api import SkillStore

    given = [bool(args.from_run), bool(args.steps_file), args.steps_from_session is not None]
    if sum(given) != 1:
        raise UsageError("give exactly one of --from-run RUN_ID, --steps-file FILE or --steps-from-session SESSION_ID")
    if args.commands is not None and args.steps_from_session is None:
        raise UsageError("--commands picks commands of a session: give --steps-from-session SESSION_ID with it")
    _, runs, home = _stores(args)
    _quiet_logs(args, home)
    skills = SkillStore(home)
    inputs: dict[str, Any] = {"task_type": args.task_type}
    picked = None
    if args.from_run:
        inputs["run_id"] = runs.get_run(args.from_run).run_id
    elif args.steps_file:
        inputs.update(load_steps_file(args.steps_file))
    else:
        from ..sessions import SessionStore
        from ..skills.capture.from_session import pick

        with SessionStore(home) as sessions:
            picked = pick(sessions, args.steps_from_session, args.commands)
        # The person chose these by number: a person's capture (counted), kept as given like a steps file.
        inputs.update(steps=picked.steps, source="session", context=picked.context(), description=picked.description)
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
    if picked is not None:
        payload["session"] = picked.context()["captured_from_session"]
        payload["session"]["left_out"] = picked.left_out
        payload["session"]["outcome_not_recorded"] = picked.on_your_word
    if args.json:
        _print_json(payload)
    else:
        console = _console()
        if picked is not None:
            _show_picked(console, picked)
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


def _show_picked(console: Any, picked: Any) -> None:
    """Which commands of the session were kept, the parameters proposed and what was left out, each with why."""
    from rich.markup import escape

    from ..skills.capture.from_session import spec_of

    console.print(
        f"from {picked.session.agent} session {escape(picked.session.id)}: commands {spec_of(picked.numbers)}"
    )
    for name, values in picked.parameters.items():
        console.print(f"  parameter {name}: seen as {escape(', '.join(values[:5]))}")
    if picked.parameters:
        console.print(
            f"  (proposed from {picked.seen_elsewhere} other run(s) of the same commands in the imported logs)"
        )
    if picked.on_your_word:
        console.print(
            f"  [yellow]no outcome recorded[/] for command(s) {spec_of(picked.on_your_word)} (a shell history records "
            "none): kept on your word"
        )
    for f in picked.left_out:
        console.print(f"  [dim]left out: {f['number']}. {escape(f['command'][:80])} ({escape(f['reason'])})[/]")


# ---------------------------------------------------------------- listing


def cmd_procedures(args: argparse.Namespace) -> int:
    store, _, _ = _stores(args)
    rows = [procedure_summary(store, p) for p in store.procedures(args.task_type, None if args.all else "active")]
    if args.json:
        _print_json(rows)
        return EXIT_OK
    from rich.table import Column

    # Headers short on purpose (80 columns hold the id and every figure); the task gives way: it wraps.
    table = compact_table(
        _id_column(r["id"] for r in rows),
        *(Column(h, no_wrap=True, min_width=len(h)) for h in ("v", "conf", "ok/fail")),
        "health",
        Column("task (steps)", overflow="fold", ratio=1, min_width=10),
    )
    for r in rows:
        # The kind, by what it holds: shell steps, or a workflow's decisions.
        size = f"{r['decisions']} decisions" if r["kind"] == "trajectory" else f"{r['steps']} shell steps"
        table.add_row(
            r["id"],
            str(r["version"]),
            f"{r['confidence']:.2f}",
            f"{r['success_count']}/{r['failure_count']}",
            Folded(r["health"]),
            Folded(f"{r['task_type']} ({size})" + (f": {r['description']}" if r["description"] else "")),
        )
    if rows:
        print_table(_console(), table)
    else:
        _console().print("no procedures yet: capture one (`sherpa-skills learn capture-success --help` says how)")
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
        console.print(f"alias {a['id']}: {escape(repr(a['text']))}  [dim]({_alias_origin(a)}{_scope(a)})[/]")
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


def _alias_origin(alias: dict[str, Any]) -> str:
    """Where an alias came from: the run that took the procedure's path in its words, or who confirmed it (in which
    run, when a run's judge did)."""
    source, by = alias.get("source"), alias["by"]
    if source and source == by:
        return f"from {source}, which took this path"
    return f"from {source}, confirmed by {by}" if source else f"confirmed by {by}"


def _scope(answer: dict[str, Any]) -> str:
    return f", only for task type {answer['scope']}" if answer.get("scope") else ""


# ---------------------------------------------------------------- replay


def _confirm(console: Any, pending: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """`Execute? [y/n/edit]` at the confirmation state; edit opens $EDITOR on the rendered steps. Without a terminal
    nothing runs."""
    from ..skills.replay.edited import classify, editor_text, read_steps

    if not sys.stdin.isatty():
        return "refuse", {}
    proc = pending["procedure"]
    console.print(
        f"[bold]{proc['id']}[/] v{proc['version']} (confidence {proc['confidence']:.2f}, "
        f"replayed {proc['replayed']} times) will run:"
    )
    rendered = [step["command"] for step in pending["steps"]]
    for step in pending["steps"]:
        console.print(f"  {step['index']}. {step['command']}", markup=False)
    text = editor_text(rendered)
    while True:
        answer = input("Execute? [y/n/edit]: ").strip().lower()
        if answer in ("y", "yes"):
            return "approve", {}
        if answer in ("n", "no", ""):
            return "refuse", {}
        if answer not in ("e", "edit"):
            continue
        saved = _edit_in_editor(console, text)
        if saved is None:
            continue
        text, edited = saved, read_steps(saved)
        if not edited:
            console.print("the edited steps are empty: nothing runs")
            return "refuse", {}
        kind, change = classify(edited, rendered, [s["command"] for s in proc["steps"]])
        if kind == "same":
            console.print("no change to the steps")
            continue
        if kind == "params":
            return "edit", {"params": change}
        problem = _step_problem(edited, rendered)
        if problem:
            console.print(f"[red]not run[/]: {problem}; edit again, or answer n", markup=True)
            continue
        return "edit_steps", {"steps": edited}


def _edit_in_editor(console: Any, text: str) -> str | None:
    """The text after the person's $EDITOR (else $VISUAL, else vi) saved it; None when the editor failed."""
    import os
    import shlex
    import subprocess
    import tempfile

    editor = os.environ.get("EDITOR") or os.environ.get("VISUAL") or "vi"
    with tempfile.TemporaryDirectory(prefix="sherpa-steps-") as folder:
        path = Path(folder) / "steps.sh"
        path.write_text(text, encoding="utf-8")
        try:
            done = subprocess.run([*shlex.split(editor), str(path)], check=False)
        except (OSError, ValueError) as exc:
            console.print(f"[red]cannot start the editor[/] {editor!r}: {exc} (set EDITOR)")
            return None
        if done.returncode != 0:
            console.print(f"[red]the editor exited with {done.returncode}[/]: the steps are unchanged")
            return None
        return path.read_text(encoding="utf-8", errors="replace")


def _step_problem(edited: list[str], shown: list[str]) -> str | None:
    """What is wrong with a new step (as a capture checks it), or None: said before anything runs."""
    from pydantic import ValidationError

    from ..engine.shell_template import check_shell_template
    from ..errors import UsageError
    from ..skills.replay.runtime import as_template
    from ..skills.store.models import ProcedureStep, step_problem

    for number, command in enumerate(edited, 1):
        if command in shown:
            continue
        try:
            check_shell_template(as_template(ProcedureStep(command=command).command))
        except ValidationError as exc:
            return step_problem(number, exc)
        except UsageError as exc:
            return f"step {number}: {exc}"
    return None


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

    table = Table("id", "kind", _id_column([a.procedure_id for a in answers], "procedure"), "wording", "scope", "from")
    for a in answers:
        origin = _alias_origin(a.model_dump()) if a.kind == "alias" else f"rejected by {a.by}"
        table.add_row(a.id, a.kind, a.procedure_id, a.text, a.scope or "-", origin)
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
    _show_edited(console, p)
    console.print(f"[dim]LLM calls {p['llm_calls']}, run {p['run_id']}[/]")


def _show_edited(console: Any, p: dict[str, Any]) -> None:
    """What became of steps a person rewrote at the prompt."""
    edited = p.get("edited_steps")
    if not edited:
        return
    if edited.get("new_version"):
        console.print(
            f"your steps passed: kept as {p['procedure_id']} v{edited['new_version']} (a capture of yours; "
            f"v{edited['from_version']} is kept, `sherpa-skills learn show {p['procedure_id']} --version "
            f"{edited['from_version']}`)"
        )
    elif edited.get("not_kept"):
        console.print(f"your steps passed, and were not kept: {edited['not_kept']}")
    else:
        console.print(f"your steps did not pass: nothing kept; v{edited['from_version']} is unchanged")


def _show_tail(console: Any, tail: str | None) -> None:
    """A diverged command's stderr tail (redacted, escapes removed), indented under what it explains."""
    from rich.markup import escape

    for line in (tail or "").splitlines():
        console.print(f"       [dim]{escape(line)}[/]")


# ---------------------------------------------------------------- health, failures, stats


def cmd_health(args: argparse.Namespace) -> int:
    store, _, _ = _stores(args)
    reports = [store.health(p.id) for p in store.procedures()]
    if args.degraded_only:
        reports = [r for r in reports if r.status not in ("healthy", "new")]
    if args.json:
        _print_json([r.model_dump(mode="json") for r in reports])
        return EXIT_OK
    # "success" is the rolling rate over the counted executions; "runs" every execution; the pattern wraps.
    table = compact_table(
        _id_column((r.procedure_id for r in reports), "procedure"), "status", "success", "runs", "failure pattern"
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
    from ..skills.decide.summary import with_memory_savings

    data = with_memory_savings(store, stats(store))
    if args.json:
        _print_json(data)
        return EXIT_OK
    # Headers short on purpose, so 80 columns hold a table: "div." diverged replays, "tokens"/"calls" saved.
    table = compact_table(
        _id_column((r["procedure_id"] for r in data["per_procedure"]), "procedure"),
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
            _id_column((r["run_id"] for r in recent), "run"),
            _id_column((r["procedure_id"] for r in recent), "procedure"),
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
    with Bar("embedding", as_json=args.json) as bar:
        bar(0, total, "procedures")
        count = Matcher(store).reindex(progress=lambda done: bar(done, total, "procedures"))
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
            f"imported {len(result.candidates)} skills as candidates for review, {len(result.known)} already known; "
            "see them and how to promote one with:",
            soft_wrap=False,
        )
        print_commands(console, hint_words(args, "learn", "candidates"))
        for problem in result.problems:
            _console(stderr=True).print(f"  {problem}")
    return EXIT_OK if not result.problems else EXIT_ERROR


def cmd_import(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from ..errors import UsageError
    from ..skills.store.models import CapturedLearning, CapturedProcedure
    from ..skills.store.signatures import step_signature

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
    listed = data.get("procedures") or []
    with Bar("importing", as_json=args.json) as bar:
        for i, raw in enumerate(listed):
            bar(i, len(listed), "procedures")
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
    warnings = []
    with Bar("indexing", as_json=args.json) as bar:
        for i in range(0, len(fresh), 256):
            bar(i, len(fresh), "imported procedures")
            warnings.append(matcher.index_many(fresh[i : i + 256]))
    warning = next((w for w in warnings if w), None)
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
        console = _console()
        console.print(
            f"imported {added} procedures as candidates for review, skipped {skipped} already known"
            + (f"; {len(problems)} invalid" if problems else "")
            + "; see them and how to promote one with:",
            soft_wrap=False,
        )
        print_commands(console, hint_words(args, "learn", "candidates"))
        if warning:
            _console(stderr=True).print(
                f"procedure index not updated: {warning} (run `{hint(args, 'learn', 'reindex')}`)"
            )
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
