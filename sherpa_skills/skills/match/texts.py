"""What a procedure is found by: the words a task may name it with, and the text its vector is made from."""

from __future__ import annotations

from ..store.models import CapturedProcedure
from .procedure_index import index_text
from .similarity import STOP_WORDS, words


def _program(command: str) -> str:
    first = command.strip().split(None, 1)[0] if command.strip() else ""
    return first.rsplit("/", 1)[-1].lower()


def procedure_words(task_type: str, description: str, tags: list[str], commands: list[str]) -> set[str]:
    """What a task may name to find this procedure: task type, description, tags and the programs it runs."""
    found = set(words(task_type.replace("-", " ").replace("_", " ")))
    found |= set(words(description))
    for tag in tags:
        found |= set(words(tag))
    found |= {p for p in (_program(c) for c in commands) if p and p not in STOP_WORDS}
    return found


def describe(p: CapturedProcedure) -> str:
    """The text whose meaning the procedure index holds."""
    return index_text(p.task_type, p.description, p.tags, [s.command for s in p.steps[:8]])
