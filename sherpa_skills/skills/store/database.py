"""The skill store's truth: procedures and their versions, executions, learnings — in the home's store.db, or in the
PostgreSQL database several machines share (`--database`, SHERPA_SKILLS_DATABASE).

Counts change only inside write transactions with `count = count + 1`, and a write that reads a procedure before it
changes it locks the row first (`_locked`), so any number of processes recording outcomes at once never lose an update.
A write returns the procedure as it left it (read inside its transaction, before another machine's next write).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ...db.connection import Connection, dialect_of
from ...db.sql import greatest
from ...db.url import database_url, describe
from ...errors import StoreError
from ...home import store_path
from ...sqlite_db import Transaction, connect, execute_script, migrate, prefix_matches
from .models import (
    STORED,
    CapturedLearning,
    CapturedProcedure,
    Claim,
    ClaimSource,
    Execution,
    ProcedureHealthReport,
    ProcedureStep,
    RecordedDecision,
)
from .params import PARAMETER
from .scoring import PROVEN_SQL, REPLAY_THRESHOLD, confidence, health_report


def m001_skills(conn: sqlite3.Connection) -> None:
    execute_script(
        conn,
        """
        CREATE TABLE procedures (
            id TEXT PRIMARY KEY, task_type TEXT NOT NULL, description TEXT NOT NULL, source TEXT NOT NULL,
            tags TEXT NOT NULL, version INTEGER NOT NULL, status TEXT NOT NULL,
            needs_relearning INTEGER NOT NULL DEFAULT 0,
            success_count INTEGER NOT NULL DEFAULT 0, failure_count INTEGER NOT NULL DEFAULT 0,
            signature TEXT NOT NULL, steps TEXT NOT NULL, preconditions TEXT NOT NULL, postconditions TEXT NOT NULL,
            context TEXT NOT NULL, planned_tokens INTEGER NOT NULL DEFAULT 0,
            planned_llm_calls INTEGER NOT NULL DEFAULT 0,
            created REAL NOT NULL, updated REAL NOT NULL);
        CREATE INDEX procedures_signature ON procedures (signature);
        CREATE INDEX procedures_task_type ON procedures (task_type);
        CREATE TABLE procedure_versions (
            procedure_id TEXT NOT NULL REFERENCES procedures (id) ON DELETE CASCADE, version INTEGER NOT NULL,
            signature TEXT NOT NULL, steps TEXT NOT NULL, preconditions TEXT NOT NULL, postconditions TEXT NOT NULL,
            context TEXT NOT NULL, source TEXT NOT NULL, planned_tokens INTEGER NOT NULL,
            planned_llm_calls INTEGER NOT NULL,
            success_count INTEGER NOT NULL DEFAULT 0, failure_count INTEGER NOT NULL DEFAULT 0, created REAL NOT NULL,
            PRIMARY KEY (procedure_id, version));
        CREATE TABLE executions (
            id INTEGER PRIMARY KEY, procedure_id TEXT NOT NULL, version INTEGER NOT NULL, started REAL NOT NULL,
            ended REAL NOT NULL, outcome TEXT NOT NULL, diverged_step INTEGER, reason TEXT, tokens INTEGER NOT NULL,
            llm_calls INTEGER NOT NULL, run_id TEXT);
        CREATE INDEX executions_procedure ON executions (procedure_id, version, id);
        CREATE TABLE learnings (
            id INTEGER PRIMARY KEY, task_type TEXT, procedure_id TEXT, command TEXT NOT NULL, error TEXT NOT NULL,
            exit_code INTEGER, source TEXT NOT NULL, created REAL NOT NULL);
        CREATE INDEX learnings_task ON learnings (task_type, id);
        CREATE TABLE skill_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
        INSERT INTO skill_meta (key, value) VALUES ('generation', 0);
    """,
    )
    if dialect_of(conn) == "sqlite":  # PostgreSQL searches the procedures' own columns (see `fts_search`)
        conn.execute(_FTS_TABLE)


_FTS_TABLE = """CREATE VIRTUAL TABLE procedures_fts USING fts5(procedure_id UNINDEXED, task_type, description, tags,
    commands, tokenize = 'unicode61 remove_diacritics 2')"""


def m002_fts_by_rowid(conn: sqlite3.Connection) -> None:
    """FTS rows keyed by the procedure's rowid: deleting one by an UNINDEXED column scanned the whole table."""
    if dialect_of(conn) == "postgresql":  # no FTS table there
        return
    conn.execute("DROP TABLE procedures_fts")
    conn.execute(_FTS_TABLE)
    fill_fts(conn)


def fill_fts(conn: Connection) -> None:
    """SQLite's full-text rows made again from the procedures (a store copied from PostgreSQL has none)."""
    conn.execute("DELETE FROM procedures_fts")
    for rowid, pid, task_type, description, tags, steps in conn.execute(
        "SELECT rowid, id, task_type, description, tags, steps FROM procedures"
    ).fetchall():
        conn.execute(
            "INSERT INTO procedures_fts (rowid, procedure_id, task_type, description, tags, commands) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (
                rowid,
                pid,
                _fts_words(task_type),
                description,
                " ".join(json.loads(tags)),
                " ".join(step["command"] for step in json.loads(steps)),
            ),
        )


def learning_key(task_type: str | None, command: str, error: str) -> str:
    """Two learnings are the same lesson when the task, the command and the error agree, spacing aside."""
    norm = "\x1f".join([task_type or "", _SPACE.sub(" ", command.strip()), _SPACE.sub(" ", error.strip())])
    return hashlib.sha256(norm.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def m003_learnings_dedup(conn: sqlite3.Connection) -> None:
    """Learnings count repeats (`seen`, `last_seen`) instead of piling up copies; existing copies are folded into
    their oldest row."""
    execute_script(
        conn,
        """
        ALTER TABLE learnings ADD COLUMN key TEXT;
        ALTER TABLE learnings ADD COLUMN seen INTEGER NOT NULL DEFAULT 1;
        ALTER TABLE learnings ADD COLUMN last_seen REAL;
    """,
    )
    first: dict[str, int] = {}
    for rowid, task_type, command, error, created in conn.execute(
        "SELECT id, task_type, command, error, created FROM learnings ORDER BY id"
    ).fetchall():
        key = learning_key(task_type, command, error)
        if key in first:
            conn.execute(
                "UPDATE learnings SET seen = seen + 1, last_seen = MAX(COALESCE(last_seen, created), ?) WHERE id = ?",
                (created, first[key]),
            )
            conn.execute("DELETE FROM learnings WHERE id = ?", (rowid,))
        else:
            first[key] = rowid
            conn.execute("UPDATE learnings SET key = ?, last_seen = created WHERE id = ?", (key, rowid))
    conn.execute("CREATE UNIQUE INDEX learnings_key ON learnings (key)")


def m004_one_procedure_per_signature(conn: sqlite3.Connection) -> None:
    """The same steps are one procedure per task type; duplicates made before this keep a marked signature."""
    conn.execute(
        "UPDATE procedures SET signature = signature || '~' || rowid WHERE rowid NOT IN"
        " (SELECT MIN(rowid) FROM procedures GROUP BY task_type, signature)"
    )
    execute_script(conn, "CREATE UNIQUE INDEX procedures_task_signature ON procedures (task_type, signature);")


def m005_trajectory_procedures(conn: sqlite3.Connection) -> None:
    """Procedures of a workflow's decisions beside shell ones: every existing row is a shell procedure."""
    execute_script(
        conn,
        """
        ALTER TABLE procedures ADD COLUMN kind TEXT NOT NULL DEFAULT 'shell';
        ALTER TABLE procedures ADD COLUMN decisions TEXT NOT NULL DEFAULT '[]';
        ALTER TABLE procedure_versions ADD COLUMN decisions TEXT NOT NULL DEFAULT '[]';
    """,
    )


def m006_learning_about(conn: sqlite3.Connection) -> None:
    """What a failed command was for (the agent's description, the task, its folder): what a task finds it by."""
    execute_script(conn, "ALTER TABLE learnings ADD COLUMN about TEXT NOT NULL DEFAULT '';")


def m007_promotions(conn: sqlite3.Connection) -> None:
    """Every promotion: who and when, and where it opened the version's fresh evidence window (executions after
    `after_execution` count towards health), with the counts and health it left behind."""
    execute_script(
        conn,
        """
        CREATE TABLE promotions (
            id INTEGER PRIMARY KEY, procedure_id TEXT NOT NULL, version INTEGER NOT NULL, promoted_at REAL NOT NULL,
            promoted_by TEXT NOT NULL, after_execution INTEGER NOT NULL, status_before TEXT NOT NULL,
            health_before TEXT NOT NULL,
            success_before INTEGER NOT NULL, failure_before INTEGER NOT NULL, executions_before INTEGER NOT NULL);
        CREATE INDEX promotions_procedure ON promotions (procedure_id, version, id);
    """,
    )


def m008_aliases(conn: sqlite3.Connection) -> None:
    """Answers a judge gave to `needs-confirmation`: a confirmed wording becomes an alias of the procedure (its
    redacted, parametrised text, folded key words, and vector: derived, re-embedded when missing), a refused pair is
    remembered. `scope` is the task type the match was limited to ('' for none): an answer holds only there."""
    execute_script(
        conn,
        """
        CREATE TABLE aliases (
            id INTEGER PRIMARY KEY, procedure_id TEXT NOT NULL, task_type TEXT NOT NULL, scope TEXT NOT NULL,
            text TEXT NOT NULL, key TEXT NOT NULL, confirmed_by TEXT NOT NULL, created REAL NOT NULL,
            vector BLOB, embedder TEXT);
        CREATE UNIQUE INDEX aliases_unique ON aliases (procedure_id, scope, key);
        CREATE TABLE rejections (
            id INTEGER PRIMARY KEY, procedure_id TEXT NOT NULL, scope TEXT NOT NULL, text TEXT NOT NULL,
            key TEXT NOT NULL, rejected_by TEXT NOT NULL, created REAL NOT NULL);
        CREATE UNIQUE INDEX rejections_unique ON rejections (key, scope, procedure_id);
        INSERT INTO skill_meta (key, value) VALUES ('answers', 0) ON CONFLICT DO NOTHING;
    """,
    )


def m009_decision_examples(conn: sqlite3.Connection) -> None:
    """The decision memory (skills/decide/): every decision a workflow's LLM took, as a labelled example of its
    (workflow, state) — what the decision saw (features, the path of decisions before it, the task's wording and
    vector) and what it chose (trigger, parametrised arguments) — and the branches a procedure's runs took when an
    exception made them leave it (a branch is not a new version: the routine stays the procedure)."""
    execute_script(
        conn,
        """
        CREATE TABLE decision_examples (
            id INTEGER PRIMARY KEY, workflow TEXT NOT NULL, state TEXT NOT NULL, trigger TEXT NOT NULL,
            args TEXT NOT NULL, features TEXT NOT NULL, path TEXT NOT NULL, task TEXT NOT NULL,
            vector BLOB, embedder TEXT, run_id TEXT, created REAL NOT NULL);
        CREATE INDEX decision_examples_at ON decision_examples (workflow, id);
        CREATE TABLE procedure_branches (
            procedure_id TEXT NOT NULL, signature TEXT NOT NULL, step INTEGER, state TEXT, reason TEXT NOT NULL,
            decisions TEXT NOT NULL, runs INTEGER NOT NULL, first_run TEXT, last_run TEXT, first_seen REAL NOT NULL,
            last_seen REAL NOT NULL, PRIMARY KEY (procedure_id, signature));
    """,
    )


def m010_evidence_sources(conn: sqlite3.Connection) -> None:
    """Counts remember their source (docs: "Evidence has a source"). What a home counted before is kept and marked
    legacy — an upgraded home replays what it replayed — except a candidate's counts (mining support, an agent's
    reports, an import's numbers), which become what they always were: claims. `claims` keeps each claim, who made it;
    `proven` marks a version whose counted confidence reached the replay threshold or that a person promoted (from
    then on its health alone decides)."""
    execute_script(
        conn,
        """
        ALTER TABLE procedures ADD COLUMN claimed_successes INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE procedures ADD COLUMN claimed_failures INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE procedures ADD COLUMN legacy_successes INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE procedures ADD COLUMN legacy_failures INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE procedures ADD COLUMN proven INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE claims (
            id INTEGER PRIMARY KEY, procedure_id TEXT NOT NULL, version INTEGER NOT NULL, source TEXT NOT NULL,
            claimed_by TEXT NOT NULL, successes INTEGER NOT NULL, failures INTEGER NOT NULL, note TEXT,
            created REAL NOT NULL);
        CREATE INDEX claims_procedure ON claims (procedure_id, id);
        UPDATE procedures SET legacy_successes = success_count, legacy_failures = failure_count
            WHERE status = 'active';
        UPDATE procedures SET claimed_successes = success_count, claimed_failures = failure_count, success_count = 0,
            failure_count = 0 WHERE status != 'active';
        UPDATE procedure_versions SET success_count = 0, failure_count = 0
            WHERE procedure_id IN (SELECT id FROM procedures WHERE status != 'active');
        UPDATE procedures SET proven = 1 WHERE status = 'active' AND (EXISTS (SELECT 1 FROM promotions m
            WHERE m.procedure_id = procedures.id AND m.version = procedures.version)
            OR success_count >= 4 * (failure_count + 0.4));
    """,
    )


def m011_calibrated_decisions(conn: sqlite3.Connection) -> None:
    """The decision memory's calibration (skills/decide/head.py): each example keeps the head's score when the memory
    abstained there and whether its guess was the model's decision (a calibration point), and what the model's
    decision cost; an answer later contradicted is a wrong point; each run's answered decisions are counted with the
    tokens they are estimated to have saved."""
    execute_script(
        conn,
        """
        ALTER TABLE decision_examples ADD COLUMN score REAL;
        ALTER TABLE decision_examples ADD COLUMN hit INTEGER;
        ALTER TABLE decision_examples ADD COLUMN tokens INTEGER;
        CREATE TABLE decision_errors (
            id INTEGER PRIMARY KEY, workflow TEXT NOT NULL, state TEXT NOT NULL, score REAL NOT NULL,
            why TEXT NOT NULL, created REAL NOT NULL);
        CREATE INDEX decision_errors_at ON decision_errors (workflow, id);
        CREATE TABLE decision_answers (
            id INTEGER PRIMARY KEY, workflow TEXT NOT NULL, run_id TEXT, answered INTEGER NOT NULL,
            tokens_saved INTEGER NOT NULL, created REAL NOT NULL);
    """,
    )


def m012_decision_snapshots(conn: sqlite3.Connection) -> None:
    """The decision memory's state per workflow, persisted (skills/decide/snapshot.py): a new process loads it at its
    first ask instead of rebuilding it from every example; `upto` and `examples` say which examples it stands for.
    A calibration point names the scorer that scored it: points of another scale never set a threshold."""
    execute_script(
        conn,
        """
        ALTER TABLE decision_examples ADD COLUMN scorer TEXT;
        ALTER TABLE decision_errors ADD COLUMN scorer TEXT;
        CREATE TABLE decision_snapshots (
            workflow TEXT PRIMARY KEY, stamp TEXT NOT NULL, upto INTEGER NOT NULL, errors_upto INTEGER NOT NULL,
            examples INTEGER NOT NULL, body BLOB NOT NULL, created REAL NOT NULL);
    """,
    )


def m013_trajectory_paths(conn: sqlite3.Connection) -> None:
    """One procedure per path: a trajectory's `path` is its decisions without its wording (`decision_signature` of its
    decisions alone), unique per task type, so a run of a known path in other words credits that procedure (and its
    wording becomes an alias) rather than making a twin. Twins made before keep their rows, counts and history; one of
    each group keeps the path (active, proven, most counted successes, oldest first) and the others a marked one, as
    m004 marked duplicate steps: merging them would move executions, branches and waiting runs' matches. An alias
    keeps the run its wording came from (`source`, `run:<run_id>`; none for those answered before). Signatures now
    read arguments by sorted key: those stored otherwise are recomputed (`_resign_trajectories`)."""
    execute_script(conn, "ALTER TABLE procedures ADD COLUMN path TEXT;\nALTER TABLE aliases ADD COLUMN source TEXT;")
    _resign_trajectories(conn)
    rows = conn.execute(
        "SELECT id, task_type, decisions, status, proven, success_count FROM procedures WHERE kind = 'trajectory'"
        " ORDER BY rowid"
    ).fetchall()
    kept: set[tuple[str, str]] = set()
    # Of each group of twins, the one that keeps the path (a new run of it credits that one): active, proven, most
    # counted successes, oldest.
    ranked = sorted(range(len(rows)), key=lambda i: (rows[i][3] != "active", not rows[i][4], -int(rows[i][5] or 0), i))
    for i in ranked:
        pid, task_type, decisions = rows[i][:3]
        path = path_of(stored_decisions(decisions))
        marked = path if (task_type, path) not in kept else f"{path}~{pid}"
        kept.add((task_type, path))
        conn.execute("UPDATE procedures SET path = ? WHERE id = ?", (marked, pid))
    execute_script(conn, "CREATE UNIQUE INDEX procedures_task_path ON procedures (task_type, path);")


def _resign_trajectories(conn: sqlite3.Connection) -> None:
    """Trajectory and branch signatures as `_trajectory_signature` computes them now (arguments by sorted key), so a
    run of the same decisions still finds them. A procedure keeps its `~` mark (m004); one whose new signature another
    of its task type already holds takes one; branches of one procedure that become one are merged, runs summed."""
    procs = conn.execute(
        "SELECT id, task_type, description, decisions, signature, rowid FROM procedures WHERE kind = 'trajectory'"
        " ORDER BY rowid"
    ).fetchall()
    held = {(r[1], r[4]) for r in procs}
    for pid, task_type, description, decisions, old, rowid in procs:
        _, tilde, mark = str(old).partition("~")
        new = path_of(stored_decisions(decisions), description or "") + tilde + mark
        if new == old:
            continue
        if (task_type, new) in held:
            new = f"{new.partition('~')[0]}~{rowid}"
        held.discard((task_type, old))
        held.add((task_type, new))
        conn.execute("UPDATE procedures SET signature = ? WHERE id = ?", (new, pid))
    groups: dict[tuple[str, str], list[tuple[str, int, str, float]]] = {}
    for pid, old, decisions, runs, last_run, last_seen in conn.execute(
        "SELECT procedure_id, signature, decisions, runs, last_run, last_seen FROM procedure_branches"
        " ORDER BY procedure_id, first_seen"
    ).fetchall():
        groups.setdefault((pid, path_of(stored_decisions(decisions))), []).append((old, runs, last_run, last_seen))
    for (pid, new), found in groups.items():
        # The row already signed so stays (nothing to rename onto it); else the first seen.
        keep = next((r for r in found if r[0] == new), found[0])
        for old, runs, last_run, last_seen in (r for r in found if r is not keep):
            conn.execute("DELETE FROM procedure_branches WHERE procedure_id = ? AND signature = ?", (pid, old))
            conn.execute(
                "UPDATE procedure_branches SET runs = runs + ?,"
                " last_run = CASE WHEN last_seen < ? THEN ? ELSE last_run END,"
                " last_seen = CASE WHEN last_seen < ? THEN ? ELSE last_seen END"
                " WHERE procedure_id = ? AND signature = ?",
                (runs, last_seen, last_run, last_seen, last_seen, pid, keep[0]),
            )
        if keep[0] != new:
            conn.execute(
                "UPDATE procedure_branches SET signature = ? WHERE procedure_id = ? AND signature = ?",
                (new, pid, keep[0]),
            )


MIGRATIONS = [
    m001_skills,
    m002_fts_by_rowid,
    m003_learnings_dedup,
    m004_one_procedure_per_signature,
    m005_trajectory_procedures,
    m006_learning_about,
    m007_promotions,
    m008_aliases,
    m009_decision_examples,
    m010_evidence_sources,
    m011_calibrated_decisions,
    m012_decision_snapshots,
    m013_trajectory_paths,
]


def current_user() -> str:
    """Who runs this process, for records of who did what (a promotion); 'unknown' when the OS cannot say."""
    import getpass

    try:
        return getpass.getuser()
    except Exception:  # no USER/LOGNAME and no passwd entry (some containers)
        return "unknown"


def _fts_words(task_type: str) -> str:
    return task_type.replace("-", " ").replace("_", " ")


_SPACE = re.compile(r"\s+")


def step_signature(steps: list[ProcedureStep]) -> str:
    """Steps compare equal when their commands do, ignoring spacing and parameter names."""
    normal = "\n".join(PARAMETER.sub("{{}}", _SPACE.sub(" ", s.command.strip())) for s in steps)
    return hashlib.sha256(normal.encode()).hexdigest()[:24]


def _trajectory_signature(description: str, decisions: Iterable[tuple[Any, Any, Any]]) -> str:
    # Arguments by sorted key: a model that names them in another order took the same decision. Compact, as signatures
    # stored before were: arguments given in sorted order keep their stored signature.
    said = (f"{state} {trigger} {_dump(args, sort_keys=True)}" for state, trigger, args in decisions)
    normal = "\n".join([_SPACE.sub(" ", description.strip().lower()), *said])
    return "t:" + hashlib.sha256(normal.encode()).hexdigest()[:22]


def decision_signature(decisions: list[RecordedDecision], description: str = "") -> str:
    """Trajectories compare equal when their task text, states, triggers and (parametrised) arguments do. Without a
    description it is the trajectory's **path**: the states its policy decided in, the triggers it took and their
    arguments as templates of the inputs (an order number is `{{ order }}`) — not who decided (an LLM, a rule, a
    replay), not the action outcomes or checks around them, not the task's wording."""
    return _trajectory_signature(description, ((d.state, d.trigger, d.args) for d in decisions))


def path_of(decisions: list[dict[str, Any]], description: str = "") -> str:
    """`decision_signature(decisions, description)` of decisions as stored (JSON): what a migration reads without
    models."""
    return _trajectory_signature(
        description, ((d.get("state"), d.get("trigger"), d.get("args") or {}) for d in decisions)
    )


def stored_decisions(text: str | None) -> list[dict[str, Any]]:
    """Decisions as stored (JSON), read leniently for a migration: anything not a list of objects reads as none of
    it, since a store that cannot be upgraded cannot be opened."""
    try:
        found = json.loads(text or "[]")
    except ValueError:
        return []
    return [d for d in found if isinstance(d, dict)] if isinstance(found, list) else []


def path_signature(proc: CapturedProcedure) -> str | None:
    """A trajectory's path (unique per task type, `procedures.path`); None for shell steps."""
    return decision_signature(proc.decisions) if proc.kind == "trajectory" else None


def signature_of(proc: CapturedProcedure) -> str:
    return (
        decision_signature(proc.decisions, proc.description)
        if proc.kind == "trajectory"
        else step_signature(proc.steps)
    )


def _dump(value: Any, sort_keys: bool = False) -> str:
    return json.dumps(value, separators=(",", ":"), default=str, sort_keys=sort_keys)


_PROC_COLUMNS = (
    "id, task_type, description, source, tags, version, status, needs_relearning, success_count, failure_count, "
    "steps, preconditions, postconditions, context, planned_tokens, planned_llm_calls, created, "
    "updated, kind, decisions, claimed_successes, claimed_failures, legacy_successes, legacy_failures, proven"
)


def _procedure(row: tuple[Any, ...]) -> CapturedProcedure:
    (
        pid,
        task_type,
        description,
        source,
        tags,
        version,
        status,
        needs,
        s,
        f,
        steps,
        pre,
        post,
        ctx,
        ptok,
        pcalls,
        created,
        updated,
        kind,
        decisions,
        claimed_s,
        claimed_f,
        legacy_s,
        legacy_f,
        proven,
    ) = row
    return CapturedProcedure(
        id=pid,
        task_type=task_type,
        description=description,
        source=source,
        tags=json.loads(tags),
        version=version,
        status=status,
        needs_relearning=bool(needs),
        success_count=s,
        failure_count=f,
        confidence=confidence(s, f),
        steps=[ProcedureStep.model_validate(x, context=STORED) for x in json.loads(steps)],
        preconditions=json.loads(pre),
        postconditions=json.loads(post),
        context=json.loads(ctx),
        planned_tokens=ptok,
        planned_llm_calls=pcalls,
        created=created,
        updated=updated,
        kind=kind,
        decisions=[RecordedDecision(**d) for d in json.loads(decisions)],
        claimed_successes=claimed_s,
        claimed_failures=claimed_f,
        legacy_successes=legacy_s,
        legacy_failures=legacy_f,
        proven=bool(proven),
    )


_LEARNING_COLUMNS = "id, task_type, procedure_id, command, error, exit_code, source, created, seen, last_seen, about"


def _learning(r: tuple[Any, ...]) -> CapturedLearning:
    return CapturedLearning(
        id=r[0],
        task_type=r[1],
        procedure_id=r[2],
        command=r[3],
        error=r[4],
        exit_code=r[5],
        source=r[6],
        created=r[7],
        seen=r[8],
        last_seen=r[9],
        about=r[10],
    )


class ProcedureDatabase:
    """Procedures, executions and learnings; safe to open from many processes (and machines) at once. store.db in the
    home folder, or the PostgreSQL database `database` (else SHERPA_SKILLS_DATABASE) names; the home keeps what is
    local either way (the matching index)."""

    def __init__(self, path: str | Path | None = None, *, home: str | Path | None = None, database: str | None = None):
        url = None if path else database_url(database)
        self.path = Path(path) if path else store_path(home)
        self.conn: Connection
        if url is not None:
            from ...db.migrations import connect_migrated

            self.where = describe(url)
            self.conn = connect_migrated(url, "skills", MIGRATIONS)
        else:
            self.where = str(self.path)
            lite = connect(self.path)
            migrate(lite, "skills", MIGRATIONS)
            self.conn = lite
        self.dialect = dialect_of(self.conn)
        self._lock = threading.RLock()
        self._identity: int | None = None

    def close(self) -> None:
        self.conn.close()

    # ------------------------------------------------------------------ transactions

    def _write(self) -> Transaction:
        return Transaction(self.conn, self._lock)  # type: ignore[arg-type]  # a PgConnection speaks as sqlite3's

    def _locked(self, procedure_id: str) -> CapturedProcedure:
        """The procedure as it is now, its row locked until the write transaction ends: what a write that reads before
        it changes takes first. SQLite's BEGIN IMMEDIATE already holds the whole store; PostgreSQL's BEGIN locks rows
        only as they are written, so two machines would both read the old counts."""
        proc = self.get(procedure_id)
        if self.dialect == "postgresql":
            self.conn.execute("SELECT 1 FROM procedures WHERE id = ? FOR UPDATE", (proc.id,))
            proc = self.get(proc.id)  # as the transaction that held the lock left it
        return proc

    def generation(self) -> int:
        """Bumped whenever what matching looks at changes; caches compare it."""
        return int(self.conn.execute("SELECT value FROM skill_meta WHERE key = 'generation'").fetchone()[0])

    def identity(self) -> int:
        """A random number fixed for this store's lifetime: a derived file (the matching index) names the store it
        was built from, so a file copied from another home is never taken for this one's."""
        if self._identity is None:
            row = self.conn.execute("SELECT value FROM skill_meta WHERE key = 'identity'").fetchone()
            if row is None:
                with self._write():
                    self.conn.execute(
                        "INSERT INTO skill_meta (key, value) VALUES ('identity', ?) ON CONFLICT DO NOTHING",
                        (random.getrandbits(62),),
                    )
                row = self.conn.execute("SELECT value FROM skill_meta WHERE key = 'identity'").fetchone()
            self._identity = int(row[0])
        return self._identity

    def _bump(self) -> None:
        self.conn.execute("UPDATE skill_meta SET value = value + 1 WHERE key = 'generation'")

    def _index_fts(self, p: CapturedProcedure) -> None:
        if self.dialect == "postgresql":  # searched in the procedures' own columns
            return
        rowid = self.conn.execute("SELECT rowid FROM procedures WHERE id = ?", (p.id,)).fetchone()[0]
        self.conn.execute("DELETE FROM procedures_fts WHERE rowid = ?", (rowid,))
        self.conn.execute(
            "INSERT INTO procedures_fts (rowid, procedure_id, task_type, description, tags, commands) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (
                rowid,
                p.id,
                _fts_words(p.task_type),
                p.description,
                " ".join(p.tags),
                " ".join(s.command for s in p.steps),
            ),
        )

    # ------------------------------------------------------------------ procedures

    def add_procedure(self, proc: CapturedProcedure) -> CapturedProcedure:
        """Store a new procedure (version 1, or the version it carries, for imports); the same steps under the same
        task type are never stored twice: that insert counts a success of the stored procedure instead."""
        return self.insert_or_credit(proc)[0]

    def insert_or_credit(self, proc: CapturedProcedure) -> tuple[CapturedProcedure, bool]:
        """(procedure, inserted): one statement decides, so concurrent first captures of the same steps — for a
        trajectory, of the same path in any words (`decision_signature`) — make one row; the others credit it.
        The counts `proc` carries are counted evidence: only what this store observed comes here (`add_candidate`
        takes the rest)."""
        return self._insert(proc, None)

    def add_candidate(
        self,
        proc: CapturedProcedure,
        source: ClaimSource,
        by: str,
        *,
        successes: int = 0,
        failures: int = 0,
        note: str | None = None,
    ) -> tuple[CapturedProcedure, bool]:
        """(procedure, inserted): steps this store did not see work — an agent's capture, a mined routine, an import —
        stored as a candidate with no counted evidence, whatever `proc` says; what it claims (`successes`,
        `failures`) is kept as a claim by `by`. The same steps already stored gain that claim, never a success."""
        candidate = proc.model_copy(
            update={
                "status": "candidate",
                "success_count": 0,
                "failure_count": 0,
                "proven": False,
            }
        )
        return self._insert(
            candidate,
            Claim(
                procedure_id="",
                version=0,
                source=source,
                claimed_by=by,
                successes=successes,
                failures=failures,
                note=note,
            ),
        )

    def _insert(self, proc: CapturedProcedure, claim: Claim | None) -> tuple[CapturedProcedure, bool]:
        now = time.time()
        pid = (
            proc.id
            or f"{re.sub(r'[^a-z0-9]+', '-', proc.task_type.lower()).strip('-')[:24] or 'proc'}-{uuid.uuid4().hex[:8]}"
        )
        proc = proc.model_copy(update={"id": pid, "created": proc.created or now, "updated": now})
        sig, path = signature_of(proc), path_signature(proc)
        steps = _dump([s.model_dump() for s in proc.steps])
        with self._write():
            if self.conn.execute("SELECT 1 FROM procedures WHERE id = ?", (pid,)).fetchone():
                raise StoreError(f"procedure '{pid}' already exists")
            # Either unique index decides (the same steps, or a trajectory's same path): one statement, so concurrent
            # first captures in other words make one procedure on either engine.
            cursor = self.conn.execute(
                f"INSERT INTO procedures ({_PROC_COLUMNS}, signature, path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (
                    pid,
                    proc.task_type,
                    proc.description,
                    proc.source,
                    _dump(proc.tags),
                    proc.version,
                    proc.status,
                    int(proc.needs_relearning),
                    proc.success_count,
                    proc.failure_count,
                    steps,
                    _dump(proc.preconditions),
                    _dump(proc.postconditions),
                    _dump(proc.context),
                    proc.planned_tokens,
                    proc.planned_llm_calls,
                    proc.created,
                    now,
                    proc.kind,
                    _dump([d.model_dump() for d in proc.decisions]),
                    0,  # claims arrive through add_claim, which keeps who made them
                    0,
                    0,  # legacy counts exist only in homes upgraded to sources (m010)
                    0,
                    int(confidence(proc.success_count, proc.failure_count) >= REPLAY_THRESHOLD),
                    sig,
                    path,
                ),
            )
            if cursor.rowcount == 0:
                twin = self.conn.execute(
                    "SELECT id FROM procedures WHERE task_type = ? AND (signature = ? OR path = ?)"
                    " ORDER BY CASE WHEN signature = ? THEN 0 ELSE 1 END LIMIT 1",
                    (proc.task_type, sig, path, sig),
                ).fetchone()
                if twin is None:  # the id itself, taken by another machine since the check above
                    raise StoreError(f"procedure '{pid}' already exists")
                existing = twin[0]
                if claim is None:
                    self._credit(existing)
                pid, inserted = existing, False
            else:
                self._insert_version(proc, sig, steps)
                self._index_fts(proc)
                self._bump()
                inserted = True
            if claim is not None and (claim.successes or claim.failures or claim.note):
                self._claim(pid, claim)
            return self.get(pid), inserted

    def add_claim(
        self,
        procedure_id: str,
        source: ClaimSource,
        by: str,
        *,
        successes: int = 0,
        failures: int = 0,
        note: str | None = None,
    ) -> CapturedProcedure:
        """Someone says the procedure worked (or failed) where this store did not see it: kept with who said it,
        shown beside the counts, never counted (confidence, health and replay read only what this store observed)."""
        with self._write():
            pid = self.get(procedure_id).id
            self._claim(
                pid,
                Claim(
                    procedure_id=pid,
                    version=0,
                    source=source,
                    claimed_by=by,
                    successes=successes,
                    failures=failures,
                    note=note,
                ),
            )
            return self.get(pid)

    def _claim(self, pid: str, claim: Claim) -> None:
        self.conn.execute(
            "INSERT INTO claims (procedure_id, version, source, claimed_by, successes, failures, note, created)"
            " VALUES (?, (SELECT version FROM procedures WHERE id = ?), ?, ?, ?, ?, ?, ?)",
            (
                pid,
                pid,
                claim.source,
                claim.claimed_by,
                max(0, claim.successes),
                max(0, claim.failures),
                claim.note,
                time.time(),
            ),
        )
        self.conn.execute(
            "UPDATE procedures SET claimed_successes = claimed_successes + ?, claimed_failures = claimed_failures + ?,"
            " updated = ? WHERE id = ?",
            (max(0, claim.successes), max(0, claim.failures), time.time(), pid),
        )

    def claims(self, procedure_id: str, limit: int = 50) -> list[Claim]:
        """The claims made about a procedure, newest first."""
        rows = self.conn.execute(
            "SELECT id, procedure_id, version, source, claimed_by, successes, failures, note, created FROM claims"
            " WHERE procedure_id = ? ORDER BY id DESC LIMIT ?",
            (procedure_id, limit),
        )
        return [
            Claim(
                id=r[0],
                procedure_id=r[1],
                version=r[2],
                source=r[3],
                claimed_by=r[4],
                successes=r[5],
                failures=r[6],
                note=r[7],
                created=r[8],
            )
            for r in rows
        ]

    def _insert_version(self, proc: CapturedProcedure, sig: str, steps: str) -> None:
        self.conn.execute(
            "INSERT INTO procedure_versions (procedure_id, version, signature, steps, preconditions, "
            "postconditions, context, source,"
            " planned_tokens, planned_llm_calls, success_count, failure_count, created, decisions)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                proc.id,
                proc.version,
                sig,
                steps,
                _dump(proc.preconditions),
                _dump(proc.postconditions),
                _dump(proc.context),
                proc.source,
                proc.planned_tokens,
                proc.planned_llm_calls,
                proc.success_count,
                proc.failure_count,
                time.time(),
                _dump([d.model_dump() for d in proc.decisions]),
            ),
        )

    def add_version(
        self,
        procedure_id: str,
        steps: list[ProcedureStep],
        *,
        source: str = "run",
        planned_tokens: int = 0,
        planned_llm_calls: int = 0,
        preconditions: list[str] | None = None,
        postconditions: list[str] | None = None,
        context: dict[str, Any] | None = None,
        decisions: list[RecordedDecision] | None = None,
    ) -> CapturedProcedure:
        """A re-learned procedure: the next version, seen succeeding once; older versions keep their history.
        A trajectory procedure's new version brings its `decisions` (its steps stay empty)."""
        with self._write():
            current = self._locked(procedure_id)
            proc = current.model_copy(
                update={
                    "version": current.version + 1,
                    "steps": steps,
                    "source": source,
                    "success_count": 1,
                    "failure_count": 0,
                    "proven": False,
                    "decisions": current.decisions if decisions is None else decisions,
                    "planned_tokens": planned_tokens,
                    "planned_llm_calls": planned_llm_calls,
                    "needs_relearning": False,
                    "preconditions": current.preconditions if preconditions is None else preconditions,
                    "postconditions": current.postconditions if postconditions is None else postconditions,
                    "context": current.context if context is None else context,
                }
            )
            sig = signature_of(proc)
            steps_json = _dump([s.model_dump() for s in steps])
            twin = self.conn.execute(
                "SELECT id FROM procedures WHERE task_type = ? AND signature = ? AND id != ?",
                (current.task_type, sig, current.id),
            ).fetchone()
            if twin:
                raise StoreError(f"the new steps of '{current.id}' repeat procedure '{twin[0]}' of the same task type")
            path = self._version_path(current, path_signature(proc))
            self.conn.execute(
                "UPDATE procedures SET version = ?, steps = ?, signature = ?, path = ?, source = ?, "
                "success_count = 1, failure_count = 0, claimed_successes = 0, claimed_failures = 0,"
                " legacy_successes = 0, legacy_failures = 0, proven = 0,"
                " planned_tokens = ?, planned_llm_calls = ?, needs_relearning = 0, preconditions = ?, "
                "postconditions = ?, context = ?, decisions = ?, updated = ? WHERE id = ?",
                (
                    proc.version,
                    steps_json,
                    sig,
                    path,
                    source,
                    planned_tokens,
                    planned_llm_calls,
                    _dump(proc.preconditions),
                    _dump(proc.postconditions),
                    _dump(proc.context),
                    _dump([d.model_dump() for d in proc.decisions]),
                    time.time(),
                    current.id,
                ),
            )
            self._insert_version(proc, sig, steps_json)
            self._index_fts(proc)
            self._bump()
            return self.get(procedure_id)

    def _version_path(self, current: CapturedProcedure, path: str | None) -> str | None:
        """The path a new version of `current` is stored under: its own, unless another procedure holds it — a twin
        from before paths were kept (m013) keeps its marked path; any other procedure's path is refused."""
        if path is None:
            return None
        holder = self.conn.execute(
            "SELECT id FROM procedures WHERE task_type = ? AND path = ? AND id != ?",
            (current.task_type, path, current.id),
        ).fetchone()
        if holder is None:
            return path
        own = self.conn.execute("SELECT path FROM procedures WHERE id = ?", (current.id,)).fetchone()[0]
        if own == f"{path}~{current.id}":
            return str(own)
        raise StoreError(f"the new decisions of '{current.id}' repeat the path of procedure '{holder[0]}'")

    def find_by_signature(self, signature: str, task_type: str | None = None) -> CapturedProcedure | None:
        """The procedure with these steps (of this task type, when given)."""
        sql, args = f"SELECT {_PROC_COLUMNS} FROM procedures WHERE signature = ?", [signature]
        if task_type is not None:
            sql, args = sql + " AND task_type = ?", [*args, task_type]
        row = self.conn.execute(sql + " ORDER BY rowid LIMIT 1", args).fetchone()
        return _procedure(row) if row else None

    def stamps(self, ids: list[str]) -> dict[str, tuple[int, float]]:
        """(version, updated) of these procedures, by exact id, in one light query: what a cache of rows checks."""
        found: dict[str, tuple[int, float]] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = self.conn.execute(
                f"SELECT id, version, updated FROM procedures WHERE id IN ({', '.join('?' * len(chunk))})", chunk
            )
            found.update((pid, (int(version), float(updated))) for pid, version, updated in rows)
        return found

    def get_many(self, ids: list[str]) -> dict[str, CapturedProcedure]:
        """The current versions of these procedures, by exact id, in one query; ids the store lacks are left out."""
        found: dict[str, CapturedProcedure] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = self.conn.execute(
                f"SELECT {_PROC_COLUMNS} FROM procedures WHERE id IN ({', '.join('?' * len(chunk))})", chunk
            )
            found.update((row[0], _procedure(row)) for row in rows)
        return found

    def get(self, procedure_id: str, version: int | None = None) -> CapturedProcedure:
        row = self.conn.execute(f"SELECT {_PROC_COLUMNS} FROM procedures WHERE id = ?", (procedure_id,)).fetchone()
        if row is None:
            near = prefix_matches(self.conn, "procedures", "id", procedure_id)
            if len(near) == 1:
                return self.get(near[0], version)
            if near:
                raise StoreError(
                    f"procedure id prefix '{procedure_id}' is ambiguous: "
                    f"{', '.join(near[:3])}{', …' if len(near) > 3 else ''}; give more characters"
                )
            raise StoreError(f"no procedure '{procedure_id}'; `sherpa-skills learn procedures` lists them")
        proc = _procedure(row)
        if version is None or version == proc.version:
            return proc
        v = self.conn.execute(
            "SELECT steps, preconditions, postconditions, context, source, planned_tokens, planned_llm_calls,"
            " success_count, failure_count, decisions FROM procedure_versions WHERE procedure_id = ? AND version = ?",
            (proc.id, version),
        ).fetchone()
        if v is None:
            raise StoreError(f"procedure '{proc.id}' has no version {version} (versions 1..{proc.version})")
        return proc.model_copy(
            update={
                "version": version,
                "steps": [ProcedureStep.model_validate(x, context=STORED) for x in json.loads(v[0])],
                "preconditions": json.loads(v[1]),
                "postconditions": json.loads(v[2]),
                "context": json.loads(v[3]),
                "source": v[4],
                "planned_tokens": v[5],
                "planned_llm_calls": v[6],
                "success_count": v[7],
                "failure_count": v[8],
                "confidence": confidence(v[7], v[8]),
                "proven": False,  # the flag is the current version's; an older one is read as history
                "decisions": [RecordedDecision(**d) for d in json.loads(v[9])],
            }
        )

    def versions(self, procedure_id: str) -> list[dict[str, Any]]:
        return [
            {"version": r[0], "source": r[1], "success_count": r[2], "failure_count": r[3], "created": r[4]}
            for r in self.conn.execute(
                "SELECT version, source, success_count, failure_count, created FROM procedure_versions"
                " WHERE procedure_id = ? ORDER BY version",
                (procedure_id,),
            )
        ]

    def procedures(self, task_type: str | None = None, status: str | None = None) -> list[CapturedProcedure]:
        sql = f"SELECT {_PROC_COLUMNS} FROM procedures WHERE 1=1"
        args: list[Any] = []
        if task_type:
            sql, args = sql + " AND task_type = ?", [*args, task_type]
        if status:
            sql, args = sql + " AND status = ?", [*args, status]
        return [_procedure(r) for r in self.conn.execute(sql + " ORDER BY updated DESC", args)]

    def iter_procedures(self, batch: int = 1000) -> Iterator[CapturedProcedure]:
        last = ""
        while True:
            rows = self.conn.execute(
                f"SELECT {_PROC_COLUMNS} FROM procedures WHERE id > ? ORDER BY id LIMIT ?", (last, batch)
            ).fetchall()
            if not rows:
                return
            for row in rows:
                yield _procedure(row)
            last = rows[-1][0]

    def index_rows(self, ids: list[str] | None = None) -> Iterator[tuple[str, str, str, list[str], list[str], str]]:
        """(id, task type, description, tags, commands, status) of every procedure not rejected (or of these), in
        insertion order: what the matching index is built from."""
        rows: Iterable[Any]
        if ids is None:
            rows = self.conn.execute(
                "SELECT id, task_type, description, tags, steps, status FROM procedures"
                " WHERE status != 'rejected' ORDER BY rowid"
            )
        else:
            rows = (
                row
                for start in range(0, len(ids), 500)
                for row in self.conn.execute(
                    "SELECT id, task_type, description, tags, steps, "
                    "status FROM procedures WHERE status != 'rejected' AND id IN"
                    f" ({', '.join('?' * len(ids[start : start + 500]))}) ORDER BY rowid",
                    ids[start : start + 500],
                )
            )
        for pid, task_type, description, tags, steps, status in rows:
            yield pid, task_type, description, json.loads(tags), [step["command"] for step in json.loads(steps)], status

    def success_replays(self, procedure_id: str) -> int:
        return int(
            self.conn.execute(
                "SELECT COUNT(*) FROM executions WHERE procedure_id = ? AND outcome = 'success'", (procedure_id,)
            ).fetchone()[0]
        )

    def count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM procedures").fetchone()[0])

    def record_success(self, procedure_id: str) -> CapturedProcedure:
        """Seen succeeding again (a capture or a mined session with the same steps): one more success, no duplicate."""
        with self._write():
            pid = self.get(procedure_id).id
            self._credit(pid)
            return self.get(pid)

    def _credit(self, pid: str) -> None:
        self.conn.execute(
            "UPDATE procedures SET success_count = success_count + 1, updated = ? WHERE id = ?", (time.time(), pid)
        )
        self.conn.execute(
            "UPDATE procedure_versions SET success_count = success_count + 1 WHERE procedure_id = ?"
            " AND version = (SELECT version FROM procedures WHERE id = ?)",
            (pid, pid),
        )
        self.conn.execute(f"UPDATE procedures SET proven = 1 WHERE id = ? AND proven = 0 AND {PROVEN_SQL}", (pid,))

    def promote(self, procedure_id: str, by: str | None = None) -> CapturedProcedure:
        """A person (`by`, else the OS user) vouches for the procedure as it is now: it becomes active, the promotion
        stands in for the second success (one alone is not proof; see `scoring.confidence`), its failures are forgiven,
        a mark for re-learning is cleared, and its health starts a fresh evidence window (`new`). What came before is
        kept: the executions, and the counts and health in the promotion's row (`promotions`)."""
        now = time.time()
        with self._write():
            proc = self._locked(procedure_id)
            pid = proc.id
            after, _ = self._evidence_start(pid, proc.version)
            health = self.health(pid)
            newest, closed = self.conn.execute(
                "SELECT COALESCE(MAX(id), 0), COUNT(CASE WHEN version = ? AND id > ? AND outcome != "
                "'dry-run' THEN 1 END) FROM executions WHERE procedure_id = ?",
                (proc.version, after, pid),
            ).fetchone()
            self.conn.execute(
                "INSERT INTO promotions (procedure_id, version, promoted_at, promoted_by, after_execution, "
                "status_before, health_before,"
                " success_before, failure_before, executions_before) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    pid,
                    proc.version,
                    now,
                    by or current_user(),
                    newest,
                    proc.status,
                    health.status,
                    proc.success_count,
                    proc.failure_count,
                    closed,
                ),
            )
            self.conn.execute(
                f"UPDATE procedures SET status = 'active', success_count = {greatest(self.dialect)}(success_count, 2),"
                " failure_count = 0, proven = 1,"
                " needs_relearning = 0, updated = ? WHERE id = ?",
                (now, pid),
            )
            self.conn.execute(
                f"UPDATE procedure_versions SET success_count = {greatest(self.dialect)}(success_count, 2),"
                " failure_count = 0 WHERE procedure_id = ? AND version = ?",
                (pid, proc.version),
            )
            self._bump()
            return self.get(pid)

    def promotions(self, procedure_id: str) -> list[dict[str, Any]]:
        """Every promotion of the procedure, oldest first: who, when, and what it left behind."""
        columns = (
            "version",
            "promoted_at",
            "promoted_by",
            "after_execution",
            "status_before",
            "health_before",
            "success_before",
            "failure_before",
            "executions_before",
        )
        rows = self.conn.execute(
            f"SELECT {', '.join(columns)} FROM promotions WHERE procedure_id = ? ORDER BY id", (procedure_id,)
        )
        return [dict(zip(columns, row, strict=True)) for row in rows]

    def _evidence_start(self, procedure_id: str, version: int) -> tuple[int, float | None]:
        """(execution id after which executions count, when that window opened):
        the version's last promotion, else (0, None)."""
        row = self.conn.execute(
            "SELECT after_execution, promoted_at FROM promotions WHERE procedure_id = ? AND version = ?"
            " ORDER BY id DESC LIMIT 1",
            (procedure_id, version),
        ).fetchone()
        return (int(row[0]), float(row[1])) if row else (0, None)

    def set_status(self, procedure_id: str, status: str) -> CapturedProcedure:
        with self._write():
            pid = self.get(procedure_id).id
            self.conn.execute("UPDATE procedures SET status = ?, updated = ? WHERE id = ?", (status, time.time(), pid))
            self._bump()
            return self.get(pid)

    def update_mined(self, procedure_id: str, context: dict[str, Any], claimed_successes: int) -> CapturedProcedure:
        """A mined candidate seen again: its support, parameter examples and the successes the logs show, as mining
        now counts them (claims: session logs are not this store's evidence)."""
        with self._write():
            proc = self._locked(procedure_id)
            merged = {**proc.context, **context}
            self.conn.execute(
                "UPDATE procedures SET context = ?, claimed_successes = ?, updated = ? WHERE id = ?",
                (_dump(merged), claimed_successes, time.time(), proc.id),
            )
            self._bump()
            return self.get(proc.id)

    def mark_needs_relearning(self, procedure_id: str, flag: bool = True) -> None:
        with self._write():
            self.conn.execute(
                "UPDATE procedures SET needs_relearning = ?, updated = ? WHERE id = ?",
                (int(flag), time.time(), procedure_id),
            )

    # ------------------------------------------------------------------ executions

    def record_execution(self, execution: Execution) -> Execution:
        """The execution row and the count it changes, in one transaction; dry runs change no count."""
        column = {"success": "success_count", "diverged": "failure_count", "error": "failure_count"}.get(
            execution.outcome
        )
        with self._write():
            row = self.conn.execute(
                "INSERT INTO executions (procedure_id, version, started, ended, outcome, diverged_step, "
                "reason, tokens, llm_calls, run_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (
                    execution.procedure_id,
                    execution.version,
                    execution.started,
                    execution.ended,
                    execution.outcome,
                    execution.diverged_step,
                    execution.reason,
                    execution.tokens,
                    execution.llm_calls,
                    execution.run_id,
                ),
            ).fetchone()
            if column:
                self.conn.execute(
                    f"UPDATE procedures SET {column} = {column} + 1, updated = ? WHERE id = ? AND version = ?",
                    (time.time(), execution.procedure_id, execution.version),
                )
                self.conn.execute(
                    f"UPDATE procedure_versions SET {column} = {column} + 1 WHERE procedure_id = ? AND version = ?",
                    (execution.procedure_id, execution.version),
                )
                if execution.outcome == "success":  # a validated replay may be the one that proves it
                    self.conn.execute(
                        "UPDATE procedures SET proven = 1 WHERE id = ? AND version = ? AND proven = 0"
                        f" AND {PROVEN_SQL}",
                        (execution.procedure_id, execution.version),
                    )
        return execution.model_copy(update={"id": row[0]})

    def executions(
        self, procedure_id: str, version: int | None = None, limit: int | None = None, after: int = 0
    ) -> list[Execution]:
        """Newest first; `after` an execution id, only those recorded after it."""
        sql = (
            "SELECT id, procedure_id, version, started, ended, outcome, diverged_step, reason, "
            "tokens, llm_calls, run_id FROM executions WHERE procedure_id = ? AND id > ?"
        )
        args: list[Any] = [procedure_id, after]
        if version is not None:
            sql, args = sql + " AND version = ?", [*args, version]
        sql += " ORDER BY id DESC"
        if limit:
            sql, args = sql + " LIMIT ?", [*args, limit]
        return [
            Execution(
                id=r[0],
                procedure_id=r[1],
                version=r[2],
                started=r[3],
                ended=r[4],
                outcome=r[5],
                diverged_step=r[6],
                reason=r[7],
                tokens=r[8],
                llm_calls=r[9],
                run_id=r[10],
            )
            for r in self.conn.execute(sql, args)
        ]

    def health(self, procedure_id: str, window: int = 10, version: int | None = None) -> ProcedureHealthReport:
        """Over the last `window` real executions of the current version (or of `version`) since its last promotion;
        `total_executions` and `last_failure` cover the version's whole history."""
        proc = self.get(procedure_id, version)
        after, since = self._evidence_start(proc.id, proc.version)
        recent = [
            e for e in self.executions(proc.id, proc.version, limit=window * 3, after=after) if e.outcome != "dry-run"
        ][:window]
        report = health_report(proc.id, recent, proc.needs_relearning, window, since)
        total, last_failure = self.conn.execute(
            "SELECT COUNT(*), MAX(CASE WHEN outcome IN ('diverged', 'error') THEN ended END) FROM executions"
            " WHERE procedure_id = ? AND version = ? AND outcome != 'dry-run'",
            (proc.id, proc.version),
        ).fetchone()
        return report.model_copy(update={"total_executions": total, "last_failure": last_failure})

    def delete_executions_before(self, cutoff: float, keep_per_procedure: int = 50) -> int:
        """Retention: drop old executions but always keep each procedure's newest ones (health needs them)."""
        with self._write():
            cursor = self.conn.execute(
                "DELETE FROM executions WHERE ended < ? AND id NOT IN (SELECT id FROM (SELECT id, ROW_NUMBER() OVER"
                " (PARTITION BY procedure_id ORDER BY id DESC) AS n FROM executions) AS ranked WHERE n <= ?)",
                (cutoff, keep_per_procedure),
            )
        return cursor.rowcount

    # ------------------------------------------------------------------ learnings

    def add_learning(self, learning: CapturedLearning) -> CapturedLearning:
        """Store a learning; the same lesson again (task, command, error)
        raises the stored one's `seen` and `last_seen`."""
        now = learning.created or time.time()
        key = learning_key(learning.task_type, learning.command, learning.error)
        with self._write():
            row = self.conn.execute(
                "INSERT INTO learnings (task_type, procedure_id, command, error, exit_code, source, created, "
                "key, seen, last_seen, about)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET"
                " seen = learnings.seen + excluded.seen,"
                f" last_seen = {greatest(self.dialect)}(learnings.last_seen, excluded.last_seen)"
                " RETURNING id, seen, last_seen, created, about",
                (
                    learning.task_type,
                    learning.procedure_id,
                    learning.command,
                    learning.error,
                    learning.exit_code,
                    learning.source,
                    now,
                    key,
                    max(1, learning.seen),
                    learning.last_seen or now,
                    learning.about,
                ),
            ).fetchone()
        # The same lesson keeps the context it was first learned with: that is the text its vector was made from.
        return learning.model_copy(
            update={"id": row[0], "seen": row[1], "last_seen": row[2], "created": row[3], "about": row[4]}
        )

    def learnings(self, task_type: str | None = None, limit: int = 50) -> list[CapturedLearning]:
        sql, args = f"SELECT {_LEARNING_COLUMNS} FROM learnings", []
        if task_type:
            sql, args = sql + " WHERE task_type = ?", [task_type]
        rows = self.conn.execute(sql + " ORDER BY COALESCE(last_seen, created) DESC, id DESC LIMIT ?", [*args, limit])
        return [_learning(r) for r in rows]

    def learnings_by_id(self, ids: list[int]) -> dict[int, CapturedLearning]:
        """These learnings (ids the store does not hold are left out)."""
        found: dict[int, CapturedLearning] = {}
        for start in range(0, len(ids), 500):
            chunk = [int(i) for i in ids[start : start + 500]]
            rows = self.conn.execute(
                f"SELECT {_LEARNING_COLUMNS} FROM learnings WHERE id IN ({','.join('?' * len(chunk))})", chunk
            )
            found.update({r[0]: _learning(r) for r in rows})
        return found

    def learning_rows(self) -> Iterator[tuple[int, str | None, str, str]]:
        """(id, task type, about, command) of every learning, without building models:
        what finding learnings indexes."""
        yield from self.conn.execute("SELECT id, task_type, about, command FROM learnings ORDER BY id")

    def learnings_version(self) -> tuple[int, int]:
        """(count, newest id): changes whenever a learning is added (a lesson seen again changes no text);
        caches compare it."""
        count, newest = self.conn.execute("SELECT COUNT(*), COALESCE(MAX(id), 0) FROM learnings").fetchone()
        return int(count), int(newest)

    # ------------------------------------------------------------------ lexical search

    def fts_search(self, query: str, limit: int = 10) -> list[tuple[str, float]]:
        """Full-text search over task type, description, tags and commands (SQLite's FTS5, PostgreSQL's own text
        search); scores in (0, 1], best first."""
        terms = [t for t in re.findall(r"\w+", query.lower()) if len(t) > 1]
        if not terms:
            return []
        if self.dialect == "postgresql":
            return _scaled(self.conn.execute(_pg_text_search(len(terms)), (*terms, limit)).fetchall())
        match = " OR ".join(f'"{t}"' for t in terms)
        rows = self.conn.execute(
            "SELECT procedure_id, bm25(procedures_fts, 0, 4.0, 2.0, 2.0, 1.0) AS rank FROM procedures_fts"
            " WHERE procedures_fts MATCH ? ORDER BY rank LIMIT ?",
            (match, limit),
        ).fetchall()
        return _scaled([(pid, -rank) for pid, rank in rows])  # bm25: the lower, the better


def _scaled(rows: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """(id, relevance) best first, as scores in (0, 1]: each relative to the best."""
    if not rows:
        return []
    best = rows[0][1] or 1.0
    return [(pid, round(max(0.0, rank) / best, 4) if best > 0 else 0.0) for pid, rank in rows]


# PostgreSQL's text search, weighted as the FTS5 ranking is (task type 4, description and tags 2, commands 1), over
# the rows themselves: fts_search is a benchmark's fallback, not worth a second copy of every procedure's text.
_PG_DOCUMENT = (
    "setweight(to_tsvector('simple', translate(task_type, '-_', '  ')), 'A')"
    " || setweight(to_tsvector('simple', description || ' ' || tags), 'B')"
    " || setweight(to_tsvector('simple', COALESCE((SELECT string_agg(s ->> 'command', ' ')"
    " FROM jsonb_array_elements(steps::jsonb) AS s), '')), 'C')"
)


def _pg_text_search(terms: int) -> str:
    query = " || ".join(["plainto_tsquery('simple', ?)"] * terms)  # any of the words
    return (
        f"SELECT id, ts_rank('{{0, 0.25, 0.5, 1}}', document, query) AS rank FROM"
        f" (SELECT id, {_PG_DOCUMENT} AS document FROM procedures) AS docs, (SELECT {query}) AS q (query)"
        " WHERE document @@ query ORDER BY rank DESC, id LIMIT ?"
    )
