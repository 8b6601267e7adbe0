"""`learn replay`: match a task, confirm or edit the steps at the terminal, replay them, say how it went."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...engine.inputs import parse_assignments
from ..console import EXIT_ERROR, EXIT_NEEDS_CONFIRMATION, EXIT_OK, visible
from ..console import console as _console
from ..console import print_json as _print_json
from .common import open_home, quiet_logs

if TYPE_CHECKING:
    from ...skills.api import SkillStore


def _confirm(console: Any, store: SkillStore, pending: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """`Execute? [y/n/edit]` at the confirmation state; edit opens $EDITOR on the rendered steps. Without a terminal
    nothing runs."""
    from ...skills.face.text import classify, editor_text, read_steps

    if not sys.stdin.isatty():
        return "refuse", {}
    proc = pending["procedure"]
    console.print(
        f"[bold]{proc['id']}[/] v{proc['version']} (confidence {proc['confidence']:.2f}, "
        f"replayed {proc['replayed']} times) will run:"
    )
    rendered = [step["command"] for step in pending["steps"]]
    for step in pending["steps"]:
        console.print(f"  {step['index']}. {visible(step['command'])}")  # what runs, escapes written out
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
        problem = store.edited_step_problem(edited, rendered)
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


def cmd_replay(args: argparse.Namespace) -> int:
    from ...errors import UsageError

    house = open_home(args)
    store, home = house.skills, house.home
    quiet_logs(args, home)
    console = _console(stderr=args.json)
    if args.reject:
        if args.procedure or args.execute:
            raise UsageError(
                "--reject records that the task is none of the offered procedures: no --procedure or --execute"
            )
        return _reject(args, store, console)

    def replay(procedure_id: str | None) -> dict[str, Any]:
        return store.replay(
            args.query,
            procedure_id=procedure_id,
            task_type=args.task_type,
            params=parse_assignments(args.param, "--param"),
            execute=args.execute,
            cwd=args.cwd,
            min_confidence=args.min_confidence,
            verify=_verify_model(args.verify, args.verify_model),
            confirm=None if args.yes else (lambda pending: _confirm(console, store, pending)),
        )

    payload = replay(args.procedure)
    if payload["status"] == "needs-confirmation" and not args.json and sys.stdin.isatty():
        chosen = _which_one(console, payload)  # the person at the terminal is the judge
        if chosen is None:
            rejected = store.reject(args.query, [c["procedure_id"] for c in payload["candidates"]], args.task_type)
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


def _reject(args: argparse.Namespace, store: SkillStore, console: Any) -> int:
    rejected = store.reject(args.query, None, args.task_type)
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


def _verify_model(flag: bool, named: str | None) -> str | None:
    """--verify-model, else with --verify SHERPA_SKILLS_VERIFY_MODEL or SHERPA_SKILLS_MODEL;
    None leaves it to the env."""
    import os

    from ...errors import UsageError
    from ...llm.call import MODEL_ENV
    from ...skills.face.models import VERIFY_MODEL_ENV as VERIFY_ENV

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

    from ...skills.face.text import why

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
        console.print(f"  {mark}{s['index']}. {visible(s['command'])}{said}")
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
