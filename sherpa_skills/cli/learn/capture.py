"""`learn capture-success`: a run, a steps file or commands picked from a session, kept as a procedure."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..console import EXIT_ERROR, EXIT_OK
from ..console import console as _console
from ..console import print_json as _print_json
from ..steps_file import load_steps_file
from .common import open_home, quiet_logs

if TYPE_CHECKING:
    from ...skills.face.models import Picked


def cmd_capture(args: argparse.Namespace) -> int:
    from ...errors import UsageError

    given = [bool(args.from_run), bool(args.steps_file), args.steps_from_session is not None]
    if sum(given) != 1:
        raise UsageError("give exactly one of --from-run RUN_ID, --steps-file FILE or --steps-from-session SESSION_ID")
    if args.commands is not None and args.steps_from_session is None:
        raise UsageError("--commands picks commands of a session: give --steps-from-session SESSION_ID with it")
    house = open_home(args)
    store, home = house.skills, house.home
    quiet_logs(args, home)
    fields: dict[str, Any] = {}
    picked = None
    if args.from_run:
        fields["run_id"] = house.runs.get_run(args.from_run).run_id
    elif args.steps_file:
        fields.update(load_steps_file(args.steps_file))
    else:
        picked = store.pick_from_session(house.sessions, args.steps_from_session, args.commands)
        # The person chose these by number: a person's capture (counted), kept as given like a steps file.
        fields.update(steps=picked.steps, source="session", context=picked.context(), description=picked.description)
    if args.description:
        fields["description"] = args.description
    if args.tag:
        fields["tags"] = args.tag
    result = store.capture_success(args.task_type, **fields, procedure_id=args.procedure)
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


def _show_picked(console: Any, picked: Picked) -> None:
    """Which commands of the session were kept, the parameters proposed and what was left out, each with why."""
    from rich.markup import escape

    from ...skills.face.text import spec_of

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
