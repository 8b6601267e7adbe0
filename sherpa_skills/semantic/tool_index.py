"""The tool index: from a task description, the few relevant tools out of many, so prompts carry only those.

One Aho-Corasick automaton holds every tool's keywords, name parts and description words; a query is one
pass over the task text, so its cost depends on the task's length, not on how many tools there are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from ..errors import Problem, WorkflowError

_WORD = re.compile(r"[a-z0-9][a-z0-9+#.]*")
_STOP = frozenset(
    """a an and are as at be by for from has have in into is it its of on or that the this to was were will with you
    your can do does use uses using used via per all any some more most other such only own same so than too very just
    when which while who what where how get gets set sets make makes""".split()
)
WEIGHTS = {"name": 3.0, "keyword": 2.0, "word": 1.0}


class ToolSpec(BaseModel):
    """A capability a policy could use: a registered action, or an entry in a tools file."""

    name: str = Field(min_length=1)
    description: str = ""
    keywords: list[str] = Field(default_factory=list)


def _words(text: str) -> list[str]:
    return [w.rstrip(".") for w in _WORD.findall(text.lower()) if w.rstrip(".")]


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """A light suffix strip so 'deploying', 'deployed' and 'deploys' meet 'deploy'."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def tool_terms(tool: ToolSpec) -> dict[str, float]:
    terms: dict[str, float] = {}

    def put(term: str, weight: float) -> None:
        if term and term not in _STOP and len(term) > 1:
            terms[term] = max(terms.get(term, 0.0), weight)

    name_words = _words(tool.name.replace("_", " ").replace("-", " "))
    put(" ".join(name_words), WEIGHTS["name"])
    for w in name_words:
        put(_stem(w), WEIGHTS["name"])
    for keyword in tool.keywords:
        kw = _words(keyword)
        put(" ".join(kw) if len(kw) > 1 else (_stem(kw[0]) if kw else ""), WEIGHTS["keyword"])
    for w in _words(tool.description):
        if len(w) > 2:
            put(_stem(w), WEIGHTS["word"])
    return terms


@dataclass
class RelevantTool:
    tool: ToolSpec
    score: float
    matched: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.tool.name,
            "description": self.tool.description,
            "score": round(self.score, 4),
            "matched": self.matched,
        }


class ToolIndex:
    """Built once from many tools; `relevant(task)` ranks the ones the task names or describes."""

    def __init__(self, tools: Iterable[ToolSpec]):
        import ahocorasick
        import numpy as np

        self.tools = list(tools)
        postings: dict[str, list[tuple[int, float]]] = {}
        self._terms: list[frozenset[str]] = []
        for i, tool in enumerate(self.tools):
            terms = tool_terms(tool)
            self._terms.append(frozenset(terms))
            for term, weight in terms.items():
                postings.setdefault(term, []).append((i, weight))
        n = len(self.tools)
        automaton = ahocorasick.Automaton()
        for term, plist in postings.items():
            # Rare terms tell more than terms every tool shares; weighed once here, not per query.
            rarity = 1.0 + (n / len(plist)) ** 0.5 / 10 if n > 1 else 1.0
            ids = np.fromiter((i for i, _ in plist), dtype=np.int32, count=len(plist))
            weights = np.fromiter((w * rarity for _, w in plist), dtype=np.float32, count=len(plist))
            automaton.add_word(f" {term} ", (term, ids, weights))
        self._automaton = automaton if postings else None
        if postings:
            automaton.make_automaton()
        self._scores = np.zeros(n, dtype=np.float32)
        self._names = [t.name for t in self.tools]

    def relevant(self, task: str, limit: int = 5) -> list[RelevantTool]:
        """Scores accumulate per matched term in numpy, so a term shared by thousands of tools costs one vector add."""
        import numpy as np

        if self._automaton is None:
            return []
        words = _words(task)
        # Word forms and joined neighbours too: "deploying" meets "deploy", "back up" meets "backup".
        extra = [_stem(w) for w in words if _stem(w) != w] + [a + b for a, b in zip(words, words[1:], strict=False)]
        text = " " + " ".join(words + extra) + " "
        hits: dict[str, tuple[Any, Any]] = {}
        for _, (term, ids, weights) in self._automaton.iter(text):
            hits[term] = (ids, weights)
        if not hits:
            return []
        scores = self._scores
        for ids, weights in hits.values():
            scores[ids] += weights  # ids are unique within a term
        k = min(len(scores), limit * 2)
        top = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        ranked = sorted(
            ((float(scores[i]), int(i)) for i in top if scores[i] > 0), key=lambda si: (-si[0], self._names[si[1]])
        )[:limit]
        scores.fill(0.0)
        return [RelevantTool(self.tools[i], score, [t for t in hits if t in self._terms[i]]) for score, i in ranked]


def load_tools(path: str | Path) -> list[ToolSpec]:
    """Tools from YAML or JSON: a list of {name, description, keywords}, or {tools: [...]}."""
    from ..yaml_source import load_yaml_file

    located = load_yaml_file(path)
    data = located.data
    loc: tuple[str, ...] = ()
    if isinstance(data, dict) and "tools" in data:
        data, loc = data["tools"], ("tools",)
    try:
        return TypeAdapter(list[ToolSpec]).validate_python(data)
    except ValidationError as exc:
        raise WorkflowError(
            [located.problem((*loc, *e["loc"]), f"{'.'.join(map(str, e['loc']))}: {e['msg']}") for e in exc.errors()]
        ) from None


def dump(tools: list[RelevantTool]) -> str:
    return json.dumps([t.to_dict() for t in tools], indent=2)


def problem(message: str) -> Problem:
    return Problem("<tools>", 1, message)
