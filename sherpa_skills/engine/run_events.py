"""A run's consumed and emitted events: the dedupe record, and the outbox handed to a bus exactly once."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..db.connection import Connection
from .run_base import _RunStoreBase
from .run_values import _like

RELAY_BATCH = 100  # outbox events one relay claims at a time on PostgreSQL


class _RunEvents(_RunStoreBase):
    """The run store's event record and outbox."""

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
        and mark it published; returns how many. On a shared database, relays on several machines share it: each
        claims a batch (its rows locked, those another relay locked skipped) in a transaction of its own connection,
        publishes, marks, commits; one that dies mid-batch leaves its batch to the next (its row locks die with its
        connection). On one machine: read, publish, mark. `live` holds, by event id, the bodies as the run emitted them
        (the store keeps them redacted): those go out rather than the stored copy."""
        live = live or {}
        if not self.db.shared:
            done = 0
            for rid, body in self.unpublished(run_prefix) if run_id is None else self._outbox_of(run_id):
                publish(live.get(body["id"], body))
                self.mark_published(rid, [body["id"]])
                done += 1
            return done
        where, param = (
            ("run_id = ?", run_id) if run_id is not None else ("run_id LIKE ? ESCAPE '\\'", _like(run_prefix) + "%")
        )
        claim = (
            "SELECT run_id, event_id, body FROM run_events WHERE direction = 'out' AND published = 0 AND "
            f"{where} ORDER BY rowid LIMIT {RELAY_BATCH}{self.db.skip_locked()}"
        )

        # Handed to the bus by a try whose marking the connection lost: the batch written again marks them, and
        # publishing is the one thing a write tried again cannot take back.
        handed: set[tuple[str, str]] = set()

        def one_batch(conn: Connection) -> tuple[int, list[tuple[str, str]], BaseException | None]:
            rows = conn.execute(claim, (param,)).fetchall()
            published: list[tuple[str, str]] = []
            failed: BaseException | None = None
            for rid, event_id, body in rows:
                if (rid, event_id) not in handed:
                    try:
                        publish(live[event_id] if event_id in live else json.loads(body))
                    except BaseException as exc:  # what was handed over is marked, even when a later publish failed
                        failed = exc
                        break
                    handed.add((rid, event_id))
                published.append((rid, event_id))
            conn.executemany(
                "UPDATE run_events SET published = 1 WHERE run_id = ? AND direction = 'out' AND event_id = ?",
                published,
            )
            return len(rows), published, failed

        relay = self.db.another()  # a batch's row locks are held apart from the run store's own writes
        done = 0
        try:
            while True:
                claimed, published, failed = relay.transaction(one_batch, what="an outbox batch", immediate=False)
                if failed is not None:
                    raise failed
                done += len(published)
                if claimed < RELAY_BATCH:
                    return done
        finally:
            relay.close()

    def _outbox_of(self, run_id: str) -> list[tuple[str, dict[str, Any]]]:
        return [
            (run_id, json.loads(r[0]))
            for r in self.conn.execute(
                "SELECT body FROM run_events WHERE run_id = ? AND direction = 'out' AND published = 0 ORDER BY rowid",
                (run_id,),
            )
        ]

    def mark_published(self, run_id: str, event_ids: list[str]) -> None:
        rows = [(run_id, i) for i in event_ids]
        self.db.once_more(
            lambda conn: conn.executemany(
                "UPDATE run_events SET published = 1 WHERE run_id = ? AND direction = 'out' AND event_id = ?", rows
            )
        )
