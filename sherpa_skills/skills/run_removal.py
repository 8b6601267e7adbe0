"""Removing runs (`runs delete`, `runs prune`) without leaving anything that refers to a run pointing at nothing.

A run stays while a procedure's execution records it, a procedure (or one of its versions) was captured from it, an
alias's wording came from it (its `source`, `run:<run_id>`), or a run that stays started it with `run_machine` (the
parent's log holds the child's result); waiting and running runs stay unless forced. What stays is reported with its
reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel

from ..db.by_connection import has_table, json_field
from ..db.connection import Connection
from ..db.tables import columns
from ..engine.runstore import RunStore

ACTIVE = ("waiting", "running", "interrupted")  # resumable: deleting one loses work in progress
_CHUNK = 500  # SQLite's bound-variable limit is far above this; chunks keep any IN list small


class KeptRun(BaseModel):
    run_id: str
    reason: str


class Removal(BaseModel):
    """What `runs delete`/`runs prune` did (or, with dry_run, would do); their --json output."""

    dry_run: bool
    deleted: list[str]
    kept: list[KeptRun]
    logs_deleted: int


def _chunks(ids: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(ids), _CHUNK):
        yield ids[start : start + _CHUNK]


def _in(ids: list[str]) -> str:
    return ", ".join("?" * len(ids))


def must_stay(conn: Connection, ids: list[str], force: bool = False) -> dict[str, str]:
    """Of these runs, those that must not be deleted, each with why (the first reason found)."""
    kept: dict[str, str] = {}
    # Aliases name their run from the skill store's m013 on; a home whose skill store is older has none to keep.
    sourced = has_table(conn, "aliases") and any(c.name == "source" for c in columns(conn, "aliases"))
    for part in _chunks(ids):
        if not force:
            for run_id, status in conn.execute(
                f"SELECT run_id, status FROM runs WHERE run_id IN ({_in(part)}) AND status IN ('waiting', "
                "'running', 'interrupted')",
                part,
            ):
                kept.setdefault(run_id, f"{status}: pass --force to delete it")
        if has_table(conn, "executions"):
            for run_id, pid, version in conn.execute(
                f"SELECT run_id, procedure_id, version FROM executions WHERE run_id IN ({_in(part)}) ORDER BY id", part
            ):
                kept.setdefault(run_id, f"an execution of procedure {pid} v{version} records it")
        captured_from, run_id = (
            json_field(conn, "context", "captured_from_run"),
            json_field(conn, "context", "run_id"),
        )
        for table, pid_column, version in (
            ("procedures", "id", "version"),
            ("procedure_versions", "procedure_id", "version"),
        ):
            if not has_table(conn, table):
                continue
            for pid, v, source in conn.execute(
                f"SELECT {pid_column}, {version}, COALESCE({captured_from}, {run_id})"
                f" FROM {table} WHERE {captured_from} IN ({_in(part)}) OR {run_id} IN ({_in(part)})",
                part + part,
            ):
                kept.setdefault(source, f"procedure {pid} v{v} was captured from it")
        if sourced:
            for source, alias_id, pid in conn.execute(
                f"SELECT source, id, procedure_id FROM aliases WHERE source IN ({_in(part)}) ORDER BY id",
                [f"run:{i}" for i in part],
            ):
                kept.setdefault(source[len("run:") :], f"alias a{alias_id} of procedure {pid} came from it")
    # A child stays while its parent does; a parent kept for its own reasons keeps its children in turn.
    child_of = json_field(conn, "outputs", "run_id")
    while True:
        going = [i for i in ids if i not in kept]
        added = False
        for part in _chunks(going):
            for parent, child in conn.execute(
                f"SELECT run_id, {child_of} FROM run_log WHERE action = 'run_machine'"
                f" AND {child_of} IN ({_in(part)}) ORDER BY id",
                part,
            ):
                if parent not in going and child not in kept:
                    kept[child] = f"run {parent} started it (run_machine) and its log holds its result"
                    added = True
        if not added:
            return kept


def remove_runs(store: RunStore, home: Path, ids: list[str], *, force: bool = False, dry_run: bool = False) -> Removal:
    """Delete these runs (exact ids) with all their rows in one transaction,
    and their log files; keep what must stay."""
    from ..logs import log_file

    if dry_run:
        kept = must_stay(store.conn, ids, force)
        deleted = [i for i in ids if i not in kept]
    else:
        deleted, kept = store.delete_runs(
            lambda conn: [i for i in ids if conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (i,)).fetchone()],
            lambda conn, chosen: must_stay(conn, chosen, force),
        )
    logs = 0
    for run_id in deleted:
        path = log_file(home, run_id)
        if path.is_file():
            logs += 1
            if not dry_run:
                path.unlink(missing_ok=True)
    return Removal(
        dry_run=dry_run,
        deleted=deleted,
        kept=[KeptRun(run_id=i, reason=kept[i]) for i in ids if i in kept],
        logs_deleted=logs,
    )


def older_than(store: RunStore, cutoff: float) -> list[str]:
    """Runs last updated before `cutoff`, oldest first: what `runs prune` considers."""
    return [
        r[0] for r in store.conn.execute("SELECT run_id FROM runs WHERE updated < ? ORDER BY created, rowid", (cutoff,))
    ]
