"""The skill store's truth: procedures and their versions, executions, learnings — in the home's store.db, or in the
PostgreSQL database several machines share (`--database`, SHERPA_SKILLS_DATABASE).

Counts change only inside write transactions with `count = count + 1`, and a write that reads a procedure before it
changes it locks the row first (`_locked`), so any number of processes recording outcomes at once never lose an update.
A write returns the procedure as it left it (read inside its transaction, before another machine's next write).
"""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

from ...db import procedure_text
from ...db.connection import Connection
from ...errors import StoreError
from .models import (
    CapturedLearning,
    CapturedProcedure,
    Claim,
    ClaimSource,
    Execution,
    ProcedureStep,
    RecordedDecision,
)
from .reads import ProcedureReads
from .rows import _PROC_COLUMNS, _dump
from .scoring import PROVEN_SQL, REPLAY_THRESHOLD, confidence
from .signatures import learning_key, path_signature, signature_of


def current_user() -> str:
    """Who runs this process, for records of who did what (a promotion); 'unknown' when the OS cannot say."""
    import getpass

    try:
        return getpass.getuser()
    except Exception:  # no USER/LOGNAME and no passwd entry (some containers)
        return "unknown"


class ProcedureDatabase(ProcedureReads):
    """Procedures, executions and learnings; safe to open from many processes (and machines) at once. store.db in the
    home folder, or the PostgreSQL database `database` (else SHERPA_SKILLS_DATABASE) names; the home keeps what is
    local either way (the matching index)."""

    # ------------------------------------------------------------------ transactions

    def _locked(self, procedure_id: str) -> CapturedProcedure:
        """The procedure as it is now, its row locked until the write transaction ends: what a write that reads before
        it changes takes first. SQLite's BEGIN IMMEDIATE already holds the whole store; PostgreSQL's BEGIN locks rows
        only as they are written, so two machines would both read the old counts."""
        proc = self.get(procedure_id)
        lock = self.db.for_update()
        if lock:  # an engine that locks rows only as they are written: lock it, then read it again
            self.conn.execute(f"SELECT 1 FROM procedures WHERE id = ?{lock}", (proc.id,))
            proc = self.get(proc.id)  # as the transaction that held the lock left it
        return proc

    def _bump(self) -> None:
        self.conn.execute("UPDATE skill_meta SET value = value + 1 WHERE key = 'generation'")

    def _index_fts(self, p: CapturedProcedure) -> None:
        procedure_text.index_procedure(
            self.conn, p.id, p.task_type, p.description, p.tags, [step.command for step in p.steps]
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

        def write(conn: Connection) -> tuple[CapturedProcedure, bool]:
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
                found, inserted = twin[0], False
                if claim is None:
                    self._credit(found)
            else:
                self._insert_version(proc, sig, steps)
                self._index_fts(proc)
                self._bump()
                found, inserted = pid, True
            if claim is not None and (claim.successes or claim.failures or claim.note):
                self._claim(found, claim)
            return self.get(found), inserted

        return self.db.transaction(write, what=f"procedure '{pid}'")

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

        def write(conn: Connection) -> CapturedProcedure:
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

        return self.db.transaction(write, what=f"a claim on procedure '{procedure_id}'")

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

        def write(conn: Connection) -> CapturedProcedure:
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

        return self.db.transaction(write, what=f"a new version of procedure '{procedure_id}'")

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

    def record_success(self, procedure_id: str) -> CapturedProcedure:
        """Seen succeeding again (a capture or a mined session with the same steps): one more success, no duplicate."""

        def write(conn: Connection) -> CapturedProcedure:
            pid = self.get(procedure_id).id
            self._credit(pid)
            return self.get(pid)

        return self.db.transaction(write, what=f"a success of procedure '{procedure_id}'")

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
        promoter = by or current_user()

        def write(conn: Connection) -> CapturedProcedure:
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
                    promoter,
                    newest,
                    proc.status,
                    health.status,
                    proc.success_count,
                    proc.failure_count,
                    closed,
                ),
            )
            self.conn.execute(
                f"UPDATE procedures SET status = 'active', success_count = {self.db.greatest()}(success_count, 2),"
                " failure_count = 0, proven = 1,"
                " needs_relearning = 0, updated = ? WHERE id = ?",
                (now, pid),
            )
            self.conn.execute(
                f"UPDATE procedure_versions SET success_count = {self.db.greatest()}(success_count, 2),"
                " failure_count = 0 WHERE procedure_id = ? AND version = ?",
                (pid, proc.version),
            )
            self._bump()
            return self.get(pid)

        return self.db.transaction(write, what=f"the promotion of procedure '{procedure_id}'")

    def set_status(self, procedure_id: str, status: str) -> CapturedProcedure:
        def write(conn: Connection) -> CapturedProcedure:
            pid = self.get(procedure_id).id
            conn.execute("UPDATE procedures SET status = ?, updated = ? WHERE id = ?", (status, time.time(), pid))
            self._bump()
            return self.get(pid)

        return self.db.transaction(write, what=f"the status of procedure '{procedure_id}'")

    def update_mined(self, procedure_id: str, context: dict[str, Any], claimed_successes: int) -> CapturedProcedure:
        """A mined candidate seen again: its support, parameter examples and the successes the logs show, as mining
        now counts them (claims: session logs are not this store's evidence)."""

        def write(conn: Connection) -> CapturedProcedure:
            proc = self._locked(procedure_id)
            merged = {**proc.context, **context}
            conn.execute(
                "UPDATE procedures SET context = ?, claimed_successes = ?, updated = ? WHERE id = ?",
                (_dump(merged), claimed_successes, time.time(), proc.id),
            )
            self._bump()
            return self.get(proc.id)

        return self.db.transaction(write, what=f"mined procedure '{procedure_id}'")

    def mark_needs_relearning(self, procedure_id: str, flag: bool = True) -> None:
        self.db.transaction(
            lambda conn: conn.execute(
                "UPDATE procedures SET needs_relearning = ?, updated = ? WHERE id = ?",
                (int(flag), time.time(), procedure_id),
            ),
            what=f"the re-learning mark of procedure '{procedure_id}'",
        )

    # ------------------------------------------------------------------ executions

    def record_execution(self, execution: Execution) -> Execution:
        """The execution row and the count it changes, in one transaction; dry runs change no count."""
        column = {"success": "success_count", "diverged": "failure_count", "error": "failure_count"}.get(
            execution.outcome
        )

        def write(conn: Connection) -> Any:
            row = conn.execute(
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
                conn.execute(
                    f"UPDATE procedures SET {column} = {column} + 1, updated = ? WHERE id = ? AND version = ?",
                    (time.time(), execution.procedure_id, execution.version),
                )
                conn.execute(
                    f"UPDATE procedure_versions SET {column} = {column} + 1 WHERE procedure_id = ? AND version = ?",
                    (execution.procedure_id, execution.version),
                )
                if execution.outcome == "success":  # a validated replay may be the one that proves it
                    conn.execute(
                        "UPDATE procedures SET proven = 1 WHERE id = ? AND version = ? AND proven = 0"
                        f" AND {PROVEN_SQL}",
                        (execution.procedure_id, execution.version),
                    )
            return row

        row = self.db.transaction(write, what=f"an execution of procedure '{execution.procedure_id}'")
        return execution.model_copy(update={"id": row[0]})

    def delete_executions_before(self, cutoff: float, keep_per_procedure: int = 50) -> int:
        """Retention: drop old executions but always keep each procedure's newest ones (health needs them)."""

        def write(conn: Connection) -> int:
            return int(
                conn.execute(
                    "DELETE FROM executions WHERE ended < ? AND id NOT IN (SELECT id FROM (SELECT id, ROW_NUMBER()"
                    " OVER (PARTITION BY procedure_id ORDER BY id DESC) AS n FROM executions) AS ranked WHERE n <= ?)",
                    (cutoff, keep_per_procedure),
                ).rowcount
            )

        return self.db.transaction(write, what="the retention of executions")

    # ------------------------------------------------------------------ learnings

    def add_learning(self, learning: CapturedLearning) -> CapturedLearning:
        """Store a learning; the same lesson again (task, command, error)
        raises the stored one's `seen` and `last_seen`."""
        now = learning.created or time.time()
        key = learning_key(learning.task_type, learning.command, learning.error)
        row = self.db.transaction(
            lambda conn: conn.execute(
                "INSERT INTO learnings (task_type, procedure_id, command, error, exit_code, source, created, "
                "key, seen, last_seen, about)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET"
                " seen = learnings.seen + excluded.seen,"
                f" last_seen = {self.db.greatest()}(learnings.last_seen, excluded.last_seen)"
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
            ).fetchone(),
            what="a learning",
        )
        # The same lesson keeps the context it was first learned with: that is the text its vector was made from.
        return learning.model_copy(
            update={"id": row[0], "seen": row[1], "last_seen": row[2], "created": row[3], "about": row[4]}
        )
