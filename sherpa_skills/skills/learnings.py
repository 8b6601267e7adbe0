"""Which defensive learnings a task should be shown: found by what the task is about, not only by an exact task type.

A planner for "build the frontend" must see the `npm run build` failures mined under `npm-run`, and must not see
`tar` failures of a backup task. A learning's words are its task type's, its command's and its program's; the task's
words are weighed by how rare they are among the learnings (IDF), and a learning is relevant when the words it
shares with the task carry at least `FLOOR` of the task's weight. Learnings of the exact task type always count.
"""

from __future__ import annotations

import math
import re
from typing import Any

from .matcher import words
from .models import CapturedLearning

#: Share of the task's (IDF-weighted) words a learning must share to be shown.
FLOOR = 0.3
#: How many recent learnings are weighed (a store keeps one row per distinct lesson, with a count).
POOL = 2000


def learning_words(learning: CapturedLearning) -> set[str]:
    command = re.sub(r"[^\w\s./-]", " ", learning.command)
    found = set(words((learning.task_type or "").replace("-", " ").replace("_", " "))) | set(words(command.replace("/", " ")))
    return found


def relevant_learnings(store: Any, task: str, task_type: str | None = None, limit: int = 5) -> list[tuple[CapturedLearning, float]]:
    """The learnings this task is about, most relevant (then most recent) first, with their relevance in [0, 1]."""
    pool = store.learnings(limit=POOL)
    if not pool:
        return []
    task_words = set(words(f"{task} {(task_type or '').replace('-', ' ')}"))
    bags = [learning_words(x) for x in pool]
    df: dict[str, int] = {}
    for bag in bags:
        for w in bag & task_words:
            df[w] = df.get(w, 0) + 1
    idf = {w: math.log(1 + len(pool) / (1 + df.get(w, 0))) for w in task_words}
    total = sum(idf.values()) or 1.0
    scored: list[tuple[CapturedLearning, float]] = []
    for order, (learning, bag) in enumerate(zip(pool, bags)):
        score = 1.0 if task_type and learning.task_type == task_type else sum(idf[w] for w in bag & task_words) / total
        if score >= FLOOR:
            scored.append((learning, round(score, 3)))
    scored.sort(key=lambda pair: -pair[1])  # stable: equally relevant ones stay newest first
    return scored[:limit]
