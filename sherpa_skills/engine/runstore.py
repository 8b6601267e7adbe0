"""Durable runs: every tick appends what it changed in one transaction (SQLite, or PostgreSQL when several machines
share the store); a run resumes from its last tick, in one process at a time.

Here: opening the store, a run's start and its ticks, and the intents that make a crash recoverable. RunStore's other
jobs are mixed in from their own modules: run_reads, run_machines, run_events, run_retention (team tasks are the
agents layer's: agents/task_store.py)."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from ..db.connection import Connection
from ..db.database import Database, given_or_opened
from ..errors import StoreError, UsageError
from ..redact import redact
from .belief import LogEntry, TrajectoryEntry
from .run_claims import RunClaims
from .run_events import _RunEvents
from .run_machines import _RunMachines
from .run_reads import RunRow as RunRow  # what the reads return, documented with RunStore
from .run_reads import _RunReads
from .run_retention import _RunRetention
from .run_schema import MIGRATIONS
from .run_values import _dump, _dump_counters

log = structlog.get_logger("sherpa_skills.engine.runstore")
RUN_STATUSES = ("running", "waiting", "interrupted", "final", "error")


@dataclass(slots=True)
class TickRecord:
    """What one tick changed: appended rows only, never a copy of the whole belief."""

    trajectory: list[TrajectoryEntry] = field(default_factory=list)
    log: list[LogEntry] = field(default_factory=list)
    context: list[tuple[str, Any]] = field(default_factory=list)
    events: list[tuple[str, str, dict[str, Any]]] = field(
        default_factory=list
    )  # (direction 'in'|'out', outcome, event body)


@dataclass
class InFlight:
    """The tick a crash cut short, as far as it got:
    the transition it took and the results of the actions that completed."""

    tick: int
    decision: dict[str, Any] | None
    results: dict[int, dict[str, Any]]


@dataclass
class InterruptedAction:
    """An action that was started but whose result was never committed (the process died in between)."""

    tick: int
    seq: int
    action: str
    started: float


class RunStore(_RunReads, _RunMachines, _RunEvents, _RunRetention):
    """The run half of the truth store, over the `Database` it is given (its opener closes it), else one it opens for
    itself: store.db in the home folder (or the SQLite file `path`), or the PostgreSQL database `database` (else
    SHERPA_SKILLS_DATABASE) names. The home folder keeps what is local either way (logs)."""

    def __init__(
        self,
        db: Database | str | Path | None = None,
        *,
        home: str | Path | None = None,
        path: str | Path | None = None,
        database: str | None = None,
    ):
        if isinstance(
            db, (str, os.PathLike)
        ):  # `RunStore(path)` as it was written before the Database (the peer bench)
            if path is not None:
                raise UsageError("give RunStore its SQLite file once: RunStore(path) or RunStore(path=...)")
            db, path = None, db
        self.db, self._owns_db = given_or_opened(db, home=home, path=path, database=database)
        self.db.migrate("runs", MIGRATIONS)
        self.db.checkpoint_in_background()
        self.claims = RunClaims(self.db)
        self._commits = 0
        self._lock = self.db.lock  # one writer per connection, whichever store of it writes
        self._kept_specs: set[str] = set()  # machine records known to be stored: a run start asks nothing more
        self._closed = False

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.claims.release_all()
        self.db.stop_checkpoints()
        if self._owns_db:
            self.db.close()

    def __del__(self) -> None:
        # A store forgotten unclosed: the database it opened for itself lets go of its checkpointer, never waiting.
        if getattr(self, "_owns_db", False):
            self.db.__del__()

    def create_run(
        self,
        run_id: str,
        workflow: str,
        workflow_path: str | None,
        spec_hash: str | None,
        inputs: dict[str, Any],
        state: str,
        counters: dict[str, Any],
        record: TickRecord,
        *,
        hooks: dict[str, Any] | None = None,
        machine: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        """A new run, in one transaction with what its hooks keep and, given `machine` (what builds the machine's
        record), that it executes machine `spec_hash` from its start: the record itself is stored once per hash."""
        now = time.time()

        def write(conn: Connection) -> None:
            self.claims.ensure(run_id)
            if machine is not None and spec_hash is not None:
                self._keep_spec(spec_hash, machine)
                self.conn.execute(
                    "INSERT INTO run_machines (run_id, from_tick, spec_hash) VALUES (?, 0, ?) "
                    "ON CONFLICT (run_id, from_tick) DO UPDATE SET spec_hash = excluded.spec_hash",
                    (run_id, spec_hash),
                )
            self.conn.execute(
                "INSERT INTO runs (run_id, workflow, workflow_path, spec_hash, status, state, tick, "
                "counters, error, inputs, created, updated, hooks, host, home) "
                "VALUES (?, ?, ?, ?, 'running', ?, 0, ?, NULL, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    workflow,
                    workflow_path,
                    spec_hash,
                    state,
                    _dump(counters, "counters"),
                    _dump(inputs, "inputs"),
                    now,
                    now,
                    _dump(hooks, "hook state") if hooks else None,
                    socket.gethostname(),
                    str(self.path.parent),
                ),
            )
            self._append(run_id, record)

        self.db.transaction(
            write, what=f"the start of run {run_id}", landed=lambda: self._stamped(run_id, "created", now)
        )
        if machine is not None and spec_hash is not None:
            self._kept_specs.add(spec_hash)  # only now: a write tried again stores the record again

    def _stamped(self, run_id: str, column: str, stamp: float) -> bool:
        """Whether the run's row carries this write's own time stamp: the key of a tick (or a run's start) whose
        COMMIT's answer was lost."""
        row = self.conn.execute(f"SELECT {column} FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return row is not None and row[0] == stamp

    def _append(self, run_id: str, record: TickRecord, at_tick: int = -1) -> None:
        conn = self.conn
        if record.trajectory:
            conn.executemany(
                "INSERT INTO run_trajectory (run_id, tick, state, trigger, source, decided_by, at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(run_id, t.tick, t.state, t.trigger, t.source, t.decided_by, t.at) for t in record.trajectory],
            )
        if record.log:
            conn.executemany(
                "INSERT INTO run_log (run_id, tick, action, inputs, outputs, status, started, duration_ms, "
                "tokens, cost, error, repeated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        run_id,
                        e.tick,
                        e.action,
                        _dump(e.inputs, f"inputs of action '{e.action}'"),
                        _dump(e.outputs, f"outputs of action '{e.action}'"),
                        e.status,
                        e.started,
                        e.duration_ms,
                        e.tokens,
                        e.cost,
                        e.error,
                        int(e.repeated),
                    )
                    for e in record.log
                ],
            )
        if record.context:
            tick = record.trajectory[-1].tick if record.trajectory else (record.log[-1].tick if record.log else at_tick)
            conn.executemany(
                "INSERT INTO run_context (run_id, tick, key, value) VALUES (?, ?, ?, ?)",
                [(run_id, tick, redact(k), _dump(v, f"context key '{k}'", key=k)) for k, v in record.context],
            )
        if record.events:
            tick = record.trajectory[-1].tick if record.trajectory else (record.log[-1].tick if record.log else at_tick)
            try:
                conn.executemany(
                    "INSERT INTO run_events (run_id, direction, event_id, tick, name, outcome, body, at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (run_id, d, e["id"], tick, e["name"], outcome, _dump(e, f"event '{e['name']}'"), time.time())
                        for d, outcome, e in record.events
                    ],
                )
            except self.db.integrity_error:
                raise StoreError(
                    f"run {run_id} already consumed or emitted one of events {[e['id'] for _, _, e in record.events]}; "
                    "the tick is not recorded twice"
                ) from None

    def commit_tick(
        self,
        run_id: str,
        record: TickRecord,
        *,
        status: str,
        state: str,
        tick: int,
        counters: dict[str, Any],
        error: str | None = None,
        clear_intents: bool = False,
        hooks: dict[str, Any] | None = None,
    ) -> None:
        """Everything a tick changed, and the machine position, in one transaction; with `hooks`, what the run's hooks
        keep with it now (None: unchanged)."""
        now = time.time()

        def write(conn: Connection) -> None:
            self.claims.ensure(run_id)
            self._commits += 1
            self._append(run_id, record, tick)
            self.conn.execute(
                "UPDATE runs SET status = ?, state = ?, tick = ?, counters = ?, error = ?, updated = ? "
                "WHERE run_id = ?",
                (status, state, tick, _dump_counters(counters), error, now, run_id),
            )
            if hooks is not None:
                self.conn.execute("UPDATE runs SET hooks = ? WHERE run_id = ?", (_dump(hooks, "hook state"), run_id))
            if clear_intents:
                self.conn.execute("DELETE FROM run_intents WHERE run_id = ?", (run_id,))

        # One round trip per tick on PostgreSQL; a tick with events waits per statement, so that a duplicate event
        # is told apart (see _append) from any other failure.
        self.db.transaction(
            write,
            what=f"step {tick} of run {run_id}",
            landed=lambda: self._stamped(run_id, "updated", now),
            immediate=False,
            batch=not record.events,
        )
        if self._commits % 500 == 0:
            self.db.nudge_checkpoint()  # ~8 MB of WAL: checkpoint it off the tick path now

    def mark_interrupted(self, run_id: str) -> bool:
        """A run a signal stopped (Ctrl-C, SIGTERM): shown as `interrupted`, resumed as a crashed one is.
        False if not recorded."""
        cur = self.db.once_more(
            lambda conn: conn.execute(
                "UPDATE runs SET status = 'interrupted', updated = ? WHERE run_id = ? AND status != 'final'",
                (time.time(), run_id),
            )
        )
        return bool(cur.rowcount > 0)

    def mark_started(
        self, run_id: str, tick: int, seq: int, action: str, decision: dict[str, Any] | None = None
    ) -> None:
        """Committed before a side-effecting action runs, so a crash leaves a trace of it (and of the
        transition it serves)."""
        row = (run_id, tick, seq, action, time.time(), _dump(decision, "decision") if decision is not None else None)
        self.db.once_more(
            lambda conn: conn.execute(
                "INSERT INTO run_intents (run_id, tick, seq, action, started, done, result, decision)"
                " VALUES (?, ?, ?, ?, ?, 0, NULL, ?) ON CONFLICT (run_id, tick, seq) DO UPDATE SET "
                "action = excluded.action, started = excluded.started, done = 0, result = NULL, "
                "decision = excluded.decision",
                row,
            )
        )

    def mark_done(self, run_id: str, tick: int, seq: int, result: dict[str, Any]) -> None:
        """Committed as soon as a side-effecting action returns: on resume its result is recovered from here, not run
        again."""
        row = (_dump(result, "action result"), run_id, tick, seq)
        self.db.once_more(
            lambda conn: conn.execute(
                "UPDATE run_intents SET done = 1, result = ? WHERE run_id = ? AND tick = ? AND seq = ?", row
            )
        )

    def in_flight(self, run_id: str) -> InFlight | None:
        """The uncommitted tick's completed actions, when a crash came after at least one of them; None otherwise."""
        rows = self.conn.execute(
            "SELECT tick, seq, result, decision FROM run_intents WHERE run_id = ? AND done = 1 ORDER BY tick, seq",
            (run_id,),
        ).fetchall()
        if not rows:
            return None
        tick = rows[-1][0]
        decision = next((json.loads(r[3]) for r in rows if r[0] == tick and r[3] is not None), None)
        return InFlight(tick, decision, {r[1]: json.loads(r[2]) for r in rows if r[0] == tick})

    def interrupted(self, run_id: str) -> list[InterruptedAction]:
        return [
            InterruptedAction(*r)
            for r in self.conn.execute(
                "SELECT tick, seq, action, started FROM run_intents WHERE run_id = ? AND done = 0 ORDER BY tick, seq",
                (run_id,),
            )
        ]
