"""Where the decision memory's examples and a procedure's branches are kept: the skill store's tables
(`m009_decision_examples`). Plain rows in and out; what they mean is `memory.py`'s business."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from ...db.connection import Connection
from ...redact import redact, redact_value
from ..store.database import ProcedureDatabase


@dataclass(slots=True)
class Example:
    """One decision a workflow's LLM took at a state: what it saw and what it chose (arguments parametrised)."""

    workflow: str
    state: str
    trigger: str
    args: dict[str, Any]
    features: dict[str, Any]
    path: str
    task: str
    vector: bytes | None = None
    embedder: str | None = None
    run_id: str | None = None
    id: int = 0
    #: The memory's head score when it abstained here and whether its guess was this decision: a calibration point.
    score: float | None = None
    hit: bool | None = None
    #: Tokens the model's decision cost (the run's tokens per LLM call): what an answer here is estimated to save.
    tokens: int | None = None
    #: The head's scorer that gave `score` (head.scorer_name): points of another scorer are on another scale.
    scorer: str | None = None
    created: float = field(default_factory=time.time)

    #: `label`, made once (a memory reading thousands of examples asks it of each several times).
    _label: str | None = field(default=None, repr=False, compare=False)

    @property
    def label(self) -> str:
        """What was decided, as one comparable value: the trigger and its (parametrised) arguments."""
        if self._label is None:
            self._label = self.trigger + " " + json.dumps(self.args, sort_keys=True, default=str)
        return self._label


def _dump(value: Any) -> str:
    # Canonical (sorted keys): one decision's arguments are one text, which `examples_after` partitions by.
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def add_examples(store: ProcedureDatabase, examples: list[Example]) -> None:
    """Keep `examples` (one run's), redacted like everything stored, in one transaction."""
    if not examples:
        return
    store.db.transaction(
        lambda conn: conn.executemany(
            "INSERT INTO decision_examples (workflow, state, trigger, args, features, path, task, vector, embedder,"
            " run_id, created, score, hit, tokens, scorer) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    e.workflow,
                    e.state,
                    e.trigger,
                    _dump(redact_value(e.args)),
                    _dump(redact_value(e.features)),
                    e.path,
                    redact(e.task)[:2000],
                    e.vector,
                    e.embedder,
                    e.run_id,
                    e.created,
                    e.score,
                    None if e.hit is None else int(e.hit),
                    e.tokens,
                    e.scorer,
                )
                for e in examples
            ],
        ),
        what=f"{len(examples)} decision examples",
    )


def examples_after(
    store: ProcedureDatabase, workflow: str, after: int = 0, newest: int = 1 << 30, upto: int = 1 << 62
) -> list[Example]:
    """`workflow`'s examples newer than id `after` (up to id `upto`), oldest first, at most the `newest` of each
    decision at each state (what a memory keeps): a memory reads only what it has not seen, and a new process no more
    than it keeps."""
    rows = store.conn.execute(
        "SELECT id, workflow, state, trigger, args, features, path, task, vector, embedder, run_id, created FROM ("
        " SELECT *, ROW_NUMBER() OVER (PARTITION BY state, trigger, args ORDER BY id DESC) AS nth"
        " FROM decision_examples WHERE workflow = ? AND id > ? AND id <= ?) AS ranked WHERE nth <= ? ORDER BY id",
        (workflow, after, upto, newest),
    ).fetchall()
    return [
        Example(
            id=r[0],
            workflow=r[1],
            state=r[2],
            trigger=r[3],
            args=json.loads(r[4]),
            features=json.loads(r[5]),
            path=r[6],
            task=r[7],
            vector=r[8],
            embedder=r[9],
            run_id=r[10],
            created=r[11],
        )
        for r in rows
    ]


def example_counts(store: ProcedureDatabase, workflow: str | None = None) -> list[dict[str, Any]]:
    """How many examples each (workflow, state, trigger) has: what `learn decisions` lists."""
    where, params = ("WHERE workflow = ?", (workflow,)) if workflow else ("", ())
    rows = store.conn.execute(
        f"SELECT workflow, state, trigger, COUNT(*), MAX(created) FROM decision_examples {where}"
        " GROUP BY workflow, state, trigger ORDER BY workflow, state, trigger",
        params,
    ).fetchall()
    return [{"workflow": r[0], "state": r[1], "trigger": r[2], "examples": r[3], "last": r[4]} for r in rows]


def calibration_after(
    store: ProcedureDatabase, workflow: str, after_example: int = 0, after_error: int = 0, scorer: str | None = None
) -> tuple[list[tuple[str, float, bool]], list[tuple[str, float, bool]], dict[str, Any]]:
    """`workflow`'s calibration points newer than the ids given: (state, score, wrong) of the examples the head
    guessed for, and of the answers later contradicted (always wrong), those scored by `scorer` only (given); with
    the ids read and the model's cost."""
    rows = store.conn.execute(
        "SELECT id, state, score, hit, tokens, scorer FROM decision_examples WHERE workflow = ? AND id > ? ORDER BY id",
        (workflow, after_example),
    ).fetchall()
    errors = store.conn.execute(
        "SELECT id, state, score, scorer FROM decision_errors WHERE workflow = ? AND id > ? ORDER BY id",
        (workflow, after_error),
    ).fetchall()
    points = [
        (r[1], float(r[2]), not r[3])
        for r in rows
        if r[2] is not None and r[3] is not None and (scorer is None or r[5] == scorer)
    ]
    costs = [int(r[4]) for r in rows if r[4] is not None]
    return (
        points,
        [(r[1], float(r[2]), True) for r in errors if scorer is None or r[3] == scorer],
        {
            "example_ids": [r[0] for r in rows],
            "error_ids": [r[0] for r in errors],
            "tokens": sum(costs),
            "decisions": len(costs),
        },
    )


def add_error(
    store: ProcedureDatabase, workflow: str, state: str, score: float, why: str, scorer: str | None = None
) -> None:
    """An answer of the memory later contradicted: a wrong calibration point of `state` (scored by `scorer`)."""
    now = time.time()
    store.db.transaction(
        lambda conn: conn.execute(
            "INSERT INTO decision_errors (workflow, state, score, why, created, scorer) VALUES (?, ?, ?, ?, ?, ?)",
            (workflow, state, score, why[:500], now, scorer),
        ),
        what=f"a decision error at state '{state}'",
    )


def delete_examples(store: ProcedureDatabase, workflow: str, ids: list[int], state: str | None = None) -> int:
    """Delete `workflow`'s examples `ids` (and, with `state`, every one of that state): how many went."""

    def write(conn: Connection) -> int:
        gone = 0
        if ids:
            marks = ",".join("?" * len(ids))
            gone += conn.execute(
                f"DELETE FROM decision_examples WHERE workflow = ? AND id IN ({marks})", (workflow, *ids)
            ).rowcount
        if state is not None:
            gone += conn.execute(
                "DELETE FROM decision_examples WHERE workflow = ? AND state = ?", (workflow, state)
            ).rowcount
            conn.execute("DELETE FROM decision_errors WHERE workflow = ? AND state = ?", (workflow, state))
        # What the persisted memory stands for is gone: the next process rebuilds it from the examples left.
        conn.execute("DELETE FROM decision_snapshots WHERE workflow = ?", (workflow,))
        return gone

    return store.db.transaction(write, what=f"deleting {workflow}'s decision examples")


def record_answers(store: ProcedureDatabase, workflow: str, run_id: str | None, answered: int, tokens: int) -> None:
    """A run's decisions the memory answered and the tokens they are estimated to have saved (`learn stats`)."""
    now = time.time()
    store.db.transaction(
        lambda conn: conn.execute(
            "INSERT INTO decision_answers (workflow, run_id, answered, tokens_saved, created) VALUES (?, ?, ?, ?, ?)",
            (workflow, run_id, answered, tokens, now),
        ),
        what=f"{workflow}'s answered decisions",
    )


def answer_totals(store: ProcedureDatabase, workflow: str | None = None) -> list[dict[str, Any]]:
    """Per workflow: runs the memory answered in, decisions answered, tokens estimated saved."""
    where, params = ("WHERE workflow = ?", (workflow,)) if workflow else ("", ())
    rows = store.conn.execute(
        f"SELECT workflow, COUNT(*), SUM(answered), SUM(tokens_saved) FROM decision_answers {where}"
        " GROUP BY workflow ORDER BY workflow",
        params,
    ).fetchall()
    return [{"workflow": r[0], "runs": r[1], "llm_calls_saved": r[2], "tokens_saved": r[3]} for r in rows]
