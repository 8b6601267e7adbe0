"""Word-for-word evidence: a task repeating a description or naming a task type; descriptions said alike."""

from __future__ import annotations

import re

from ..store.models import CapturedProcedure
from . import literals as lit
from .models import MatchCandidate
from .similarity import STOP_WORDS


def _plain(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _described_alike(a: MatchCandidate, b: MatchCandidate) -> bool:
    """Two candidates whose descriptions are the same words (case and punctuation aside)."""
    return bool(a.description.strip()) and _plain(a.description) == _plain(b.description)


def exact_reason(
    query: str, proc: CapturedProcedure, plain: str | None = None, stated: list[lit.Literal] | None = None
) -> str | None:
    """The task repeats the procedure's description or names its task type, word for word: the strongest evidence.
    `plain` and `stated` (the task's plain words and literals) may be given, when one task is checked many times."""
    plain = _plain(query) if plain is None else plain
    if not plain:
        return None
    if plain == _plain(proc.task_type):
        return "names the task type"
    described = _plain(proc.description)
    if described and plain == described:
        return "repeats the description"
    if described and len(described.split()) >= 4 and f" {described} " in f" {plain} ":
        # Only specifics may be added (a path, a file, a number: their agreement is still checked); added words
        # ask for more work ("… and run ps2pdf for each"), which is for meaning to judge, not this rule.
        extra = f" {plain} ".replace(f" {described} ", " ", 1).split()
        stated_words = set(" ".join(_plain(str(x)) for x in (lit.extract(query) if stated is None else stated)).split())
        specific = [w in STOP_WORDS or w.isdigit() or w in stated_words for w in extra]
        # A word that introduces a specific ("labelled monday", "named x.txt") is part of it.
        introduces = [
            any(specific[j] and extra[j] in stated_words for j in range(i + 1, min(i + 3, len(extra))))
            for i in range(len(extra))
        ]
        if all(a or b for a, b in zip(specific, introduces, strict=True)):
            return "contains the description"
    return None
