"""The skill store opened and read: procedures, versions, claims, promotions, executions, health, learnings, search."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ...db import procedure_text
from ...db.database import Database
from ...db.on_database import OnDatabase
from ...errors import StoreError, UsageError
from .migrations import MIGRATIONS
from .models import (
    STORED,
    CapturedLearning,
    CapturedProcedure,
    Claim,
    Execution,
    ProcedureHealthReport,
    ProcedureStep,
    RecordedDecision,
)
from .rows import _LEARNING_COLUMNS, _PROC_COLUMNS, _learning, _procedure
from .scoring import confidence, health_report

COMPONENT = "skills"


class ProcedureReads(OnDatabase):
    """The skill store over a `Database` (migrated on either engine) and its queries; `ProcedureDatabase` adds the
    writes. Given no `Database`, it opens one of its own from `home`/`path`/`database` and closes it with itself."""

    component = COMPONENT
    migrations = MIGRATIONS

    def __init__(
        self,
        db: Database | None = None,
        *,
        home: str | Path | None = None,
        path: str | Path | None = None,
        database: str | None = None,
    ) -> None:
        if db is not None and not isinstance(db, Database):  # the old positional path: say what to write instead
            raise UsageError(
                f"ProcedureDatabase takes a Database first, not {type(db).__name__} {db!r}: give a file as path=, a "
                "home folder as home="
            )
        super().__init__(db, home=home, path=path, database=database)
        self._identity: int | None = None

    def generation(self) -> int:
        """Bumped whenever what matching looks at changes; caches compare it."""
        return int(self.conn.execute("SELECT value FROM skill_meta WHERE key = 'generation'").fetchone()[0])

    def identity(self) -> int:
        """A random number fixed for this store's lifetime: a derived file (the matching index) names the store it
        was built from, so a file copied from another home is never taken for this one's."""
        if self._identity is None:
            row = self.conn.execute("SELECT value FROM skill_meta WHERE key = 'identity'").fetchone()
            if row is None:
                drawn = random.getrandbits(62)
                self.db.once_more(  # the first drawn wins: sent again after a dropped connection, it is the same
                    lambda conn: conn.execute(
                        "INSERT INTO skill_meta (key, value) VALUES ('identity', ?) ON CONFLICT DO NOTHING", (drawn,)
                    )
                )
                row = self.conn.execute("SELECT value FROM skill_meta WHERE key = 'identity'").fetchone()
            self._identity = int(row[0])
        return self._identity

    # ------------------------------------------------------------------ procedures

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
            near = self.db.prefix_matches("procedures", "id", procedure_id)
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

    # ------------------------------------------------------------------ executions

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

    # ------------------------------------------------------------------ learnings

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
        return procedure_text.search(self.conn, terms, limit) if terms else []
