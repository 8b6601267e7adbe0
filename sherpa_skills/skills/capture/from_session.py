"""A person picks commands of an imported session (`learn capture-success TASK --steps-from-session ID --commands
3-7,9`): the chosen ones become the steps of a capture, with parameters proposed as mining proposes them.

Only commands that worked are kept: a failed one, one the user refused (it never ran) or one stored cut short is
refused by number with why. A command whose log records no outcome (every shell history's) is the person's word, as
any capture is. Parameters: where the same commands (the same shapes, in the same order) were run elsewhere in the
imported logs, what differs between those runs and this one becomes a `{{ parameter }}` (mining's anti-unification),
with the values seen as examples; seen nowhere else, the steps stay literal.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...errors import UsageError
from ...sessions import SessionCommand, SessionStore, is_truncated
from ..mine.recurring import RecurringOptions, _specific, anti_unify, shape
from ..mine.shell_words import program_words

#: Without --commands, a session longer than this is not taken whole: a shell history is years of commands.
WHOLE_SESSION_LIMIT = 30
#: How many of the latest imported commands are searched for other runs of the chosen ones.
HISTORY_SEARCHED = 50_000
_SPEC = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


@dataclass
class Picked:
    """What a capture from a session keeps: steps (templates when parameters were proposed) and where they came from."""

    session: Any
    steps: list[dict[str, Any]]
    numbers: list[int]
    parameters: dict[str, list[str]] = field(default_factory=dict)
    seen_elsewhere: int = 0
    left_out: list[dict[str, Any]] = field(default_factory=list)
    on_your_word: list[int] = field(default_factory=list)
    description: str = ""

    def context(self) -> dict[str, Any]:
        return {
            "captured_from_session": {
                "session": self.session.id,
                "agent": self.session.agent,
                "commands": self.numbers,
                "project_dir": self.session.cwd,
                "parameters": self.parameters,
                "seen_elsewhere": self.seen_elsewhere,
            }
        }


def parse_spec(spec: str, highest: int) -> list[int]:
    """`3-7,9` → [3, 4, 5, 6, 7, 9] (in the order given, each once); a number outside 1..highest, a reversed range or
    anything else is refused, naming the part."""
    numbers: list[int] = []
    if not spec.strip():
        raise UsageError("--commands is empty: give command numbers as `sessions show` numbers them, e.g. 3-7,9")
    for part in spec.split(","):
        found = _SPEC.match(part)
        if found is None:
            raise UsageError(
                f"--commands: '{part.strip()}' is not a number or a range like 3-7 (e.g. --commands 3-7,9)"
            )
        first, last = int(found.group(1)), int(found.group(2) or found.group(1))
        if first > last:
            raise UsageError(f"--commands: the range '{part.strip()}' runs backwards (write {last}-{first})")
        for n in (first, last):
            if not 1 <= n <= highest:
                raise UsageError(
                    f"--commands: there is no command {n}; the session's commands are numbered 1-{highest}"
                )
        numbers += [n for n in range(first, last + 1) if n not in numbers]
    return numbers


def spec_of(numbers: Sequence[int]) -> str:
    """[3, 4, 5, 9] → `3-5,9`: what `--commands` takes."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and runs[-1][1] == n - 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _refusal(c: SessionCommand) -> str | None:
    """Why command `c` cannot be a step, or None when it can."""
    if is_truncated(c.command):
        return "stored cut short (a huge command): it cannot be replayed"
    if c.outcome == "failure":
        tail = (c.output or "").strip().splitlines()[-1:] or [""]
        said = f": {tail[0][:120]}" if tail[0] else ""
        return f"failed (exit {c.exit_code if c.exit_code is not None else '?'}{said})"
    if c.outcome == "rejected":
        return "refused by the user: it never ran"
    return None


def pick(store: SessionStore, session_ref: str, spec: str | None) -> Picked:
    """The commands chosen from the session `session_ref` names, ready to capture; UsageError says what is wrong."""
    session = store.find_session(session_ref)
    commands = store.session_commands(session.id, session.agent)
    by_number = {c.seq: c for c in commands}
    left_out: list[dict[str, Any]] = []
    if spec is not None:
        chosen = [by_number[n] for n in parse_spec(spec, max(by_number, default=0)) if n in by_number]
        refused = [f"command {c.seq} ({c.command[:80]}) {why}" for c in chosen if (why := _refusal(c))]
        if refused:
            raise UsageError("only commands that worked are kept: " + "; ".join(refused))
    else:
        chosen = []
        for c in commands:
            why = _refusal(c)
            if why:
                left_out.append({"number": c.seq, "command": c.command[:200], "reason": why})
            else:
                chosen.append(c)
        if not chosen:
            raise UsageError(
                f"session {session.id} has no command that worked ({session.failed} failed, {session.rejected} "
                "refused): nothing to capture"
            )
        if len(chosen) > WHOLE_SESSION_LIMIT:
            raise UsageError(
                f"session {session.id} has {len(chosen)} commands that worked: choose the ones to keep with --commands "
                f"(e.g. --commands 3-7,9; `sherpa-skills sessions show {session.id}` numbers them)"
            )
    picked = Picked(
        session=session,
        steps=[],
        numbers=[c.seq for c in chosen],
        left_out=left_out,
        on_your_word=[c.seq for c in chosen if c.outcome == "unknown"],
    )
    templates = _propose(store, chosen, picked)
    for c, command in zip(chosen, templates, strict=True):
        step: dict[str, Any] = {"command": command}
        if c.duration and c.duration * 3 > 60:  # it took long once: room to take as long again
            step["timeout_secs"] = float(math.ceil(c.duration * 3))
        picked.steps.append(step)
    shown = ", then ".join(" ".join(program_words(c.command)) or c.command.split()[0] for c in chosen[:4])
    picked.description = f"{shown} (picked from {session.agent} session {session.id})"
    return picked


def _literal(command: str) -> str:
    """A command kept as run: its own braces (`docker --format '{{.Name}}'`) never read as parameters."""
    return "{% raw %}" + command + "{% endraw %}" if any(m in command for m in ("{{", "{%", "{#")) else command


def _propose(store: SessionStore, chosen: list[SessionCommand], picked: Picked) -> list[str]:
    """Templates for the chosen commands: anti-unified with the other runs of the same shapes, else literal."""
    literal = [_literal(c.command) for c in chosen]
    shapes = [shape(c.command) for c in chosen]
    if any(s is None for s in shapes):
        return literal
    mine = {c.id for c in chosen}
    history = store.commands_since(max(0, store.max_command_id() - HISTORY_SEARCHED))
    contexts: dict[tuple[str, str, str | None], list[SessionCommand]] = {}
    for c in history:
        if c.outcome in ("success", "unknown") and not is_truncated(c.command):
            contexts.setdefault((c.source, c.session_id, c.agent), []).append(c)
    others: list[list[SessionCommand]] = []
    units: list[str] = []
    k = len(chosen)
    for (source, session_id, _), run in contexts.items():
        run.sort(key=lambda c: c.seq)
        run_shapes = [shape(c.command) for c in run]
        i = 0
        while i + k <= len(run):
            window = run[i : i + k]
            if run_shapes[i : i + k] == shapes and not mine.intersection(c.id for c in window):
                others.append(window)
                units.append(f"{source}:{session_id}")
                i += k
            else:
                i += 1
    if not others:
        return literal
    routine = anti_unify([chosen, *others], [f"{chosen[0].source}:{chosen[0].session_id}", *units])
    options = RecurringOptions()
    if (
        routine is None
        or len(routine.parameters) > min(options.max_parameters, len(routine.steps))
        or not _specific(routine, options)
    ):
        return literal
    picked.parameters = routine.parameters
    picked.seen_elsewhere = len(others)
    return routine.steps
