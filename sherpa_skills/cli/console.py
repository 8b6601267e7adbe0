"""What every command shares: exit codes, output (rich on a terminal, JSON for scripts) and the home's stores."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


def parse_assignments(pairs: Sequence[str] | None, what: str = "--input") -> dict[str, Any]:
    """`k=v` pairs; a value that parses as JSON (numbers, true, {...}) is taken as JSON, else as text."""
    from ..errors import UsageError

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


def console(stderr: bool = False) -> Any:
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str, sort_keys=False) + "\n")


def open_store(args: argparse.Namespace) -> Any:
    from ..engine.runstore import RunStore
    from ..home import resolve_home

    home = resolve_home(args.home)
    return RunStore(home=home), home
