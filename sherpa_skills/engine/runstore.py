"""Durable runs: every tick appends what it changed in one transaction (SQLite, or PostgreSQL when several machines
share the store); a run resumes from its last tick, in one process at a time."""

from __future__ import annotations

import json
import socket
import sqlite3
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from ..db.connection import Connection, batched, dialect_of
from ..db.url import database_url, describe
from ..errors import ConnectionLost, NoSuchRun, StoreError
from ..home import store_path
from ..redact import keeps_numbers_under, redact, redact_item, redact_value
from ..sqlite_db import Checkpointer, connect, execute_script, migrate, prefix_matches
from .belief import Belief, LogEntry, TrajectoryEntry
from .run_claims import RunClaims

log = structlog.get_logger("sherpa_skills.engine.runstore")


def m001_runs(conn: sqlite3.Connection) -> None:
    execute_script(
        conn,
        """
        CREATE TABLE runs (
            run_id TEXT PRIMARY KEY, workflow TEXT NOT NULL, workflow_path TEXT, spec_hash TEXT,
            status TEXT NOT NULL, state TEXT NOT NULL, tick INTEGER NOT NULL, counters TEXT NOT NULL,
            error TEXT, inputs TEXT NOT NULL, created REAL NOT NULL, updated REAL NOT NULL);
        CREATE TABLE run_trajectory (
            id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, tick INTEGER NOT NULL, state TEXT NOT NULL,
            trigger TEXT, source TEXT, decided_by TEXT NOT NULL, at REAL NOT NULL);
        CREATE INDEX run_trajectory_run ON run_trajectory (run_id, id);
        CREATE TABLE run_log (
            id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, tick INTEGER NOT NULL, action TEXT NOT NULL,
            inputs TEXT NOT NULL, outputs TEXT, status TEXT NOT NULL, started REAL NOT NULL,
            duration_ms REAL NOT NULL, tokens INTEGER NOT NULL, cost REAL NOT NULL, error TEXT);
        CREATE INDEX run_log_run ON run_log (run_id, id);
        CREATE TABLE run_context (
            id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, tick INTEGER NOT NULL, key TEXT NOT NULL, value TEXT);
        CREATE INDEX run_context_run ON run_context (run_id, id);
        CREATE TABLE run_intents (
            run_id TEXT NOT NULL, tick INTEGER NOT NULL, seq INTEGER NOT NULL, action TEXT NOT NULL,
            started REAL NOT NULL, PRIMARY KEY (run_id, tick, seq));
    """,
    )


def m002_run_events(conn: sqlite3.Connection) -> None:
    """Events a run consumed ('in': the dedupe record) and emitted ('out': the outbox), written with the tick."""
    execute_script(
        conn,
        """
        CREATE TABLE run_events (
            run_id TEXT NOT NULL, direction TEXT NOT NULL, event_id TEXT NOT NULL, tick INTEGER NOT NULL,
            name TEXT NOT NULL, outcome TEXT NOT NULL, body TEXT NOT NULL, published INTEGER NOT NULL DEFAULT 0,
            at REAL NOT NULL, PRIMARY KEY (run_id, direction, event_id));
        CREATE INDEX run_events_outbox ON run_events (run_id) WHERE direction = 'out' AND published = 0;
    """,
    )


def m003_intent_results(conn: sqlite3.Connection) -> None:
    """An action's result is recorded the moment it completes,
    so a crash later in the same tick does not run it again."""
    execute_script(
        conn,
        """
        ALTER TABLE run_intents ADD COLUMN done INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE run_intents ADD COLUMN result TEXT;
        ALTER TABLE run_intents ADD COLUMN decision TEXT;
    """,
    )


def m004_repeated_actions(conn: sqlite3.Connection) -> None:
    """An action run again because a crash cut it short is marked, so `show` can say it may have run twice."""
    conn.execute("ALTER TABLE run_log ADD COLUMN repeated INTEGER NOT NULL DEFAULT 0")


def m005_hook_state(conn: sqlite3.Connection) -> None:
    """What a run's hooks keep with it (a learning run's match and where its replay stands), by hook name: whichever
    process continues the run gives it back to them."""
    conn.execute("ALTER TABLE runs ADD COLUMN hooks TEXT")


def m006_run_machines(conn: sqlite3.Connection) -> None:
    """What a run executed, kept with it: each machine (workflow text and the files it loaded) once per spec hash,
    the ticks each run ran under it, and where a fork came from."""
    execute_script(
        conn,
        """
        CREATE TABLE run_specs (spec_hash TEXT PRIMARY KEY, body TEXT NOT NULL, created REAL NOT NULL);
        CREATE TABLE run_machines (
            run_id TEXT NOT NULL, from_tick INTEGER NOT NULL, spec_hash TEXT NOT NULL,
            PRIMARY KEY (run_id, from_tick));
        CREATE TABLE run_forks (
            run_id TEXT PRIMARY KEY, parent_run_id TEXT NOT NULL, at_tick INTEGER NOT NULL, created REAL NOT NULL);
        CREATE INDEX run_forks_parent ON run_forks (parent_run_id);
    """,
    )


def m007_team_tasks(conn: sqlite3.Connection) -> None:
    """Which team a task (correlation id) belongs to, with what the team was asked and its drawing, as it ran: the
    agents' runs alone name neither."""
    execute_script(
        conn,
        """
        CREATE TABLE team_tasks (
            correlation_id TEXT PRIMARY KEY, team TEXT NOT NULL, record TEXT NOT NULL, created REAL NOT NULL);
    """,
    )


def m008_run_origin(conn: sqlite3.Connection) -> None:
    """The machine and home folder a run was started in: its log file is there, and another machine sharing the
    database says so rather than naming a path it does not have."""
    execute_script(
        conn,
        """
        ALTER TABLE runs ADD COLUMN host TEXT;
        ALTER TABLE runs ADD COLUMN home TEXT;
    """,
    )


MIGRATIONS = [
    m001_runs,
    m002_run_events,
    m003_intent_results,
    m004_repeated_actions,
    m005_hook_state,
    m006_run_machines,
    m007_team_tasks,
    m008_run_origin,
]
RELAY_BATCH = 100  # outbox events one relay claims at a time on PostgreSQL
RUN_STATUSES = ("running", "waiting", "interrupted", "final", "error")
RUN_TABLES = (
    "run_trajectory",
    "run_log",
    "run_context",
    "run_intents",
    "run_events",
    "run_machines",
    "run_forks",
)  # a run's own rows, beside `runs`


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


@dataclass
class InFlight:
    """The tick a crash cut short, as far as it got:
    the transition it took and the results of the actions that completed."""

    tick: int
    decision: dict[str, Any] | None
    results: dict[int, dict[str, Any]]


@dataclass
class Interrupted:
    """An action that was started but whose result was never committed (the process died in between)."""

    tick: int
    seq: int
    action: str
    started: float


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


def _like(text: str) -> str:
    """`text` as a literal inside a LIKE pattern (with ESCAPE '\\')."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


# One encoder for every row: json.dumps with separators builds a new one per call (5 rows a tick).
_encode = json.JSONEncoder(separators=(",", ":")).encode
_NUMBERS = frozenset({int, float, bool})


def _dump(value: Any, what: str, key: str | None = None) -> str:
    """JSON for a row, secrets redacted: nothing that looks like a token or password reaches the store.

    A value stored under a `key` is redacted as it would be under that key (api_key: ...
    is a secret whatever it looks like).
    """
    try:
        return _encode(redact_value(value) if key is None else redact_item(key, value))
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{what} is not JSON-serialisable: {exc}") from None


def _dump_counters(counters: dict[str, Any]) -> str:
    """The run's counters, written every tick: numbers under names redaction keeps skip its walk;
    anything else takes it."""
    if all(type(v) in _NUMBERS and type(k) is str and keeps_numbers_under(k) for k, v in counters.items()):
        return _encode(counters)
    return _dump(counters, "counters")


class RunStore:
    """The run half of the truth store: store.db in the home folder, or the PostgreSQL database `database` (else
    SHERPA_SKILLS_DATABASE) names. The home folder keeps what is local either way (logs)."""

    def __init__(self, path: str | Path | None = None, *, home: str | Path | None = None, database: str | None = None):
        url = self._url = None if path else database_url(database)
        # On PostgreSQL too: the home is where this machine's logs are, and an agent finds it as path's folder.
        self.path = Path(path) if path else store_path(home)
        self._checkpointer: Checkpointer | None = None
        self.conn: Connection
        if url is not None:
            from ..db.migrations import connect_migrated

            self.where = describe(url)
            pg = connect_migrated(url, "runs", MIGRATIONS)
            self.conn = pg
            self._integrity_error: type[Exception] = pg.IntegrityError
        else:
            self.where = str(self.path)
            lite = connect(self.path)
            migrate(lite, "runs", MIGRATIONS)
            # Ticks never pay for a WAL checkpoint: a background thread does them (see Checkpointer).
            lite.execute("PRAGMA wal_autocheckpoint=0")
            lite.execute(f"PRAGMA journal_size_limit={64 * 1024 * 1024}")  # a checkpointed WAL shrinks back
            self._checkpointer = Checkpointer.acquire(self.path)
            self.conn = lite
            self._integrity_error = sqlite3.IntegrityError
        self.dialect = dialect_of(self.conn)
        self._like = "ILIKE" if self.dialect == "postgresql" else "LIKE"  # SQLite's LIKE ignores ASCII case already
        self.claims = RunClaims(self.conn, self.path)
        self._commits = 0
        self._lock = threading.Lock()
        self._kept_specs: set[str] = set()  # machine records known to be stored: a run start asks nothing more

    def close(self) -> None:
        checkpointer, self._checkpointer = self._checkpointer, None
        self.claims.release_all()
        self.conn.close()
        if checkpointer is not None:
            checkpointer.release()

    def __del__(self) -> None:
        checkpointer = getattr(self, "_checkpointer", None)
        if checkpointer is not None:
            self._checkpointer = None
            try:
                checkpointer.release(wait=False)  # the collector may run this while the guard is held, on this thread
            except Exception:  # never raise from a finaliser
                pass

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

        def write() -> None:
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

        with self._lock:
            self._transact(write, lambda: self._stamped(run_id, "created", now), f"the start of run {run_id}")

    def _transact(
        self,
        write: Callable[[], None],
        landed: Callable[[], bool],
        what: str,
        begin: str = "BEGIN IMMEDIATE",
        *,
        batch: bool = False,
    ) -> None:
        """`write` in one transaction (with `batch`, sent in one round trip on PostgreSQL). On PostgreSQL a dropped
        connection gets one more try on the fresh one, unless `landed` finds the lost COMMIT went through (its answer
        was what got lost): nothing is written twice."""
        for attempt in (1, 2):
            conn = self.conn
            try:
                with batched(conn) if batch else nullcontext():
                    conn.execute(begin)
                    write()
                    conn.execute("COMMIT")
                return
            except ConnectionLost:
                if landed():
                    return
                if attempt == 2:
                    raise ConnectionLost(
                        f"the connection to {self.where} dropped twice while writing {what}; nothing of it was "
                        "committed, and the run resumes from its last committed step"
                    ) from None
                log.warning("connection lost; writing again", what=what, where=self.where)
            except BaseException:
                if conn.in_transaction:  # a Ctrl-C landing just after COMMIT has nothing to undo, and must stay one
                    conn.execute("ROLLBACK")
                raise

    def _stamped(self, run_id: str, column: str, stamp: float) -> bool:
        """Whether the run's row carries this write's own time stamp: the key of a tick (or a run's start) whose
        COMMIT's answer was lost."""
        row = self.conn.execute(f"SELECT {column} FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return row is not None and row[0] == stamp

    def _once_more(self, write: Callable[[], Any]) -> Any:
        """A single statement that is the same written twice (an upsert, a flag set): on a dropped connection, sent
        again on the fresh one."""
        try:
            return write()
        except ConnectionLost:
            return write()

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
            except self._integrity_error:
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

        def write() -> None:
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

        with self._lock:
            # One round trip per tick on PostgreSQL; a tick with events waits per statement, so that a duplicate
            # event is told apart (see _append) from any other failure.
            self._transact(
                write,
                lambda: self._stamped(run_id, "updated", now),
                f"step {tick} of run {run_id}",
                "BEGIN",
                batch=not record.events,
            )
            self._commits += 1
            if self._commits % 500 == 0 and self._checkpointer is not None:
                self._checkpointer.nudge()  # ~8 MB of WAL: checkpoint it off the tick path now

    def mark_interrupted(self, run_id: str) -> bool:
        """A run a signal stopped (Ctrl-C, SIGTERM): shown as `interrupted`, resumed as a crashed one is.
        False if not recorded."""
        with self._lock:
            cur = self._once_more(
                lambda: self.conn.execute(
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
        with self._lock:
            self._once_more(
                lambda: self.conn.execute(
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
        with self._lock:
            self._once_more(
                lambda: self.conn.execute(
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

    def get_run(self, run_id: str) -> RunRow:
        row = self.conn.execute(
            f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?",
            (run_id,),
        ).fetchone()
        if row is None:
            matches = prefix_matches(self.conn, "runs", "run_id", run_id)
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
        if row.home is None and self._url is None:  # recorded before origins were kept: SQLite is one machine's
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

    def _keep_spec(self, spec_hash: str, record: Callable[[], dict[str, Any]]) -> None:
        """Inside a transaction: the machine's record, stored the first time its hash is seen (built only then)."""
        if spec_hash in self._kept_specs:
            return
        if not self.conn.execute("SELECT 1 FROM run_specs WHERE spec_hash = ?", (spec_hash,)).fetchone():
            self.conn.execute(
                "INSERT INTO run_specs (spec_hash, body, created) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                (spec_hash, _dump(record(), f"the record of machine {spec_hash}"), time.time()),
            )
        self._kept_specs.add(spec_hash)

    def keep_machine(self, run_id: str, from_tick: int, spec_hash: str, record: Callable[[], dict[str, Any]]) -> bool:
        """Record that the run executes machine `spec_hash` from `from_tick` on; the machine's record (built by
        `record` only when this hash was never kept) is stored once for every run of it. False when the run already
        runs under it."""
        with self._lock:
            latest = self.conn.execute(
                "SELECT spec_hash FROM run_machines WHERE run_id = ? ORDER BY from_tick DESC LIMIT 1", (run_id,)
            ).fetchone()
            if latest is not None and latest[0] == spec_hash:
                return False
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                self._keep_spec(spec_hash, record)
                self.conn.execute(
                    "INSERT INTO run_machines (run_id, from_tick, spec_hash) VALUES (?, ?, ?) "
                    "ON CONFLICT (run_id, from_tick) DO UPDATE SET spec_hash = excluded.spec_hash",
                    (run_id, from_tick, spec_hash),
                )
                self.conn.execute("COMMIT")
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
        return True

    def machines(self, run_id: str) -> list[tuple[int, str]]:
        """The machines the run ran under, as (first tick under it, spec hash), oldest first: more than one when it
        was resumed with --allow-changed; none for runs recorded before machines were kept."""
        return [
            (r[0], r[1])
            for r in self.conn.execute(
                "SELECT from_tick, spec_hash FROM run_machines WHERE run_id = ? ORDER BY from_tick", (run_id,)
            )
        ]

    def machine_record(self, spec_hash: str) -> dict[str, Any] | None:
        """What a machine was when a run executed it (see engine.run_record), or None when it was never kept."""
        row = self.conn.execute("SELECT body FROM run_specs WHERE spec_hash = ?", (spec_hash,)).fetchone()
        return json.loads(row[0]) if row else None

    def record_fork(self, run_id: str, parent_run_id: str, at_tick: int) -> None:
        with self._lock:
            self.conn.execute(
                "INSERT INTO run_forks (run_id, parent_run_id, at_tick, created) VALUES (?, ?, ?, ?)",
                (run_id, parent_run_id, at_tick, time.time()),
            )

    def record_team_task(self, correlation_id: str, team: str, record: dict[str, Any]) -> None:
        """Keep which team handles this task and what it was asked (redacted as every row is); the first record of a
        task stays (a team run again on the same task resumes it)."""
        with self._lock:
            self.conn.execute(
                "INSERT INTO team_tasks (correlation_id, team, record, created) VALUES (?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                (correlation_id, team, _dump(record, f"team task {correlation_id}"), time.time()),
            )

    def team_tasks(self, correlation_ids: list[str]) -> dict[str, dict[str, Any]]:
        """The kept record of each of these tasks that has one (tasks run before teams were kept have none)."""
        out: dict[str, dict[str, Any]] = {}
        for i in range(0, len(correlation_ids), 500):  # SQLite's bound-parameter limit
            chunk = correlation_ids[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for cid, record in self.conn.execute(
                f"SELECT correlation_id, record FROM team_tasks WHERE correlation_id IN ({marks})", chunk
            ):
                out[cid] = json.loads(record)
        return out

    def forked_from(self, run_id: str) -> tuple[str, int] | None:
        """(parent run id, step) when this run is a fork."""
        row = self.conn.execute("SELECT parent_run_id, at_tick FROM run_forks WHERE run_id = ?", (run_id,)).fetchone()
        return (row[0], row[1]) if row else None

    def forks(self, run_id: str) -> list[tuple[str, int]]:
        """The runs forked from this one, as (fork run id, step), oldest first."""
        return [
            (r[0], r[1])
            for r in self.conn.execute(
                "SELECT run_id, at_tick FROM run_forks WHERE parent_run_id = ? ORDER BY created", (run_id,)
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

    def interrupted(self, run_id: str) -> list[Interrupted]:
        return [
            Interrupted(*r)
            for r in self.conn.execute(
                "SELECT tick, seq, action, started FROM run_intents WHERE run_id = ? AND done = 0 ORDER BY tick, seq",
                (run_id,),
            )
        ]

    def delete_finished_before(
        self, cutoff: float, keep: Callable[[Any, list[str]], dict[str, str]] | None = None
    ) -> int:
        """Retention: runs that ended (final or error) before `cutoff` go,
        with everything they recorded (interrupted ones wait to be resumed)."""
        return len(
            self.delete_runs(
                lambda conn: [
                    r[0]
                    for r in conn.execute(
                        "SELECT run_id FROM runs WHERE status IN ('final', 'error') AND updated < ?", (cutoff,)
                    )
                ],
                keep,
            )[0]
        )

    def delete_runs(
        self,
        choose: Callable[[Connection], list[str]],
        keep: Callable[[Any, list[str]], dict[str, str]] | None = None,
    ) -> tuple[list[str], dict[str, str]]:
        """Delete the runs `choose` names, except those `keep` says must stay (run id → why),
        with every row they recorded,
        in one transaction: what is chosen and what refers to it cannot change in between. Returns (deleted, kept)."""
        with self._lock:
            conn = self.conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                chosen = choose(conn)
                kept = keep(conn, chosen) if keep else {}
                ids = [i for i in chosen if i not in kept]
                for table in (*RUN_TABLES, "runs"):
                    conn.executemany(f"DELETE FROM {table} WHERE run_id = ?", [(i,) for i in ids])
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return ids, kept

    def has_run(self, run_id: str) -> bool:
        """Exactly this run id (get_run also accepts a unique prefix)."""
        return self.conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is not None

    def consumed(self, run_id: str, event_id: str) -> str | None:
        """How the run dealt with this event (handled, unavailable, invalid), or None when it never consumed it."""
        row = self.conn.execute(
            "SELECT outcome FROM run_events WHERE run_id = ? AND direction = 'in' AND event_id = ?", (run_id, event_id)
        ).fetchone()
        return row[0] if row else None

    def run_events(self, run_id: str, direction: str | None = None) -> list[dict[str, Any]]:
        """A run's consumed and emitted events, in the order they were committed."""
        sql = "SELECT direction, outcome, tick, published, body FROM run_events WHERE run_id = ?" + (
            " AND direction = ?" if direction else ""
        )
        rows = self.conn.execute(sql + " ORDER BY rowid", (run_id, direction) if direction else (run_id,))
        return [
            {"direction": r[0], "outcome": r[1], "tick": r[2], "published": bool(r[3]), "event": json.loads(r[4])}
            for r in rows
        ]

    def unpublished(self, run_prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
        """Emitted events committed but not yet handed to a bus (the process died in between): (run_id, event body)."""
        pattern = _like(run_prefix) + "%"
        return [
            (r[0], json.loads(r[1]))
            for r in self.conn.execute(
                "SELECT run_id, body FROM run_events WHERE direction = 'out' AND published = 0 AND run_id LIKE "
                "? ESCAPE '\\' ORDER BY rowid",
                (pattern,),
            )
        ]

    def relay(
        self,
        publish: Callable[[dict[str, Any]], object],
        run_prefix: str = "",
        *,
        run_id: str | None = None,
        live: dict[str, dict[str, Any]] | None = None,
    ) -> int:
        """Hand the outbox (of the runs under `run_prefix`, or of run `run_id` alone) to `publish`, each event once,
        and mark it published; returns how many. On PostgreSQL, relays on several machines share it: each claims a
        batch with SELECT … FOR UPDATE SKIP LOCKED in a transaction of its own connection, publishes, marks, commits;
        one that dies mid-batch leaves its batch to the next (its row locks die with its connection). On SQLite, one
        machine: read, publish, mark. `live` holds, by event id, the bodies as the run emitted them (the store keeps
        them redacted): those go out rather than the stored copy."""
        live = live or {}
        if self._url is None:
            done = 0
            for rid, body in self.unpublished(run_prefix) if run_id is None else self._outbox_of(run_id):
                publish(live.get(body["id"], body))
                self.mark_published(rid, [body["id"]])
                done += 1
            return done
        from ..db.postgres import connect as connect_postgres

        where, param = (
            ("run_id = ?", run_id) if run_id is not None else ("run_id LIKE ? ESCAPE '\\'", _like(run_prefix) + "%")
        )
        conn = connect_postgres(self._url)
        done = 0
        try:
            while True:
                conn.execute("BEGIN")
                published: list[tuple[str, str]] = []
                try:
                    rows = conn.execute(
                        f"SELECT run_id, event_id, body FROM run_events WHERE direction = 'out' AND published = 0 AND "
                        f"{where} ORDER BY rowid LIMIT {RELAY_BATCH} FOR UPDATE SKIP LOCKED",
                        (param,),
                    ).fetchall()
                    for rid, event_id, body in rows:
                        publish(live[event_id] if event_id in live else json.loads(body))
                        published.append((rid, event_id))
                finally:  # what was handed over is marked, even when a later publish failed
                    if conn.in_transaction:
                        conn.executemany(
                            "UPDATE run_events SET published = 1 "
                            "WHERE run_id = ? AND direction = 'out' AND event_id = ?",
                            published,
                        )
                        conn.execute("COMMIT")
                done += len(published)
                if len(rows) < RELAY_BATCH:
                    return done
        finally:
            conn.close()

    def _outbox_of(self, run_id: str) -> list[tuple[str, dict[str, Any]]]:
        return [
            (run_id, json.loads(r[0]))
            for r in self.conn.execute(
                "SELECT body FROM run_events WHERE run_id = ? AND direction = 'out' AND published = 0 ORDER BY rowid",
                (run_id,),
            )
        ]

    def mark_published(self, run_id: str, event_ids: list[str]) -> None:
        with self._lock:
            self.conn.executemany(
                "UPDATE run_events SET published = 1 WHERE run_id = ? AND direction = 'out' AND event_id = ?",
                [(run_id, i) for i in event_ids],
            )

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
        if status:
            where.append("status = ?")
            params.append(status)
        if workflow:
            where.append("workflow = ?")
            params.append(workflow)
        if id_contains:
            where.append(f"run_id {self._like} ? ESCAPE '\\'")
            params.append(f"%{_like(id_contains)}%")
        if text:
            # The inputs too: a thousand runs of one workflow differ only by them.
            where.append(
                "("
                + " OR ".join(
                    f"{c} {self._like} ? ESCAPE '\\'" for c in ("run_id", "workflow", "state", "error", "inputs")
                )
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
