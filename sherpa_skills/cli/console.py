"""What every command shares: exit codes, output (rich on a terminal, JSON for scripts) and the home's stores."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..engine.runstore import RunStore
    from ..stores import Home

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
# `learn replay`: plausible procedures, none sure; the caller answers with --procedure ID or --reject.
EXIT_NEEDS_CONFIRMATION = 3
#: Every command's exit codes, as `--help` ends and docs/troubleshooting.md shows them (a test keeps them one).
EXIT_CODES = (
    (EXIT_OK, "ok (a run final or waiting for input)"),
    (EXIT_ERROR, "error: the work failed (a run in error, a failed replay or heartbeat)"),
    (EXIT_USAGE, "usage: bad option, file or run id, validate problems, mistyped trigger"),
    (EXIT_NEEDS_CONFIRMATION, "needs confirmation: learn replay found procedures, none sure"),
    (130, "interrupted by Ctrl-C (143 by SIGTERM)"),
)
EXIT_CODES_EPILOG = (
    "exit codes:\n"
    + "".join(f"  {code:<4} {meaning}\n" for code, meaning in EXIT_CODES)
    + "`sherpa-skills hook AGENT` always exits 0 (coding agents run it)."
)
MAX_COUNT = 10**9  # counts and limits beyond this are typos, and SQLite integers stop at 2**63


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


def visible(text: str) -> str:
    """`text` as a person must read it before running it: control and format characters written out
    (`as_it_runs`) and rich markup escaped, so what is shown is what would run."""
    from rich.markup import escape

    from ..skills.face.text import as_it_runs

    return escape(as_it_runs(text))


def when(at: float | None) -> str:
    """A stored time stamp as people read it, to the minute, in local time."""
    from datetime import datetime

    return "never" if at is None else f"{datetime.fromtimestamp(at):%Y-%m-%d %H:%M}"


class Bar:
    """A progress bar on stderr for work that may take more than a few seconds: drawn only on a terminal, never under
    --json or into a pipe (a log or a script reads the result, not the bar); it disappears when the work ends."""

    def __init__(self, label: str, *, as_json: bool, size: bool = False) -> None:
        self.progress: Any = None
        self.task: Any = None
        if as_json or not sys.stderr.isatty():
            return
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(
            TextColumn(label),
            BarColumn(bar_width=20),
            DownloadColumn() if size else MofNCompleteColumn(),  # bytes of a log, or rows and items
            TimeRemainingColumn(),
            TextColumn("{task.description}"),
            console=console(stderr=True),
            transient=True,
        )

    @property
    def shown(self) -> bool:
        """Whether the bar is drawn: work that only feeds it can be skipped when not."""
        return self.progress is not None

    def __enter__(self) -> Bar:
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()

    def __call__(self, done: int, total: int | None = None, note: str = "") -> None:
        """`done` of `total` so far (total may change as the work finds more); `note` names what is being done."""
        if self.progress is None:
            return
        if self.task is None:
            self.task = self.progress.add_task("", total=total)
        self.progress.update(self.task, completed=done, total=total, description=note[-30:])


def print_items(console: Any, items: Sequence[str], indent: str = "") -> None:
    """Markup items (`steps 3`, `LLM calls 0`) two spaces apart, a line broken only between items, never inside one,
    so at 80 columns no figure is parted from its name."""
    from rich.text import Text

    parts: list[str] = []
    used = len(indent)
    for item in items:
        size = Text.from_markup(item).cell_len
        if parts and used + 2 + size > console.width:
            console.print(indent + "  ".join(parts), soft_wrap=False)
            parts, used = [], len(indent)
        used += (2 if parts else 0) + size
        parts.append(item)
    if parts:
        console.print(indent + "  ".join(parts), soft_wrap=False)


def command_lines(words: Sequence[str], width: int, indent: str = "  ") -> list[str]:
    """A command to paste, on its own lines: when it is wider than the terminal, broken between words with a
    trailing backslash, so the lines pasted together are still one command. A word wider than a line (a long
    path) is cut into quoted pieces on lines of their own, at the left edge: the shell joins them back."""
    import shlex

    lines, line, room = [], indent, max(8, width - 2)
    for word in words:
        quoted = shlex.quote(word)
        if len(indent) + 2 + len(quoted) + 2 > width and len(quoted) > room:
            lines.append(line + " \\")
            pieces = [word[i : i + room - 2] for i in range(0, len(word), room - 2)]
            lines += [shlex.quote(piece) + "\\" for piece in pieces[:-1]]
            line = shlex.quote(pieces[-1])  # no space before it: a space would part the pieces
            continue
        if line.strip() and len(line) + 1 + len(quoted) + 2 > width:
            lines.append(line + " \\")
            line = indent + "  "
        line += ("" if not line.strip() else " ") + quoted
    return [*lines, line]


def hint_words(args: argparse.Namespace, *words: str) -> list[str]:
    """`sherpa-skills WORDS...` as a person would paste it: with the --home they gave."""
    home = getattr(args, "home", None)
    return ["sherpa-skills", *words, *(["--home", str(home)] if home else [])]


def hint(args: argparse.Namespace, *words: str) -> str:
    """The same, quoted for a shell, to print inside a line (`learn promote ID` in a sentence)."""
    import shlex

    return shlex.join(hint_words(args, *words))


def person() -> str:
    """Who is at this terminal (their login name), for a suggested `--operator`: a hint names someone real."""
    import getpass

    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name in the environment nor the password database
        return "operator"


def print_commands(console: Any, *commands: Sequence[str]) -> None:
    """Commands a person may paste, each on lines of its own that fit the terminal and run as printed."""
    for words in commands:
        for line in command_lines(words, console.width):
            console.print(line, soft_wrap=True, markup=False, highlight=False)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str, sort_keys=False) + "\n")


def open_home(args: argparse.Namespace) -> Home:
    """The home's stores (`--home`, `--database`), each opened when the command first asks for it: one Home per
    command, which `main` closes when the command ends."""
    from ..stores import Home

    house: Home | None = getattr(args, "opened_home", None)
    if house is None:
        house = args.opened_home = Home(args.home)
    return house


def open_store(args: argparse.Namespace) -> tuple[RunStore, Path]:
    """The home's run store and folder."""
    house = open_home(args)
    return house.runs, house.home


_PIECE = re.compile(r"\s+|[^\s\-_/.:,;=]*[\-_/.:,;=]+|[^\s\-_/.:,;=]+")  # words, and names cut after their separators


def fold_lines(text: str, width: int) -> list[str]:
    """`text` in lines of at most `width` cells, broken at spaces and after - _ / . : , ; = (where names have joints);
    only a piece longer than the whole width is cut inside (folded), so nothing is ever dropped."""
    from rich.cells import cell_len, chop_cells

    width = max(1, width)
    lines: list[str] = []
    for paragraph in text.splitlines() or [""]:
        line = ""
        for piece in _PIECE.findall(paragraph):
            if piece.isspace():
                line += piece if line else ""
                continue
            if cell_len(line) + cell_len(piece) <= width:
                line += piece
                continue
            if line.strip():
                lines.append(line.rstrip())
            line = ""
            while cell_len(piece) > width:  # one word wider than the column: fold it, never crop it
                head, *_ = chop_cells(piece, width)
                lines.append(head)
                piece = piece[len(head) :]
            line = piece
        lines.append(line.rstrip())
    return lines


class Folded:
    """A table cell whose text wraps between words (and after a name's - _ / .
    joints) instead of being cut or dropped."""

    def __init__(self, text: Any) -> None:
        self.text = str(text)

    def __rich_measure__(self, console: Any, options: Any) -> Any:
        from rich.cells import cell_len
        from rich.measure import Measurement

        pieces = [p for p in _PIECE.findall(self.text) if not p.isspace()] or [""]
        return Measurement(
            max(cell_len(p.rstrip()) for p in pieces), max(cell_len(line) for line in self.text.splitlines() or [""])
        )

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.text import Text

        for line in fold_lines(self.text, options.max_width):
            yield Text(line, justify=options.justify or "left", no_wrap=True, overflow="fold")


def print_table(console: Any, table: Any) -> None:
    """Print a table that never loses a column: when it is too wide for the terminal or pipe, each column keeps at least
    its longest word (so cells fold between words); when even that cannot fit, one block per row instead, the row's
    first cell (its id) whole on a line and `header: value` lines under it."""
    columns = list(table.columns)
    bounds = [_column_bounds(console, table, c) for c in columns]
    _, right, _, left = table.padding
    gap = max(left, right) if table.collapse_padding else left + right  # the padding between two columns
    room = (
        console.width
        - (2 if table.box and table.show_edge else 0)
        - (len(columns) - 1 if table.box else 0)
        - (len(columns) - 1) * gap
        - (left + right if table.pad_edge else 0)
    )
    least, most = sum(b[0] for b in bounds), sum(b[1] for b in bounds)
    if most > room and least <= room:
        # Rich would shrink columns below their longest word (cutting it); share out the room ourselves instead.
        spare, wants = room - least, [hi - lo for lo, hi in bounds]
        widths = [lo + spare * want // max(1, sum(wants)) for (lo, _), want in zip(bounds, wants, strict=True)]
        for i in sorted(range(len(columns)), key=lambda i: -wants[i])[: room - sum(widths)]:
            widths[i] += 1
        for column, width in zip(columns, widths, strict=True):
            column.width = width
    if least <= room:
        console.print(table, soft_wrap=False)
        return
    cells = [list(c.cells) for c in columns]
    if table.title:
        console.print(_plain(table.title), soft_wrap=True, markup=False)
    for row in range(table.row_count):
        console.print(_plain(cells[0][row]), soft_wrap=True, markup=False)
        for column, values in zip(columns[1:], cells[1:], strict=True):
            head = f"  {_plain(column.header)}: "
            body = fold_lines(_plain(values[row]), max(10, console.width - len(head)))
            console.print(head + body[0], soft_wrap=True, markup=False)
            for more in body[1:]:
                console.print(" " * len(head) + more, soft_wrap=True, markup=False)


def compact_table(*columns: Any, title: str | None = None) -> Any:
    """A table for 80 columns: a rule under the headers and two spaces between columns, no frame (a frame costs
    three cells a column); print it with `print_table`."""
    from rich import box
    from rich.table import Table

    return Table(
        *columns,
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1),
        collapse_padding=True,
    )


def _column_bounds(console: Any, table: Any, column: Any) -> tuple[int, int]:
    """(narrowest without cutting a word, widest) of a column's header and cells, within its own min/max width."""
    from rich.measure import Measurement

    options = console.options.update_width(10**6)
    sizes = [Measurement.get(console, options, cell) for cell in [column.header, *column.cells]]
    lo, hi = max(m.minimum for m in sizes), max(m.maximum for m in sizes)
    if column.no_wrap:
        lo = hi
    if column.min_width is not None:
        lo, hi = max(lo, column.min_width), max(hi, column.min_width)
    if column.max_width is not None:
        lo, hi = min(lo, column.max_width), min(hi, column.max_width)
    return lo, max(lo, hi)


def _plain(cell: Any) -> str:
    """A cell's text, whatever renderable holds it (str, rich Text, Folded)."""
    if isinstance(cell, Folded):
        return cell.text
    return getattr(cell, "plain", None) or str(cell)


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def duration(text: str) -> float:
    """An argparse type for ages: `12h`, `30d`, `2w`, `1d12h` (s, m, h, d, w) → seconds, at least one second."""
    spec = text.strip().lower()
    parts = re.findall(r"(\d+)([smhdw])", spec)
    if not parts or "".join(f"{n}{u}" for n, u in parts) != spec:
        raise argparse.ArgumentTypeError(
            f"'{text[:30]}' is not a duration: write it like 12h, 30d or 2w (units s, m, h, d, w)"
        )
    seconds = sum(int(n) * _UNITS[u] for n, u in parts)
    if not 1 <= seconds <= 100 * 365 * 86400:
        raise argparse.ArgumentTypeError(f"'{text[:30]}' must be between 1s and 100 years, like 12h, 30d or 2w")
    return float(seconds)


def confirmed(action: str, yes: bool) -> None:
    """Go on when `yes`, or when a person at a terminal answers y to "ACTION?";
    without a terminal, refuse (exit 2) rather than guess."""
    from ..errors import UsageError

    if yes:
        return
    if not sys.stdin.isatty():
        raise UsageError(
            f"will not {action} without confirmation, and there is no terminal to ask: pass --yes "
            "(or --dry-run to see what it would do)"
        )
    sys.stderr.write(f"{action}? [y/N] ")
    sys.stderr.flush()
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise UsageError("not confirmed: nothing was deleted")
