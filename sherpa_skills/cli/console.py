"""What every command shares: exit codes, output (rich on a terminal, JSON for scripts) and the home's stores."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Collection, Sequence

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
MAX_COUNT = 10**9  # counts and limits beyond this are typos, and SQLite integers stop at 2**63


def parse_assignments(pairs: Sequence[str] | None, what: str = "--input", keep_text: Collection[str] = ()) -> dict[str, Any]:
    """`k=v` pairs; a value that parses as JSON (numbers, true, {...}) is taken as JSON, else as text.

    Names in `keep_text` stay text: inputs declared with a type, which engine.inputs converts (so `zip=02134` stays a string).
    """
    from ..errors import UsageError

    values: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"{what} '{pair}' is not NAME=VALUE")
        if key in keep_text:
            values[key] = raw
            continue
        try:
            values[key] = json.loads(raw)
        except ValueError:
            values[key] = raw
    return values


def parse_inputs(spec: Any, pairs: Sequence[str] | None, *, starting: bool) -> dict[str, Any]:
    """`--input` pairs for a workflow (or team) spec: converted to the declared types, unknown names refused (exit 2)."""
    from ..engine.inputs import check_inputs

    typed = {name for name, d in spec.inputs.items() if d.type is not None}
    return check_inputs(spec, parse_assignments(pairs, keep_text=typed), starting=starting)


def positive_int(text: str) -> int:
    """An argparse type for counts that must be at least 1 (`--max-steps 0` would stop every run before it starts)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    if value > MAX_COUNT:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_COUNT}, got {text[:30]}")
    return value


def console(stderr: bool = False) -> Any:
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True)


def when(at: float | None) -> str:
    """A stored time stamp as people read it, to the minute, in local time."""
    from datetime import datetime

    return "never" if at is None else f"{datetime.fromtimestamp(at):%Y-%m-%d %H:%M}"


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str, sort_keys=False) + "\n")


def open_store(args: argparse.Namespace) -> Any:
    from ..engine.runstore import RunStore
    from ..home import resolve_home

    home = resolve_home(args.home)
    return RunStore(home=home), home
