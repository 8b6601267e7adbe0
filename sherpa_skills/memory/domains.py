"""Domains: an agent's memory across separate runs — what it was told, where it stands, what it did.

A workflow (or a team member) declaring `domain: NAME` gets, at each run start, the domain's **decisions** (rules
and thresholds set by a person or the main agent; read-only to the agent), its **status** (written by the agent),
its latest **changelog** entries and a short briefing from shared memory, all bounded; at each run end one line is
appended to the changelog (rotated past MAX_CHANGELOG entries). An agent that needs a rule changed writes a
**proposal**; accepting it updates the decisions. The first identity to use a domain owns it: another agent
declaring the same name is refused, so a domain is never a way into someone else's state.
"""

from __future__ import annotations

import builtins
import json
import re
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any

import structlog

from ..db.connection import Connection
from ..db.on_database import OnDatabase
from ..db.sqlite import execute_script
from ..errors import UsageError
from ..redact import redact, redact_value

log = structlog.get_logger(__name__)

COMPONENT = "domains"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,99}$")
MAX_CHANGELOG = 200  # entries kept per domain; older ones are rotated out (counted)
MAX_DECISIONS = 100
MAX_VALUE_CHARS = 2000  # one decision's value, or a status, as JSON
START_DECISION_CHARS = 300  # per decision value, in the start context
START_STATUS_CHARS = 1500
START_CHANGES = 5
START_BRIEFING = 12
STALE_DAYS = 7.0  # a domain whose agent has not run for this long is reported stale


def m001_domains(conn: sqlite3.Connection) -> None:
    execute_script(
        conn,
        """
        CREATE TABLE domains (
            name TEXT PRIMARY KEY, agent TEXT NOT NULL, created REAL NOT NULL, last_run REAL, last_outcome TEXT,
            runs INTEGER NOT NULL DEFAULT 0, status TEXT, status_at REAL, rotated INTEGER NOT NULL DEFAULT 0);
        CREATE TABLE domain_decisions (
            domain TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, set_by TEXT NOT NULL, at REAL NOT NULL,
            PRIMARY KEY (domain, key));
        CREATE TABLE domain_changelog (
            seq INTEGER PRIMARY KEY, domain TEXT NOT NULL, at REAL NOT NULL, run_id TEXT, kind TEXT NOT NULL,
            entry TEXT NOT NULL);
        CREATE INDEX domain_changelog_domain ON domain_changelog (domain, seq);
        CREATE UNIQUE INDEX domain_changelog_run_end ON domain_changelog (domain, run_id) WHERE kind = 'run';
        CREATE TABLE domain_proposals (
            id TEXT PRIMARY KEY, domain TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, reason TEXT,
            proposed_by TEXT NOT NULL, run_id TEXT, at REAL NOT NULL,
            status TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'accepted', 'rejected')),
            decided_by TEXT, decided_at REAL, note TEXT);
        CREATE INDEX domain_proposals_open ON domain_proposals (domain) WHERE status = 'open';
    """,
    )


MIGRATIONS = [m001_domains]


def check_domain(name: object) -> str:
    if not isinstance(name, str) or not NAME.match(name):
        raise UsageError(
            f"domain {name!r} must be a name of letters, digits, '.', '_' or '-' (at most 100, starting with "
            f"a letter or digit)"
        )
    return name


def check_key(key: object) -> str:
    if not isinstance(key, str) or not KEY.match(key):
        raise UsageError(f"domain decision key {key!r} must be a name of letters, digits, '.', '_' or '-'")
    return key


def _dump(value: object, what: str) -> str:
    try:
        text = json.dumps(redact_value(value), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{what} must be plain JSON (strings, numbers, booleans, lists, mappings): {exc}") from None
    if len(text) > MAX_VALUE_CHARS:
        raise UsageError(
            f"{what} is {len(text):,} characters as JSON, over the {MAX_VALUE_CHARS:,} limit; keep it a summary"
        )
    return text


def _clip(value: Any, chars: int) -> Any:
    text = json.dumps(value, ensure_ascii=False)
    return value if len(text) <= chars else text[: chars - 1] + "…"


class Domains(OnDatabase):
    """The domains of one home (tables in its store.db), or of every home sharing the PostgreSQL database in force."""

    component = COMPONENT
    migrations = MIGRATIONS

    # ------------------------------------------------------------------ ownership

    def claim(self, name: str, agent: str) -> None:
        """Bind `name` to `agent` on first use; refuse any other agent afterwards."""
        name = check_domain(name)
        now = time.time()

        def write(conn: Connection) -> str:
            conn.execute(
                "INSERT INTO domains (name, agent, created) VALUES (?, ?, ?) ON CONFLICT DO NOTHING", (name, agent, now)
            )
            return str(conn.execute("SELECT agent FROM domains WHERE name = ?", (name,)).fetchone()[0])

        owner = self.db.transaction(write, what=f"domain {name!r}'s owner")
        if owner != agent:
            raise UsageError(
                f"domain {name!r} belongs to agent {owner!r}, not {agent!r}; give this agent its own domain "
                f"(or run it as {owner!r} with --agent)"
            )

    def _owned(self, name: str, agent: str) -> None:
        row = self.conn.execute("SELECT agent FROM domains WHERE name = ?", (check_domain(name),)).fetchone()
        if row is None or row[0] != agent:
            raise UsageError(f"domain {name!r} is not agent {agent!r}'s" + ("" if row else " (no such domain yet)"))

    # ------------------------------------------------------------------ what the agent writes

    def set_status(self, name: str, agent: str, status: object) -> None:
        self._owned(name, agent)
        text = _dump(status, f"domain {name!r} status")
        row = (text, time.time(), name)
        self.db.transaction(
            lambda conn: conn.execute("UPDATE domains SET status = ?, status_at = ? WHERE name = ?", row),
            what=f"domain {name!r}'s status",
        )

    def append(
        self, name: str, entry: object, *, kind: str = "note", run_id: str | None = None, agent: str | None = None
    ) -> bool:
        """Add one changelog entry; the oldest beyond MAX_CHANGELOG are rotated out (and counted). False when this
        run's end was already recorded (a resumed run that stops again)."""
        if agent is not None:
            self._owned(name, agent)
        text = _dump(entry, f"domain {name!r} changelog entry")
        now = time.time()

        def write(conn: Connection) -> bool:
            cursor = conn.execute(
                "INSERT INTO domain_changelog (domain, at, run_id, kind, entry) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                (name, now, run_id, kind, text),
            )
            if cursor.rowcount == 0:
                return False
            gone = conn.execute(
                "DELETE FROM domain_changelog WHERE domain = ? AND seq <= (SELECT seq FROM "
                "domain_changelog WHERE domain = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)",
                (name, name, MAX_CHANGELOG),
            ).rowcount
            if gone:
                conn.execute("UPDATE domains SET rotated = rotated + ? WHERE name = ?", (gone, name))
            return True

        return self.db.transaction(write, what=f"domain {name!r}'s changelog entry")

    def run_ended(self, name: str, agent: str, run_id: str, outcome: str, entry: dict[str, Any]) -> None:
        self._owned(name, agent)
        now = time.time()

        def write(conn: Connection) -> None:
            if self.append(name, entry, kind="run", run_id=run_id):  # joins this transaction
                conn.execute(
                    "UPDATE domains SET last_run = ?, last_outcome = ?, runs = runs + 1 WHERE name = ?",
                    (now, outcome, name),
                )

        self.db.transaction(write, what=f"domain {name!r}'s run end")

    def propose(
        self, name: str, agent: str, key: str, value: object, reason: str | None = None, run_id: str | None = None
    ) -> str:
        self._owned(name, agent)
        key = check_key(key)
        text = _dump(value, f"proposal for {name}.{key}")
        pid = uuid.uuid4().hex[:10]
        row = (
            pid,
            name,
            key,
            text,
            None if reason is None else redact(str(reason))[:MAX_VALUE_CHARS],
            agent,
            run_id,
            time.time(),
        )
        self.db.transaction(
            lambda conn: conn.execute(
                "INSERT INTO domain_proposals (id, domain, key, value, reason, proposed_by, run_id, at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            ),
            what=f"a proposal for domain {name!r}",
        )
        log.info("domain_proposal", domain=name, key=key, proposal=pid)
        return pid

    # ------------------------------------------------------------------ what a person (or the main agent) decides

    def decide(self, name: str, key: str, value: object, *, by: str) -> None:
        name, key = check_domain(name), check_key(key)
        if not isinstance(by, str) or not by.strip():
            raise UsageError("a decision names who made it (--operator NAME)")
        text = _dump(value, f"decision {name}.{key}")
        by = by.strip()
        now = time.time()

        def write(conn: Connection) -> None:
            if conn.execute("SELECT 1 FROM domains WHERE name = ?", (name,)).fetchone() is None:
                raise UsageError(
                    f"no domain {name!r}; it exists once an agent declaring it has run (`sherpa-skills "
                    "domains` lists them)"
                )
            count = conn.execute(
                "SELECT COUNT(*) FROM domain_decisions WHERE domain = ? AND key != ?", (name, key)
            ).fetchone()[0]
            if count >= MAX_DECISIONS:
                raise UsageError(f"domain {name!r} already has {MAX_DECISIONS} decisions; remove or merge some first")
            conn.execute(
                "INSERT INTO domain_decisions (domain, key, value, set_by, at) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT (domain, key) DO UPDATE SET value = excluded.value, "
                "set_by = excluded.set_by, at = excluded.at",
                (name, key, text, by, now),
            )
            self.append(name, {"decision": key, "value": json.loads(text), "by": by}, kind="decision")  # joins

        self.db.transaction(write, what=f"decision {name}.{key}")

    def settle(self, proposal_id: str, *, accept: bool, by: str, note: str | None = None) -> dict[str, Any]:
        """Accept (the decision is updated) or reject an open proposal."""
        row = self.conn.execute(
            "SELECT domain, key, value, status FROM domain_proposals WHERE id = ?", (proposal_id,)
        ).fetchone()
        if row is None:
            raise UsageError(f"no proposal {proposal_id!r}; `sherpa-skills domains` lists the open ones")
        domain, key, value, status = row
        if status != "open":
            raise UsageError(f"proposal {proposal_id} is already {status}")
        if accept:
            self.decide(domain, key, json.loads(value), by=by)
        row = ("accepted" if accept else "rejected", by, time.time(), note, proposal_id)
        self.db.transaction(
            lambda conn: conn.execute(
                "UPDATE domain_proposals SET status = ?, decided_by = ?, decided_at = ?, note = ? WHERE id = ?", row
            ),
            what=f"proposal {proposal_id}'s decision",
        )
        return {
            "id": proposal_id,
            "domain": domain,
            "key": key,
            "value": json.loads(value),
            "status": "accepted" if accept else "rejected",
        }

    # ------------------------------------------------------------------ reading

    def decisions(self, name: str) -> dict[str, Any]:
        return {
            k: json.loads(v)
            for k, v in self.conn.execute(
                "SELECT key, value FROM domain_decisions WHERE domain = ? ORDER BY key", (name,)
            )
        }

    def changelog(self, name: str, limit: int = 50) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT at, run_id, kind, entry FROM domain_changelog WHERE domain = ? ORDER BY seq DESC LIMIT ?",
            (name, limit),
        ).fetchall()
        return [
            {"at": at, "run_id": run_id, "kind": kind, "entry": json.loads(entry)} for at, run_id, kind, entry in rows
        ]

    def proposals(self, name: str | None = None, status: str = "open") -> list[dict[str, Any]]:
        where, args = ("status = ?", [status]) if status != "all" else ("TRUE", [])
        if name is not None:
            where += " AND domain = ?"
            args.append(name)
        rows = self.conn.execute(
            f"SELECT id, domain, key, value, reason, proposed_by, at, status FROM domain_proposals"
            f" WHERE {where} ORDER BY at",
            args,
        ).fetchall()
        return [
            {
                "id": i,
                "domain": d,
                "key": k,
                "value": json.loads(v),
                "reason": r,
                "proposed_by": p,
                "at": at,
                "status": st,
            }
            for i, d, k, v, r, p, at, st in rows
        ]

    def get(self, name: str) -> dict[str, Any]:
        row = self.conn.execute(
            "SELECT name, agent, created, last_run, last_outcome, runs, status, status_at, rotated"
            " FROM domains WHERE name = ?",
            (check_domain(name),),
        ).fetchone()
        if row is None:
            raise UsageError(f"no domain {name!r}; `sherpa-skills domains` lists them")
        return self._row(row)

    def _row(self, row: tuple[Any, ...], now: float | None = None) -> dict[str, Any]:
        name, agent, created, last_run, outcome, runs, status, status_at, rotated = row
        now = now if now is not None else time.time()
        stale = (now - (last_run or created)) / 86400.0 > STALE_DAYS
        return {
            "name": name,
            "agent": agent,
            "created": created,
            "last_run": last_run,
            "last_outcome": outcome,
            "runs": runs,
            "stale": stale,
            "status": None if status is None else json.loads(status),
            "status_at": status_at,
            "rotated": rotated,
            "open_proposals": len(self.proposals(name)),
        }

    def list(self, now: float | None = None) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT name, agent, created, last_run, last_outcome, runs, status, status_at, rotated"
            " FROM domains ORDER BY name"
        ).fetchall()
        return [self._row(r, now) for r in rows]

    def start_context(
        self, name: str, agent: str, briefing: builtins.list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """What the agent is given at run start: bounded, and every value clipped, however large the domain grows."""
        info = self.get(name)
        return {
            "name": name,
            "decisions": {k: _clip(v, START_DECISION_CHARS) for k, v in self.decisions(name).items()},
            "status": None if info["status"] is None else _clip(info["status"], START_STATUS_CHARS),
            "recent": [
                {"kind": c["kind"], "entry": _clip(c["entry"], 200)} for c in self.changelog(name, START_CHANGES)
            ],
            "open_proposals": info["open_proposals"],
            "last_run": info["last_run"],
            "briefing": briefing or [],
        }


def briefing(home: Path | None, agent: str, limit: int = START_BRIEFING) -> list[dict[str, Any]]:
    """The agent's current notes worth knowing at start: principles, then patterns, then episodes, hot before warm;
    cold and superseded ones are left out (they are still searchable)."""
    from ._search import shared_memory

    store = shared_memory(home).store
    rows = store.conn.execute(
        "SELECT a.id, a.text, a.abstraction, COALESCE(a.last_access, a.created), a.confidence, "
        "a.reads FROM memory_artifacts a"
        " WHERE a.agent = ? AND a.superseded_by IS NULL AND (a.abstraction = 'principle' OR "
        "COALESCE(a.last_access, a.created) > ?)"
        " ORDER BY CASE a.abstraction WHEN 'principle' THEN 0 WHEN 'pattern' THEN 1 ELSE 2 END, "
        "COALESCE(a.last_access, a.created) DESC LIMIT ?",
        (agent, time.time() - 61 * 86400.0, limit * 4),
    ).fetchall()
    from ._hygiene import tier

    out = []
    for aid, text, abstraction, last, confidence, reads in rows:
        t = tier(last, confidence=confidence, reads=reads, abstraction=abstraction)
        if t != "cold":
            out.append({"id": aid, "text": _clip(text, 300), "abstraction": abstraction, "tier": t})
    out.sort(key=lambda b: (b["tier"] != "hot",))  # stable: keeps the abstraction order within a tier
    return out[:limit]
