"""What every `learn` command shares: the stores of the home, quiet logs, id columns, how an alias is said."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...stores import Home


def open_home(args: argparse.Namespace) -> Home:
    """The home's stores, each opened when first asked for: a command that never touches runs opens no run store."""
    from ..console import open_home as home_of_command

    return home_of_command(args)


def quiet_logs(args: argparse.Namespace, home: Path) -> None:
    from ...logs import configure

    (home / "logs").mkdir(exist_ok=True)
    configure(level="error", json_file=home / "logs" / "learn.jsonl")


def id_column(ids: Any, header: str = "id") -> Any:
    """A column that never cuts an id, however narrow the terminal: other columns give way."""
    from rich.table import Column

    return Column(header, no_wrap=True, overflow="fold", min_width=max([len(header), *(len(i) for i in ids)]))


def alias_origin(alias: dict[str, Any]) -> str:
    """Where an alias came from: the run that took the procedure's path in its words, or who confirmed it (in which
    run, when a run's judge did)."""
    source, by = alias.get("source"), alias["by"]
    if source and source == by:
        return f"from {source}, which took this path"
    return f"from {source}, confirmed by {by}" if source else f"confirmed by {by}"


def scope_note(answer: dict[str, Any]) -> str:
    return f", only for task type {answer['scope']}" if answer.get("scope") else ""
