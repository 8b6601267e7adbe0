"""Recurring command sequences, with what varies between occurrences turned into parameters.

A procedure worth keeping is something done again and again (Agent Workflow Memory: induce commonly reused
routines). From each working context (a session thread; a shell history's days), the commands that did work are
kept (`shell_words.classify`), trial-and-error retries collapsed to the last try, and each command reduced to a
*shape*: program, sub-command, flags and operators, with every other word a slot. Sequences of shapes that recur in
at least `min_support` separate units (a session, or a day of a history) are candidates; the greedy cover below
takes the sequence that explains the most, then recounts the rest on what it left, so overlapping variants of one
routine become one candidate. The occurrences are then anti-unified: a slot whose words agree everywhere stays
literal, a slot whose words differ becomes a `{{ parameter }}` with the observed values as examples.
"""

from __future__ import annotations

import heapq
import math
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Any

from ...sessions import is_truncated
from ..store.params import PARAMETER
from .shell_words import _SUBCOMMAND_TOOLS, classify, program_words, words

SLOT = "◻"
_FLAG = re.compile(r"^--?[A-Za-z0-9][A-Za-z0-9_-]*$")
_KEEP = frozenset({"work", "cd", "env"})


@dataclass
class RecurringOptions:
    min_support: int = 2
    #: In a long history, also at least this share of its units (days, sessions): twice in two years is chance.
    min_support_share: float = 0.005
    min_steps: int = 2
    max_steps: int = 8
    gap_secs: float = 900.0
    #: More parameters than this (or than steps) and the "routine" is only a program used several times.
    max_parameters: int = 4
    #: Of a candidate's argument words, at least this share must be the same in every occurrence.
    min_fixed_share: float = 0.5
    #: Each step must follow the previous one this many times more often than chance (by their frequencies) would:
    #: two frequent commands that happen to meet (`rm x`, then `git add y`) are not a routine.
    min_lift: float = 2.5
    #: Consecutive commands this similar (0..1) are one attempt retried: only the last is kept.
    retry_similarity: float = 0.8


@dataclass
class Occurrence:
    unit: str
    commands: list[Any]


@dataclass
class Routine:
    """A recurring routine: its steps as templates, its parameters with example values, and where it was seen."""

    steps: list[str]
    parameters: dict[str, list[str]]
    support: int
    units: list[str]
    sessions: list[str]
    occurrences: list[list[int]]
    task_type: str
    description: str
    cwd: str | None = None
    long_running: list[int] = field(default_factory=list)
    #: Occurrences in which every command is recorded as succeeded (shell histories record no outcome).
    successes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "parameters": self.parameters,
            "support": self.support,
            "units": self.units,
            "sessions": self.sessions,
            "task_type": self.task_type,
            "description": self.description,
            "cwd": self.cwd,
        }


# ---------------------------------------------------------------- cleaning


def clean(commands: Sequence[Any], options: RecurringOptions) -> list[list[Any]]:
    """Per working context, runs of kept commands (work, cd, export), retries collapsed, split at long pauses."""
    contexts: dict[tuple[str, str, str | None], list[Any]] = {}
    for c in commands:
        contexts.setdefault((c.source, c.session_id, getattr(c, "agent", None)), []).append(c)
    runs: list[list[Any]] = []
    for context in contexts.values():
        context.sort(key=lambda c: (c.timestamp is None, c.timestamp or 0.0, getattr(c, "seq", 0)))
        current: list[Any] = []
        for c in context:
            if (
                current
                and c.timestamp
                and current[-1].timestamp
                and c.timestamp - current[-1].timestamp > options.gap_secs
            ):
                runs.append(current)
                current = []
            if is_truncated(
                c.command
            ):  # stored cut short (a huge heredoc): it cannot be replayed, and it breaks the run
                if current:
                    runs.append(current)
                current = []
                continue
            if c.outcome in ("failure", "rejected") or classify(c.command) not in _KEEP:
                continue
            if current and _retry(current[-1].command, c.command, options.retry_similarity):
                current[-1] = c  # the earlier try failed or was mistyped: keep what was run last
                continue
            current.append(c)
        if current:
            runs.append(current)
    return runs


def _similar(a: str, b: str, threshold: float) -> bool:
    """difflib's ratio, behind its cheap upper bounds (most pairs of commands are far apart)."""
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    return (
        matcher.real_quick_ratio() >= threshold and matcher.quick_ratio() >= threshold and matcher.ratio() >= threshold
    )


def _retry(before: str, after: str, threshold: float) -> bool:
    if before == after:
        return True
    split_before, split_after = before.split(), after.split()
    if not split_before or not split_after:
        return False
    if len(split_before) == 1 and split_after[0] != before and split_after[0].startswith(before):
        return True  # `gi`, then `git st`: Enter pressed too early
    same_program = program_words(before) == program_words(after)
    if abs(len(before) - len(after)) <= 2 and len(after) >= 5 and not same_program and _similar(before, after, 0.8):
        return True  # `gi tst`, then `git st`: a typo, then the command meant
    if split_before[0] != split_after[0]:
        # `unlias ls` then `unalias ls`: the program name was mistyped
        return split_before[1:] == split_after[1:] and _similar(split_before[0], split_after[0], 0.75)
    if not same_program or classify(after) == "cd":
        return False
    if (
        len(split_after) > len(split_before)
        and set(split_before) < set(split_after)
        and _flags(before) != _flags(after)
    ):
        return True  # the same command run again with more options: the first try did not do it
    if len(split_after) != len(split_before) or _flags(before) == _flags(after):
        return False
    return _similar(before, after, threshold)


def _flags(command: str) -> tuple[str, ...]:
    return tuple(w for w in command.split() if w.startswith("-"))


# ---------------------------------------------------------------- shapes


def tokens(command: str) -> list[str] | None:
    found = words(command)
    return None if found is None else list(found)


@lru_cache(maxsize=65536)
def shape(command: str) -> tuple[str, ...] | None:
    """Program, sub-command, flags and operators kept; every other word a slot."""
    words = tokens(command)
    if not words or "<<" in command:
        return None
    out: list[str] = []
    expect_program = True
    for i, word in enumerate(words):
        if word in (";", "&&", "||", "|", "&") or re.fullmatch(r"\d*[<>]+&?\d*", word):
            out.append(word)
            expect_program = word in (";", "&&", "||", "|", "&")
        elif expect_program:
            out.append(word)
            expect_program = False
            if word in _SUBCOMMAND_TOOLS and i + 1 < len(words) and re.fullmatch(r"[a-z][a-z0-9-]{1,20}", words[i + 1]):
                out.append("\x00sub")  # marks that the next word is part of the shape
        elif out and out[-1] == "\x00sub":
            out[-1] = word
        elif _FLAG.match(word):
            out.append(word)
        else:
            out.append(SLOT)
    return tuple(out)


# ---------------------------------------------------------------- recurring sequences


def _unit(run: list[Any]) -> str:
    first = run[0]
    if first.source in ("bash-history", "zsh-history", "asciinema") and first.timestamp:
        day = datetime.fromtimestamp(first.timestamp, tz=timezone.utc).strftime("%Y-%m-%d")
        return f"{first.session_id}@{day}"
    return f"{first.source}:{first.session_id}:{getattr(first, 'agent', None) or ''}"


def find(commands: Sequence[Any], options: RecurringOptions | None = None) -> list[Routine]:
    """The recurring routines in these commands, most explanatory first."""
    options = options or RecurringOptions()
    runs = clean(commands, options)
    shaped: list[tuple[str, list[Any], list[tuple[str, ...] | None]]] = [
        (_unit(r), r, [shape(c.command) for c in r]) for r in runs
    ]
    # Every contiguous sequence of shapes (2..max_steps) with at least two work steps, and where it occurs.
    where: dict[tuple[tuple[str, ...], ...], list[tuple[int, int]]] = {}
    for ri, (_, run, shapes) in enumerate(shaped):
        for start in range(len(run)):
            if shapes[start] is None:
                continue
            work = 0
            for end in range(start + 1, min(len(run), start + options.max_steps) + 1):
                if shapes[end - 1] is None:
                    break
                if classify(run[end - 1].command) == "work":
                    work += 1
                if (
                    end - start >= options.min_steps
                    and work >= options.min_steps
                    and classify(run[end - 1].command) == "work"
                ):
                    where.setdefault(tuple(shapes[start:end]), []).append((ri, start))  # type: ignore[arg-type]
    lift = _lift(shaped)
    used: set[tuple[int, int]] = set()
    needed = max(options.min_support, math.ceil(options.min_support_share * len({unit for unit, _, _ in shaped})))

    def support(key: tuple[tuple[str, ...], ...]) -> tuple[int, list[tuple[int, int]]]:
        seen_units: set[str] = set()
        kept: list[tuple[int, int]] = []
        for ri, start in where[key]:
            if any((ri, start + k) in used for k in range(len(key))):
                continue
            unit = shaped[ri][0]
            if unit not in seen_units:
                seen_units.add(unit)
                kept.append((ri, start))
        return len(seen_units), kept

    def score(key: tuple[tuple[str, ...], ...], units: int) -> float:
        return units * (len(key) - 0.5)

    heap: list[tuple[float, int, tuple[tuple[str, ...], ...]]] = []
    for key, spots in where.items():
        units = len({shaped[ri][0] for ri, _ in spots})
        if units >= needed and lift(key) >= options.min_lift:
            heap.append((-score(key, units), len(heap), key))
    heapq.heapify(heap)
    found: list[Routine] = []
    chosen_keys: list[tuple[tuple[str, ...], ...]] = []
    while heap:
        negative, _, key = heapq.heappop(heap)
        units, spots = support(key)
        if units < needed:
            continue
        current = score(key, units)
        if heap and current < -heap[0][0]:
            heapq.heappush(heap, (-current, id(key), key))  # its occurrences were partly taken: re-rank
            continue
        occurrences = [shaped[ri][1][start : start + len(key)] for ri, start in spots]
        # Part of a routine already found (`git st; git commit -a` inside `git st; git commit -a; git ps`): the same
        # routine stopped early, not a second one to review.
        inside = any(_contains(chosen, key) for chosen in chosen_keys)
        candidate = None if inside or _repetitive(key) else anti_unify(occurrences, [shaped[ri][0] for ri, _ in spots])
        if candidate is not None and (
            len(candidate.parameters) > min(options.max_parameters, len(candidate.steps))
            or not _specific(candidate, options)
        ):
            candidate = None
        if candidate is None:
            for ri, start in spots:
                used.add((ri, start))  # this shape cannot be templated; do not let it block others forever
            continue
        found.append(candidate)
        chosen_keys.append(key)
        for ri, start in spots:
            used.update((ri, start + k) for k in range(len(key)))
    return found


#: Below this many uses, a command is too rare for its meetings with another to be chance.
_FREQUENT = 5


def _lift(shaped: list[tuple[str, list[Any], list[tuple[str, ...] | None]]]) -> Any:
    """How much more often than chance each step follows the one before it (the weakest link counts)."""
    single: dict[tuple[str, ...], int] = {}
    pairs: dict[tuple[tuple[str, ...], tuple[str, ...]], int] = {}
    total = 0
    for _, _, shapes in shaped:
        for i, current in enumerate(shapes):
            if current is None:
                continue
            total += 1
            single[current] = single.get(current, 0) + 1
            previous = shapes[i - 1] if i else None
            if previous is not None:
                pair = (previous, current)
                pairs[pair] = pairs.get(pair, 0) + 1

    def link(a: tuple[str, ...], b: tuple[str, ...]) -> float:
        if min(single[a], single[b]) < _FREQUENT:
            return math.inf  # rare commands meeting again is no accident; chance only explains frequent ones
        return pairs.get((a, b), 0) * total / (single[a] * single[b])

    def weakest(key: tuple[tuple[str, ...], ...]) -> float:
        return min(link(a, b) for a, b in zip(key, key[1:], strict=False))

    return weakest


def _specific(candidate: Routine, options: RecurringOptions) -> bool:
    """Enough of it is fixed to be a routine: not every argument a parameter (`rm {{ a }}; git add {{ b }}`)."""
    fixed = variable = 0
    for step in candidate.steps:
        holes = len(PARAMETER.findall(step))
        variable += holes
        fixed += len(PARAMETER.sub(" ", step).split()[1:])
    return variable == 0 or fixed / (fixed + variable) >= options.min_fixed_share


def _contains(longer: tuple[Any, ...], shorter: tuple[Any, ...]) -> bool:
    n = len(shorter)
    return n < len(longer) and any(longer[i : i + n] == shorter for i in range(len(longer) - n + 1))


def _repetitive(key: tuple[tuple[str, ...], ...]) -> bool:
    """The same command shapes over and over (`cp; cp`, `make; make clean; make`): a batch or a loop, not a routine."""
    n = len(key)
    return any(
        all(key[i] == key[i + period] for i in range(n - period)) for period in range(1, (n + 1) // 2 + 1) if period < n
    )


# ---------------------------------------------------------------- anti-unification


_NAMES = [
    (re.compile(r"^(git )?(-m|--message)$"), "message"),
    (re.compile(r"^(git )?(checkout|switch|-b|-B|--branch|ps|push|pull|origin|upstream)$"), "branch"),
    (
        re.compile(
            r"^(brew|npm|pnpm|yarn|pip|pip3|uv|poetry|cargo|apt|apt-get|gem|go|conda) "
            r"(install|add|remove|uninstall|i|get)$"
        ),
        "package",
    ),
    (re.compile(r"^(git )?(clone)$"), "repository"),
    (re.compile(r"^(cd|pushd)$"), "directory"),
    (re.compile(r"^(-t|--tag|tag)$"), "tag"),
    (re.compile(r"^(-o|--output)$"), "output"),
]


def _name_for(program: str, previous: str, values: list[str], taken: set[str]) -> str:
    name = next((n for pattern, n in _NAMES if pattern.match(f"{program} {previous}") or pattern.match(previous)), None)
    if name is None:
        sample = values[0]
        if re.fullmatch(r"v?\d+(\.\d+)+([-.\w]*)", sample):
            name = "version"
        elif re.fullmatch(r"https?://\S+|git@\S+", sample):
            name = "url"
        elif "/" in sample or re.search(r"\.[A-Za-z0-9]{1,5}$", sample):
            name = "path"
        elif re.fullmatch(r"\d+", sample):
            name = "number"
        else:
            name = "value"
    base, n = name, 2
    while name in taken:
        name, n = f"{base}{n}", n + 1
    return name


def anti_unify(occurrences: list[list[Any]], units: list[str]) -> Routine | None:
    """One template per step: agreeing words literal, differing words parameters shared across steps by value."""
    steps_tokens = [[tokens(o[i].command) for o in occurrences] for i in range(len(occurrences[0]))]
    parameters: dict[str, list[str]] = {}
    by_values: dict[tuple[str, ...], str] = {}
    templates: list[str] = []
    for i, per_occurrence in enumerate(steps_tokens):
        if any(t is None for t in per_occurrence) or len({len(t) for t in per_occurrence}) != 1:  # type: ignore[arg-type]
            return None
        text = occurrences[0][i].command
        if "{{" in text or "{%" in text:
            return None
        replacements: list[tuple[str, str]] = []
        for position in range(len(per_occurrence[0])):  # type: ignore[arg-type]
            values = tuple(t[position] for t in per_occurrence)  # type: ignore[index]
            if len(set(values)) == 1:
                continue
            name = by_values.get(values)
            if name is None:
                previous = per_occurrence[0][position - 1] if position else ""  # type: ignore[index]
                name = _name_for(per_occurrence[0][0], previous, list(values), set(parameters))  # type: ignore[index]
                by_values[values] = name
                parameters[name] = list(dict.fromkeys(values))
            replacements.append((values[0], name))
        template = _substitute(text, replacements)
        if template is None:
            return None
        templates.append(template)
    first = occurrences[0]
    sessions = sorted({c.session_id for o in occurrences for c in o})
    cwd = next((c.cwd for c in first if getattr(c, "cwd", None)), None)
    long_running = [i for i, c in enumerate(first) if classify(c.command) == "long_running"]
    task_type = suggest_task_type([c.command for c in first if classify(c.command) == "work"])
    shown = ", then ".join(" ".join(program_words(c.command)) for c in first if classify(c.command) == "work")
    return Routine(
        steps=templates,
        parameters=parameters,
        support=len(occurrences),
        units=units,
        sessions=sessions,
        occurrences=[[c.id for c in o] for o in occurrences],
        task_type=task_type,
        description=f"{shown} (seen {len(occurrences)} times)",
        cwd=cwd,
        long_running=long_running,
        successes=sum(all(c.outcome == "success" for c in o) for o in occurrences),
    )


def _substitute(text: str, replacements: list[tuple[str, str]]) -> str | None:
    """Replace each differing word, as written (bare or quoted), left to right, with `{{ name }}`."""
    out, position = [], 0
    for value, name in replacements:
        for written in (shlex.quote(value), f'"{value}"', f"'{value}'", value):
            at = text.find(written, position)
            if (
                at >= 0
                and (at == 0 or text[at - 1] in " =:\t")
                and (at + len(written) == len(text) or text[at + len(written)] in " ;|&)\t")
            ):
                break
        else:
            return None
        out.append(text[position:at])
        out.append("{{ " + name + " }}")
        position = at + len(written)
    out.append(text[position:])
    return "".join(out)


def suggest_task_type(commands: Iterable[str]) -> str:
    """From the programs and their sub-commands: `git add`, `git commit`, `git push` → git-add-commit-push."""
    parts: list[str] = []
    for command in commands:
        for token in program_words(command):
            token = re.sub(r"[^a-z0-9]+", "-", token.lower()).strip("-")
            if token and token not in parts:
                parts.append(token)
        if len(parts) >= 4:
            break
    return "-".join(parts[:4]) or "session-task"
