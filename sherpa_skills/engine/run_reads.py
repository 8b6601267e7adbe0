"""Reading runs back: a run's row, a page of runs, its belief (whole, its tail, or as of a step), its steps."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import NoSuchRun
from .belief import Belief, LogEntry, TrajectoryEntry
from .run_base import _RunStoreBase
from .run_values import _like


@dataclass
class RunRow:
    run_id: str
    workflow: str
    workflow_path: str | None
    spec_hash: str | None
    status: str
    state: str
    tick: int
    counters: dict[str, Any]
    error: str | None
    inputs: dict[str, Any]
    created: float
    updated: float
    #: What the run's hooks saved, by hook name (see engine/hooks.py).
    hooks: dict[str, Any] = field(default_factory=dict)
    #: Where the run was started (its log is in HOME/logs there); None for runs recorded before it was kept.
    host: str | None = None
    home: str | None = None


_RUN_COLUMNS = (
    "run_id, workflow, workflow_path, spec_hash, status, state, tick, counters, error, inputs, created, updated, "
    "hooks, host, home"
)


def _run_row(row: tuple[Any, ...]) -> RunRow:
    return RunRow(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        row[5],
        row[6],
        json.loads(row[7]),
        row[8],
        json.loads(row[9]),
        row[10],
        row[11],
        json.loads(row[12]) if row[12] else {},
        row[13],
        row[14],
    )


class _RunReads(_RunStoreBase):
    """The run store's reads."""

    def get_run(self, run_id: str) -> RunRow:
        row = self.conn.execute(
            f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?",
            (run_id,),
        ).fetchone()
        if row is None:
            matches = self.db.prefix_matches("runs", "run_id", run_id)
            if len(matches) == 1:
                return self.get_run(matches[0])
            if matches:
                raise NoSuchRun(
                    f"run id prefix '{run_id}' is ambiguous: "
                    f"{', '.join(matches[:3])}{', …' if len(matches) > 3 else ''}; give more characters"
                )
            raise NoSuchRun(f"no run '{run_id}' in {self.where}; `sherpa-skills runs` lists them")
        return self._row(row)

    def _row(self, values: tuple[Any, ...]) -> RunRow:
        row = _run_row(values)
        if row.home is None and not self.db.shared:  # recorded before origins were kept: one machine's truth
            row.home = str(self.path.parent)
        return row

    def load_belief(self, run_id: str, tail: int | None = None) -> Belief:
        """The run's belief; with `tail`, only the last `tail` trajectory and log entries (the
        context is always whole)."""
        return self._belief(run_id, tail=tail)

    def belief_at(self, run_id: str, tick: int) -> Belief:
        """The run's belief as it was once step `tick` was committed: what a step view shows and a fork starts from."""
        return self._belief(run_id, up_to=tick)

    def _belief(self, run_id: str, *, tail: int | None = None, up_to: int | None = None) -> Belief:
        """The run's rows as a belief: all of them, the last `tail` trajectory and log entries, or those up to tick
        `up_to`."""
        conn = self.conn
        where, params = (
            ("WHERE run_id = ?", (run_id,)) if up_to is None else ("WHERE run_id = ? AND tick <= ?", (run_id, up_to))
        )
        limit = "" if tail is None else f" DESC LIMIT {max(0, int(tail))}"
        trajectory = [
            TrajectoryEntry(tick=r[0], state=r[1], trigger=r[2], source=r[3], decided_by=r[4], at=r[5])
            for r in conn.execute(
                f"SELECT tick, state, trigger, source, decided_by, at FROM run_trajectory {where} ORDER BY id" + limit,
                params,
            )
        ]
        log = [
            LogEntry(
                tick=r[0],
                action=r[1],
                inputs=json.loads(r[2]),
                outputs=json.loads(r[3]) if r[3] is not None else None,
                status=r[4],
                started=r[5],
                duration_ms=r[6],
                tokens=r[7],
                cost=r[8],
                error=r[9],
                repeated=bool(r[10]),
            )
            for r in conn.execute(
                "SELECT tick, action, inputs, outputs, status, started, duration_ms, tokens, cost, error, "
                f"repeated FROM run_log {where} ORDER BY id" + limit,
                params,
            )
        ]
        if tail is not None:
            trajectory.reverse()
            log.reverse()
        context: dict[str, Any] = {}
        for key, value in conn.execute(f"SELECT key, value FROM run_context {where} ORDER BY id", params):
            context[key] = json.loads(value)
        return Belief(trajectory=trajectory, log=log, context=context)

    def steps(self, run_id: str) -> list[tuple[int, str, str | None, str, float]]:
        """Every step of the run as (tick, state entered, trigger, decided_by, at): the step timeline, one cheap
        query even for long runs."""
        return [
            (r[0], r[1], r[2], r[3], r[4])
            for r in self.conn.execute(
                "SELECT tick, state, trigger, decided_by, at FROM run_trajectory WHERE run_id = ? ORDER BY id",
                (run_id,),
            )
        ]

    def visited_states(self, run_id: str) -> list[str]:
        """Every state the run entered, in order (one column: cheap even for long runs, e.g. to draw its path)."""
        return [
            r[0] for r in self.conn.execute("SELECT state FROM run_trajectory WHERE run_id = ? ORDER BY id", (run_id,))
        ]

    def log_size(self, run_id: str) -> int:
        count: int = self.conn.execute("SELECT COUNT(*) FROM run_log WHERE run_id = ?", (run_id,)).fetchone()[0]
        return count

    def has_run(self, run_id: str) -> bool:
        """Exactly this run id (get_run also accepts a unique prefix)."""
        return self.conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is not None

    def list_runs(self, limit: int = 50) -> list[RunRow]:
        ids = [r[0] for r in self.conn.execute("SELECT run_id FROM runs ORDER BY created DESC LIMIT ?", (limit,))]
        return [self.get_run(i) for i in ids]

    def search_runs(
        self,
        *,
        status: str | None = None,
        workflow: str | None = None,
        text: str | None = None,
        id_contains: str | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> tuple[list[RunRow], int]:
        """A page of runs, newest first, and how many match in all: for views that page through thousands of runs."""
        where, params = [], []
        like = self.db.like()
        if status:
            where.append("status = ?")
            params.append(status)
        if workflow:
            where.append("workflow = ?")
            params.append(workflow)
        if id_contains:
            where.append(f"run_id {like} ? ESCAPE '\\'")
            params.append(f"%{_like(id_contains)}%")
        if text:
            # The inputs too: a thousand runs of one workflow differ only by them.
            where.append(
                "("
                + " OR ".join(f"{c} {like} ? ESCAPE '\\'" for c in ("run_id", "workflow", "state", "error", "inputs"))
                + ")"
            )
            params.extend([f"%{_like(text)}%"] * 5)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        total = self.conn.execute(f"SELECT COUNT(*) FROM runs{clause}", params).fetchone()[0]
        rows = self.conn.execute(
            f"SELECT {_RUN_COLUMNS} FROM runs{clause} ORDER BY created DESC, rowid DESC LIMIT ? OFFSET ?",
            [*params, max(0, limit), max(0, offset)],
        ).fetchall()
        return [self._row(r) for r in rows], int(total)

    def workflows(self) -> list[str]:
        """The workflow names that have runs, for filters."""
        return [r[0] for r in self.conn.execute("SELECT DISTINCT workflow FROM runs ORDER BY workflow")]
