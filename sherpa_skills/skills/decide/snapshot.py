"""A workflow's decision memory persisted in the skill store (`decision_snapshots`, m012): a new process loads it at
its first ask (one row: each state's head as built, its vectors sorted by decision) instead of reading every example,
finding what separates them and building the heads again, then reads only the examples that came after it.

A snapshot stands for the workflow's examples up to id `upto` (`examples` of them read, counted as they were read)
and its calibration's errors up to `errors_upto`; it is used only while the store still has exactly those (deleting
examples — `--forget`, a contradicted answer's eviction — drops it, and a count that differs is caught anyway: rows
deleted, or one committed below `upto` after the reader went past it), was
taken with the same settings and format, and was read for the same workflow shape (`valid`). Anything else — another
version's format, a corrupt body — is ignored (logged) and the memory is rebuilt from the examples."""

from __future__ import annotations

import hashlib
import json
import struct
import time
from dataclasses import dataclass
from typing import Any

import structlog
from pydantic import BaseModel, ValidationError

from ..store.database import ProcedureDatabase

log = structlog.get_logger(__name__)

#: Bumped whenever what a snapshot holds, or what the memory derives from examples, changes meaning (2: each state's
#: head as built, its vectors sorted by decision, so a new process builds nothing at its first ask).
FORMAT = 2
_MAGIC = b"SKDM"
#: Each state's head arrays, in the body's order after the header.
_ARRAYS = (("matrix", "<f4"), ("rows", "<i4"), ("codes", "<i4"), ("centroids", "<f4"))


class _State(BaseModel):
    """One state's columns in a header (checked before any is used: a corrupt body is ignored, never a crash)."""

    ids: list[int]
    kinds: list[int]
    runs: list[str | None]
    created: list[float]
    rows: int
    width: int
    labels: int
    separating: list[str]
    seen: dict[str, list[Any]]
    varied: list[str]


class _Header(BaseModel):
    """A snapshot's header as the format writes it."""

    format: int
    valid: str | None
    read: int
    unusable: dict[str, int]
    states: dict[str, _State]
    kinds: list[str]
    calibration: tuple[list[str], list[float]]
    wrong: list[int]
    points_read: tuple[int, int]
    cost: tuple[int, int]


@dataclass(slots=True)
class Snapshot:
    """What a snapshot holds: the JSON header (states' examples without vectors, separating values, calibration) and
    each state's head (`heads`: its unit vectors sorted by decision, the example row of each, their decisions' codes,
    the decisions' centroids), in the header's state order."""

    header: dict[str, Any]
    heads: dict[str, dict[str, Any]]
    upto: int
    errors_upto: int
    #: The examples up to `upto` the memory read (counted as they were read, not when written: on PostgreSQL one with
    #: a lower id can commit after a reader went past it, and a count taken later would call it read).
    examples: int


def stamp(conf: dict[str, Any]) -> str:
    """The format and the settings the memory's derived values depend on: a snapshot of other ones is not used."""
    digest = hashlib.sha256(json.dumps(conf, sort_keys=True).encode()).hexdigest()[:16]
    return f"decide-snapshot/{FORMAT} settings:{digest}"


def valid_key(valid: set[tuple[str, str]] | None) -> str | None:
    """The workflow's (state, trigger) pairs as one comparable text (the examples a memory read depend on them)."""
    if valid is None:
        return None
    return hashlib.sha256(json.dumps(sorted(valid)).encode()).hexdigest()[:16]


def counts(store: ProcedureDatabase, workflow: str, upto: int) -> int:
    """How many of `workflow`'s examples the store holds up to id `upto`."""
    row = store.conn.execute(
        "SELECT COUNT(*) FROM decision_examples WHERE workflow = ? AND id <= ?", (workflow, upto)
    ).fetchone()
    return int(row[0])


def save(store: ProcedureDatabase, workflow: str, conf: dict[str, Any], snap: Snapshot) -> None:
    """Persist `snap` as `workflow`'s snapshot (replacing the one kept)."""
    import numpy as np

    arrays = [
        np.ascontiguousarray(snap.heads[state][name], dtype=dtype)
        for state in snap.header["states"]
        for name, dtype in _ARRAYS
    ]
    head = json.dumps(snap.header, separators=(",", ":"), default=str).encode()
    body = b"".join([_MAGIC, struct.pack("<Q", len(head)), head, *(a.tobytes() for a in arrays)])
    now = time.time()
    store.db.transaction(
        lambda conn: conn.execute(
            "INSERT INTO decision_snapshots (workflow, stamp, upto, errors_upto, examples, body, created)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (workflow) DO UPDATE SET stamp = excluded.stamp,"
            " upto = excluded.upto, errors_upto = excluded.errors_upto, examples = excluded.examples,"
            " body = excluded.body, created = excluded.created",
            (workflow, stamp(conf), snap.upto, snap.errors_upto, snap.examples, body, now),
        ),
        what=f"{workflow}'s decision snapshot",
    )


def load(
    store: ProcedureDatabase, workflow: str, conf: dict[str, Any], valid: set[tuple[str, str]] | None
) -> Snapshot | None:
    """`workflow`'s snapshot if it still stands for the store's examples, else None (and why, logged)."""
    row = store.conn.execute(
        "SELECT stamp, upto, errors_upto, examples, body FROM decision_snapshots WHERE workflow = ?", (workflow,)
    ).fetchone()
    if row is None:
        return None
    kept_stamp, upto, errors_upto, examples, body = row
    if kept_stamp != stamp(conf):
        log.info("decision_snapshot_ignored", workflow=workflow, why=f"another format or settings ({kept_stamp})")
        return None
    if counts(store, workflow, int(upto)) != int(examples):
        why = "examples were deleted, or committed below what it read, since it was taken"
        log.info("decision_snapshot_ignored", workflow=workflow, why=why)
        return None
    try:
        snap = _parse(bytes(body), int(upto), int(errors_upto), int(examples))
    except (ValueError, KeyError, TypeError, IndexError, struct.error, UnicodeDecodeError) as exc:
        log.warning("decision_snapshot_ignored", workflow=workflow, why=f"unreadable: {exc}")
        return None
    if snap.header.get("valid") != valid_key(valid):
        log.info("decision_snapshot_ignored", workflow=workflow, why="taken for another shape of the workflow")
        return None
    return snap


def _parse(body: bytes, upto: int, errors_upto: int, examples: int) -> Snapshot:
    import numpy as np

    if body[:4] != _MAGIC:
        raise ValueError("not a decision-memory snapshot")
    (size,) = struct.unpack("<Q", body[4:12])
    header = json.loads(body[12 : 12 + size])
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValueError("another snapshot format")
    try:
        _Header.model_validate(header)
    except ValidationError as exc:  # its first error names the field, enough for the one log line
        first = exc.errors()[0]
        raise ValueError(f"header field {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    offset = 12 + size
    heads: dict[str, dict[str, Any]] = {}
    for state, kept in header["states"].items():
        rows, width, labels = int(kept["rows"]), int(kept["width"]), int(kept["labels"])
        if width <= 0 or rows < 0 or labels < 0:
            raise ValueError(f"state '{state}': no shape")
        shapes = {"matrix": (rows, width), "rows": (rows,), "codes": (rows,), "centroids": (labels, width)}
        heads[state] = {}
        for name, dtype in _ARRAYS:
            count = int(np.prod(shapes[name]))
            end = offset + count * 4
            if end > len(body):
                raise ValueError(f"state '{state}': the body is shorter than its {name}")
            heads[state][name] = np.frombuffer(body, dtype=dtype, count=count, offset=offset).reshape(shapes[name])
            offset = end
        _check(state, heads[state], labels)
    if offset != len(body):
        raise ValueError("the body is longer than its vectors")
    return Snapshot(header, heads, upto, errors_upto, examples)


def _check(state: str, head: dict[str, Any], labels: int) -> None:
    """A head whose rows are not each example once, or whose codes are not sorted decisions, is not used."""
    import numpy as np

    rows, codes = head["rows"], head["codes"]
    n = rows.shape[0]
    if n and (rows.min() < 0 or rows.max() >= n or np.bincount(rows, minlength=n).max() != 1):
        raise ValueError(f"state '{state}': its head's rows are not its examples")
    if n and (codes.min() < 0 or codes.max() >= labels or (codes[1:] < codes[:-1]).any()):
        raise ValueError(f"state '{state}': its head's decisions are not sorted codes")


def drop(store: ProcedureDatabase, workflow: str) -> None:
    """Forget `workflow`'s snapshot (its examples changed otherwise than by new ones): part of the caller's
    transaction when it holds one, else one of its own."""
    store.db.transaction(
        lambda conn: conn.execute("DELETE FROM decision_snapshots WHERE workflow = ?", (workflow,)),
        what=f"dropping {workflow}'s decision snapshot",
    )
