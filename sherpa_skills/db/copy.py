"""`db copy`: a store moved from one database to another (a home's SQLite to PostgreSQL and back), table by table.

The target's schema comes from each component's own migrations; the rows go over in one transaction on the target
(a failed copy leaves it without a row written), read from one snapshot of the source, and the counts of both
sides are compared at the end.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from pydantic import BaseModel

from ..errors import StoreError, UsageError
from .components import Component, fresh_schema
from .connection import Connection
from .endpoints import Endpoint, open_endpoint
from .sqlite import refuse_newer
from .tables import (
    Column,
    columns,
    count,
    dependency_order,
    full_text_tables,
    primary_key,
    quote,
    references,
    tables,
)
from .values import Convert, converter

log = structlog.get_logger(__name__)
BATCH = 1000
Progress = Callable[[str, int, int], None]  # table, rows copied so far, rows in all


class TableCount(BaseModel):
    name: str
    source: int
    target: int


class Skipped(BaseModel):
    name: str  # a component, or a table
    reason: str


class CopyReport(BaseModel):
    source: str
    target: str
    tables: list[TableCount]
    skipped: list[Skipped]
    rebuilt: list[str]  # derived tables rebuilt from the copied rows (FTS5 indexes)
    ok: bool


class CopyError(StoreError):
    """The copy stopped: nothing was written to the target."""


@dataclass
class _Plan:
    name: str
    columns: list[Column]  # the target's, in the order they are read from the source
    selected: list[str]  # the source's spelling of the same columns
    seeded: int  # rows the target's migrations put there themselves: replaced by the source's
    key: list[int]  # positions of the primary key's columns, to name a row


def copy_store(
    source_spec: str,
    target_spec: str,
    components: Sequence[Component],
    *,
    batch: int = BATCH,
    progress: Progress | None = None,
) -> CopyReport:
    source = open_endpoint(source_spec, option="--from", create=False)
    try:
        target = open_endpoint(target_spec, option="--to", create=True)
    except BaseException:
        source.close()
        raise
    try:
        if source.identity == target.identity:
            raise UsageError(f"--from and --to are the same store ({source.label}): nothing to copy")
        return _copy(source, target, components, batch, progress)
    finally:
        source.close()
        target.close()


def _copy(
    source: Endpoint, target: Endpoint, components: Sequence[Component], batch: int, progress: Progress | None
) -> CopyReport:
    skipped: list[Skipped] = []
    plans: list[_Plan] = []
    external_fts: list[str] = []
    refills: list[tuple[str, Callable[[Connection], None]]] = []
    for component in components:
        fresh = _prepare(component, source, target, skipped)
        if fresh is None:
            continue
        try:
            component_plans, component_skipped = _plan_tables(fresh, source, target)
            plans += component_plans
            skipped += component_skipped
            fresh_fts = {f.name for f in full_text_tables(fresh) if f.external}
            external_fts += [f.name for f in full_text_tables(target.conn) if f.external and f.name in fresh_fts]
            if component.refill is not None and source.dialect == "postgresql" and target.dialect == "sqlite":
                refills += [(f.name, component.refill) for f in full_text_tables(fresh) if not f.external]
        finally:
            fresh.close()
    refs = {p.name: references(target.conn, p.name) for p in plans}
    by_name = {p.name: p for p in plans}
    plans = [by_name[name] for name in dependency_order([p.name for p in plans], refs)]
    _refuse_rows(target, plans)
    counts = _transfer(source, target, plans, external_fts, refills, batch, progress)
    report = CopyReport(
        source=source.label,
        target=target.label,
        tables=counts,
        skipped=skipped,
        rebuilt=external_fts + [name for name, _ in refills],
        ok=all(c.source == c.target for c in counts),
    )
    log.info("db_copied", source=source.label, target=target.label, tables=len(counts), ok=report.ok)
    return report


def _prepare(
    component: Component, source: Endpoint, target: Endpoint, skipped: list[Skipped]
) -> sqlite3.Connection | None:
    """Both ends at this version's schema for the component; its fresh schema (an in-memory SQLite database), or
    None when there is nothing of it to copy."""
    applied = source.applied(component.name)
    if not applied and not (component.moved_from and source.applied(component.moved_from)):
        skipped.append(Skipped(name=component.name, reason="not in the source (never used there)"))
        return None
    refuse_newer(component.name, applied, component.migrations, source.label)
    source.migrate(component.name, component.migrations)  # as any command opening it would
    target.migrate(component.name, component.migrations)
    return fresh_schema(component)


def _plan_tables(fresh: sqlite3.Connection, source: Endpoint, target: Endpoint) -> tuple[list[_Plan], list[Skipped]]:
    own = tables(fresh)
    in_source, in_target = tables(source.conn), tables(target.conn)
    plans: list[_Plan] = []
    skipped: list[Skipped] = []
    for name in sorted(own):
        if name not in in_source:
            continue
        if name not in in_target:
            skipped.append(Skipped(name=name, reason=f"{target.label} keeps no such table (derived there)"))
            continue
        readable = {c.name.lower(): c for c in columns(source.conn, name) if not c.generated}
        writable = [c for c in columns(target.conn, name) if not c.generated and c.name.lower() in readable]
        key_names = {k.lower() for k in primary_key(target.conn, name)} or {"rowid"}
        plans.append(
            _Plan(
                name=name,
                columns=writable,
                selected=[readable[c.name.lower()].name for c in writable],
                seeded=count(fresh, name),
                key=[i for i, c in enumerate(writable) if c.name.lower() in key_names],
            )
        )
    return plans, skipped


def _refuse_rows(target: Endpoint, plans: Sequence[_Plan]) -> None:
    """Rows the target already holds are not mixed with the copy's: the user empties the target first."""
    full = [(p.name, n) for p in plans if (n := count(target.conn, p.name)) > p.seeded]
    if full:
        listed = ", ".join(f"{name} ({n} rows)" for name, n in full[:5]) + (" …" if len(full) > 5 else "")
        raise UsageError(
            f"--to {target.label} is not empty: {listed}; copy into an empty database or home (nothing was copied)"
        )


def _transfer(
    source: Endpoint,
    target: Endpoint,
    plans: Sequence[_Plan],
    external_fts: Sequence[str],
    refills: Sequence[tuple[str, Callable[[Connection], None]]],
    batch: int,
    progress: Progress | None,
) -> list[TableCount]:
    postgres_source = source.dialect == "postgresql"
    source.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" if postgres_source else "BEGIN")
    try:
        target.conn.execute("BEGIN" if target.dialect == "postgresql" else "BEGIN IMMEDIATE")
        try:
            if target.dialect == "sqlite":
                target.conn.execute("PRAGMA defer_foreign_keys = ON")  # checked at commit, whatever the order
            source_counts = {}
            for plan in plans:
                source_counts[plan.name] = total = count(source.conn, plan.name)
                _copy_table(source, target, plan, total, batch, progress)
            for name in external_fts:
                target.conn.execute(f"INSERT INTO {quote(name)} ({quote(name)}) VALUES ('rebuild')")
            for _, refill in refills:
                refill(target.conn)
            if target.dialect == "postgresql":
                for plan in plans:
                    _move_identities(target, plan)
            counts = [
                TableCount(name=p.name, source=source_counts[p.name], target=count(target.conn, p.name)) for p in plans
            ]
            _commit(target)
        except BaseException:
            if target.conn.in_transaction:
                target.conn.execute("ROLLBACK")
            raise
    finally:
        if source.conn.in_transaction:
            source.conn.execute("ROLLBACK")  # a read snapshot: nothing to keep
    return counts


def _commit(target: Endpoint) -> None:
    try:
        target.conn.execute("COMMIT")
    except Exception as exc:
        if not _is_database_error(exc):
            raise
        first = " ".join(str(exc).split())[:300]
        raise CopyError(f"{target.label} refused the copy as a whole: {first}; nothing was copied") from None


def _copy_table(
    source: Endpoint, target: Endpoint, plan: _Plan, total: int, batch: int, progress: Progress | None
) -> None:
    if plan.seeded:
        target.conn.execute(f"DELETE FROM {quote(plan.name)}")
    if not plan.columns:
        return
    names = ", ".join(quote(c.name) for c in plan.columns)
    overriding = " OVERRIDING SYSTEM VALUE" if any(c.identity_always for c in plan.columns) else ""
    insert = f"INSERT INTO {quote(plan.name)} ({names}){overriding} VALUES ({', '.join('?' for _ in plan.columns)})"
    converts = [converter(target.dialect, c.type) for c in plan.columns]
    done = 0
    for rows in _read(source, plan, batch):
        converted = [_convert_row(plan, converts, row, done + i + 1) for i, row in enumerate(rows)]
        try:
            target.conn.executemany(insert, converted)
        except Exception as exc:
            if not _is_database_error(exc):
                raise
            first = " ".join(str(exc).split())[:300]
            raise CopyError(
                f"{plan.name}: rows {done + 1}-{done + len(rows)} were refused by {target.label}: {first}; "
                "nothing was copied"
            ) from None
        done += len(rows)
        if progress is not None:
            progress(plan.name, done, total)


def _read(source: Endpoint, plan: _Plan, batch: int) -> Iterator[list[Any]]:
    select = f"SELECT {', '.join(quote(c) for c in plan.selected)} FROM {quote(plan.name)}"
    if source.dialect == "postgresql":
        from .postgres import PgConnection

        assert isinstance(source.conn, PgConnection)
        cursor: Any = source.conn.raw.cursor(name=f"sherpa_copy_{plan.name}")  # server-side: rows come in batches
        cursor.itersize = batch
        cursor.execute(select)
    else:
        cursor = source.conn.execute(select)
    try:
        while rows := cursor.fetchmany(batch):
            yield rows
    finally:
        cursor.close()


def _convert_row(plan: _Plan, converts: Sequence[Convert | None], row: Sequence[Any], number: int) -> list[Any]:
    out = list(row)
    for i, convert in enumerate(converts):
        if convert is None or out[i] is None:
            continue
        try:
            out[i] = convert(out[i])
        except ValueError as exc:
            key = ", ".join(f"{plan.columns[k].name}={row[k]!r}" for k in plan.key)
            raise CopyError(
                f"{plan.name} row {number}{f' ({key})' if key else ''}, column {plan.columns[i].name} "
                f"({plan.columns[i].type}): {exc}; nothing was copied"
            ) from None
    return out


def _move_identities(target: Endpoint, plan: _Plan) -> None:
    """Each identity sequence past the largest copied id, so the next insert does not collide with a copied row."""
    for column in columns(target.conn, plan.name):
        if not column.identity:
            continue
        target.conn.execute(
            f"SELECT setval(pg_get_serial_sequence(?, ?), m) FROM (SELECT max({quote(column.name)}) AS m "
            f"FROM {quote(plan.name)}) AS top WHERE m IS NOT NULL",
            (quote(plan.name), column.name),
        )


def _is_database_error(exc: Exception) -> bool:
    if isinstance(exc, sqlite3.Error):
        return True
    try:
        import psycopg
    except ImportError:
        return False
    return isinstance(exc, psycopg.Error)
