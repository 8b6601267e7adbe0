"""Imported session commands in the home's store.db: files read (how far), sessions, commands.

`session_commands.id` is AUTOINCREMENT, so ids only grow and never come back after a delete: the
heartbeat keeps the highest id it has mined as its watermark and asks for `commands_since(watermark)`.
A command is stored once per (source, call key) however often, and from wherever, its file is read: agents' call
ids are unique across sessions (a resumed or forked session that copies earlier calls does not store them twice),
and history entries' keys start with their session.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..db.connection import Connection
from ..db.on_database import OnDatabase
from ..db.sqlite import execute_script
from ._records import OUTCOMES, CommandRecord

if TYPE_CHECKING:
    from ._models import ImportedFile, SessionCommand, SessionSummary

COMPONENT = "sessions"


def m001_sessions(conn: sqlite3.Connection) -> None:
    execute_script(
        conn,
        """
        CREATE TABLE session_files (
            id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, format TEXT NOT NULL,
            size INTEGER NOT NULL DEFAULT 0, mtime REAL, "offset" INTEGER NOT NULL DEFAULT 0,
            lines_read INTEGER NOT NULL DEFAULT 0, lines_skipped INTEGER NOT NULL DEFAULT 0,
            commands INTEGER NOT NULL DEFAULT 0, succeeded INTEGER NOT NULL DEFAULT 0,
            failed INTEGER NOT NULL DEFAULT 0,
            rejected INTEGER NOT NULL DEFAULT 0, unknown INTEGER NOT NULL DEFAULT 0,
            head_hash TEXT, tail_hash TEXT, content_hash TEXT, anchor TEXT NOT NULL DEFAULT '[]',
            state TEXT NOT NULL DEFAULT '{}', pending INTEGER NOT NULL DEFAULT 0, resets INTEGER NOT NULL DEFAULT 0,
            version INTEGER NOT NULL DEFAULT 0,
            first_imported REAL, last_imported REAL, last_error TEXT);
        CREATE TABLE imported_sessions (
            id INTEGER PRIMARY KEY, source TEXT NOT NULL, session_key TEXT NOT NULL,
            first_ts REAL, last_ts REAL, cwd TEXT,
            commands INTEGER NOT NULL DEFAULT 0, succeeded INTEGER NOT NULL DEFAULT 0,
            failed INTEGER NOT NULL DEFAULT 0,
            rejected INTEGER NOT NULL DEFAULT 0, unknown INTEGER NOT NULL DEFAULT 0,
            next_seq INTEGER NOT NULL DEFAULT 1, created REAL NOT NULL, updated REAL NOT NULL,
            UNIQUE (source, session_key));
        CREATE TABLE session_commands (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_ref INTEGER NOT NULL REFERENCES imported_sessions (id),
            file_id INTEGER NOT NULL REFERENCES session_files (id),
            source TEXT NOT NULL, session_id TEXT NOT NULL, seq INTEGER NOT NULL, call_key TEXT NOT NULL,
            line INTEGER, ts REAL, duration REAL, cwd TEXT, command TEXT NOT NULL,
            outcome TEXT NOT NULL CHECK (outcome IN ('success', 'failure', 'rejected', 'unknown')),
            exit_code INTEGER, output TEXT, tool TEXT, agent TEXT, sidechain INTEGER NOT NULL DEFAULT 0,
            description TEXT, info TEXT NOT NULL DEFAULT '{}', imported REAL NOT NULL,
            UNIQUE (source, call_key));
        CREATE INDEX session_commands_session ON session_commands (session_ref, seq);
        CREATE INDEX session_commands_file ON session_commands (file_id);
    """,
    )


def m002_live_sessions(conn: sqlite3.Connection) -> None:
    """Sessions seen live through an agent's hooks: when they started, their last turn (Stop), and their end."""
    execute_script(
        conn,
        """
        CREATE TABLE live_sessions (
            id INTEGER PRIMARY KEY, source TEXT NOT NULL, session_key TEXT NOT NULL,
            transcript_path TEXT, cwd TEXT, started REAL NOT NULL, last_event REAL NOT NULL,
            checkpoints INTEGER NOT NULL DEFAULT 0, events INTEGER NOT NULL DEFAULT 0,
            ended REAL, end_reason TEXT,
            UNIQUE (source, session_key));
    """,
    )


MIGRATIONS = [m001_sessions, m002_live_sessions]

_COUNT_COLUMN = {"success": "succeeded", "failure": "failed", "rejected": "rejected", "unknown": "unknown"}


class Conflict(Exception):
    """Another import wrote this file's row since we read it; the caller re-reads and retries."""


@dataclass
class FileRow:
    id: int | None
    path: str
    format: str
    size: int = 0
    mtime: float | None = None
    offset: int = 0
    lines_read: int = 0
    lines_skipped: int = 0
    head_hash: str | None = None
    tail_hash: str | None = None
    content_hash: str | None = None
    anchor: list[str] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    resets: int = 0
    version: int = 0
    last_error: str | None = None


@dataclass
class Added:
    """What one commit added."""

    commands: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    sessions: set[tuple[str, str]] = field(default_factory=set)


# "offset" quoted: a reserved word in PostgreSQL (SQLite takes it either way).
_FILE_COLUMNS = (
    'id, path, format, size, mtime, "offset", lines_read, lines_skipped, head_hash, tail_hash, content_hash, '
    "anchor, state, resets, version, last_error"
)
_COMMAND_COLUMNS = (
    "c.id, c.source, f.path, c.session_id, c.seq, c.ts, c.cwd, c.command, c.outcome, c.exit_code, c.output, "
    "c.duration, c.tool, c.agent, c.sidechain, c.description, c.line, c.call_key, c.info, c.imported"
)


_SESSION_COLUMNS = "session_key, source, cwd, first_ts, last_ts, commands, succeeded, failed, rejected, unknown"


def _session(row: tuple[Any, ...]) -> SessionSummary:
    from ._models import SessionSummary

    key, source, cwd, first, last, commands, ok, failed, rejected, unknown = row
    return SessionSummary(
        id=key,
        agent=source,
        cwd=cwd,
        started=first,
        ended=last,
        commands=commands,
        succeeded=ok,
        failed=failed,
        rejected=rejected,
        unknown=unknown,
    )


def _command(row: tuple[Any, ...]) -> SessionCommand:
    from ._models import SessionCommand  # pydantic: the live hook's process never needs it

    (
        cid,
        source,
        path,
        session,
        seq,
        ts,
        cwd,
        command,
        outcome,
        code,
        output,
        duration,
        tool,
        agent,
        sidechain,
        description,
        line,
        key,
        info,
        imported,
    ) = row
    return SessionCommand(
        id=cid,
        source=source,
        source_file=path,
        session_id=session,
        seq=seq,
        timestamp=ts,
        cwd=cwd,
        command=command,
        outcome=outcome,
        exit_code=code,
        output=output,
        duration=duration,
        tool=tool,
        agent=agent,
        sidechain=bool(sidechain),
        description=description,
        line=line,
        call_id=key,
        info=json.loads(info) if info else {},
        imported=imported,
    )


class SessionStore(OnDatabase):
    """The imported sessions of one home (its store.db, shared with the other components)."""

    component = COMPONENT
    migrations = MIGRATIONS

    # ------------------------------------------------------------------ reading, for mining and the heartbeat

    def commands_since(self, watermark: int, limit: int | None = None) -> list[SessionCommand]:
        """Commands with id > `watermark`, oldest first (at most `limit`)."""
        sql = (
            f"SELECT {_COMMAND_COLUMNS} FROM session_commands c JOIN session_files f ON f.id = c.file_id "
            "WHERE c.id > ? ORDER BY c.id"
        )
        params: tuple[Any, ...] = (int(watermark),)
        if limit is not None:
            sql += " LIMIT ?"
            params += (int(limit),)
        return [_command(row) for row in self.conn.execute(sql, params)]

    def session_commands(
        self, session_id: str, source: str | None = None, *, after_seq: int = 0
    ) -> list[SessionCommand]:
        """One session's commands in sequence order (to see what came before the new ones)."""
        sql = (
            f"SELECT {_COMMAND_COLUMNS} FROM session_commands c JOIN session_files f ON f.id = c.file_id "
            "WHERE c.session_id = ? AND c.seq > ?"
        )
        params: tuple[Any, ...] = (session_id, after_seq)
        if source is not None:
            sql += " AND c.source = ?"
            params += (source,)
        return [_command(row) for row in self.conn.execute(sql + " ORDER BY c.source, c.seq", params)]

    def sessions(self, limit: int | None = None) -> list[SessionSummary]:
        """Sessions with commands, the latest started first (those without a time last)."""
        sql = (
            f"SELECT {_SESSION_COLUMNS} FROM imported_sessions WHERE commands > 0 "
            "ORDER BY first_ts IS NULL, first_ts DESC, id DESC"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [_session(row) for row in self.conn.execute(sql)]

    def find_session(self, ref: str) -> SessionSummary:
        """The session `ref` names: its id, `AGENT:ID`, or an unambiguous start of its id (as `sessions list` shows it).

        Raises `UsageError` (the person typed it: bad usage, as an unknown run id is) naming what was looked for, or the
        candidates when the start fits several."""
        from ..errors import UsageError

        ref = ref.strip()
        rows = self.conn.execute(
            f"SELECT {_SESSION_COLUMNS} FROM imported_sessions WHERE commands > 0 AND (session_key = ? "
            "OR source || ':' || session_key = ?)",
            (ref, ref),
        ).fetchall()
        if not rows and len(ref) >= 4:  # a prefix, as a short commit id is one; LIKE's wildcards escaped
            pattern = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            rows = self.conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM imported_sessions WHERE commands > 0 "
                "AND session_key LIKE ? ESCAPE '\\' LIMIT 6",
                (pattern,),
            ).fetchall()
        if len(rows) == 1:
            return _session(rows[0])
        if not rows:
            raise UsageError(f"no session '{ref}' (`sherpa-skills sessions list` shows the imported ones)")
        shown = ", ".join(f"{r[1]}:{r[0]}" for r in rows[:5])
        raise UsageError(f"'{ref}' fits several sessions ({shown}): give more of the id")

    def max_command_id(self) -> int:
        return int(self.conn.execute("SELECT COALESCE(MAX(id), 0) FROM session_commands").fetchone()[0])

    def count_sessions(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM imported_sessions WHERE commands > 0").fetchone()[0])

    def count_commands(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM session_commands").fetchone()[0])

    def files(self) -> list[ImportedFile]:
        from ._models import ImportedFile

        sessions = dict(
            self.conn.execute(
                "SELECT file_id, COUNT(DISTINCT session_ref) FROM session_commands GROUP BY file_id"
            ).fetchall()
        )
        rows = self.conn.execute(
            'SELECT id, path, format, size, mtime, "offset", lines_read, lines_skipped, commands, '
            "succeeded, failed, rejected, "
            "unknown, content_hash, first_imported, last_imported, pending, last_error FROM session_files ORDER BY path"
        ).fetchall()
        out = []
        for (
            fid,
            path,
            fmt,
            size,
            mtime,
            offset,
            lines,
            skipped,
            commands,
            ok,
            failed,
            rejected,
            unknown,
            digest,
            first,
            last,
            pending,
            error,
        ) in rows:
            out.append(
                ImportedFile(
                    path=path,
                    format=fmt,
                    size=size,
                    mtime=mtime,
                    offset=offset,
                    lines_read=lines,
                    lines_skipped=skipped,
                    commands=commands,
                    succeeded=ok,
                    failed=failed,
                    rejected=rejected,
                    unknown=unknown,
                    sessions=sessions.get(fid, 0),
                    content_hash=digest,
                    first_imported=first,
                    last_imported=last,
                    pending_calls=pending,
                    last_error=error,
                )
            )
        return out

    # ------------------------------------------------------------------ writing, for the importer

    def quick_rows(self) -> dict[str, tuple[str, int, float | None, int, int]]:
        """path -> (format, size, mtime, offset, pending calls) of every file,
        to skip unchanged ones without reading them."""
        return {
            row[0]: row[1:]
            for row in self.conn.execute('SELECT path, format, size, mtime, "offset", pending FROM session_files')
        }

    def file_row(self, path: str) -> FileRow | None:
        row = self.conn.execute(f"SELECT {_FILE_COLUMNS} FROM session_files WHERE path = ?", (path,)).fetchone()
        if row is None:
            return None
        (
            fid,
            fpath,
            fmt,
            size,
            mtime,
            offset,
            lines,
            skipped,
            head,
            tail,
            digest,
            anchor,
            state,
            resets,
            version,
            error,
        ) = row
        return FileRow(
            id=fid,
            path=fpath,
            format=fmt,
            size=size,
            mtime=mtime,
            offset=offset,
            lines_read=lines,
            lines_skipped=skipped,
            head_hash=head,
            tail_hash=tail,
            content_hash=digest,
            anchor=json.loads(anchor or "[]"),
            state=json.loads(state or "{}"),
            resets=resets,
            version=version,
            last_error=error,
        )

    def commit(self, row: FileRow, records: list[CommandRecord], *, source: str) -> Added:
        """Store `records` and the file's new position in one transaction.

        Raises `Conflict` when the file's row changed since `row` was read (another import got there first).
        """
        now = time.time()
        lock = self.db.for_update()

        def write(conn: Connection) -> tuple[Added, int | None]:
            added = Added()
            file_id = row.id  # row is changed only once the transaction is committed: a retry starts from it again
            current = conn.execute(
                "SELECT id, version FROM session_files WHERE path = ?" + lock, (row.path,)
            ).fetchone()
            if (current is None) != (row.id is None) or (current is not None and current[1] != row.version):
                raise Conflict(row.path)
            if row.id is None:
                inserted = conn.execute(
                    "INSERT INTO session_files (path, format, first_imported) VALUES (?, ?, ?)"
                    " ON CONFLICT (path) DO NOTHING RETURNING id",
                    (row.path, row.format, now),
                ).fetchone()
                if inserted is None:  # another machine's import created it since the SELECT above
                    raise Conflict(row.path)
                file_id = inserted[0]
            sessions: dict[str, list[Any]] = {}
            file_counts = dict.fromkeys(OUTCOMES, 0)
            for record in sorted(records, key=lambda r: r.line or 0):
                session = sessions.get(record.session_id)
                if session is None:
                    conn.execute(
                        "INSERT INTO imported_sessions (source, session_key, created, "
                        "updated) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                        (source, record.session_id, now, now),
                    )
                    found = conn.execute(
                        "SELECT id, next_seq FROM imported_sessions WHERE source = ? AND session_key = ?" + lock,
                        (source, record.session_id),
                    ).fetchone()
                    # [id, next seq, first ts, last ts, first cwd, counts]
                    session = sessions[record.session_id] = [
                        found[0],
                        found[1],
                        None,
                        None,
                        None,
                        dict.fromkeys(OUTCOMES, 0),
                    ]
                cursor = conn.execute(
                    "INSERT INTO session_commands (session_ref, file_id, source, session_id, seq, "
                    "call_key, line, ts, "
                    "duration, cwd, command, outcome, exit_code, output, tool, agent, sidechain, "
                    "description, info, imported) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT DO NOTHING",
                    (
                        session[0],
                        file_id,
                        source,
                        record.session_id,
                        session[1],
                        record.key,
                        record.line,
                        record.timestamp,
                        record.duration,
                        record.cwd,
                        record.command,
                        record.outcome,
                        record.exit_code,
                        record.output,
                        record.tool,
                        record.agent,
                        int(record.sidechain),
                        record.description,
                        json.dumps(record.info, separators=(",", ":"), default=str),
                        now,
                    ),
                )
                if cursor.rowcount != 1:
                    continue  # already stored (the same file read again, or a copy of it elsewhere)
                session[1] += 1
                if record.timestamp is not None:
                    session[2] = record.timestamp if session[2] is None else min(session[2], record.timestamp)
                    session[3] = record.timestamp if session[3] is None else max(session[3], record.timestamp)
                if session[4] is None and record.cwd:
                    session[4] = record.cwd
                session[5][record.outcome] += 1
                file_counts[record.outcome] += 1
                added.counts[record.outcome] += 1
                added.commands += 1
                added.sessions.add((source, record.session_id))
            for ref, next_seq, first, last, cwd, counts in sessions.values():
                conn.execute(
                    "UPDATE imported_sessions SET next_seq = ?, first_ts = CASE WHEN first_ts IS NULL OR ? < "
                    "first_ts THEN ? ELSE first_ts END, "
                    "last_ts = CASE WHEN last_ts IS NULL OR ? > last_ts THEN ? ELSE last_ts END, "
                    "cwd = COALESCE(cwd, ?), "
                    "commands = commands + ?, succeeded = succeeded + ?, failed = failed + ?, rejected = rejected + ?, "
                    "unknown = unknown + ?, updated = ? WHERE id = ?",
                    (
                        next_seq,
                        first,
                        first,
                        last,
                        last,
                        cwd,
                        sum(counts.values()),
                        counts["success"],
                        counts["failure"],
                        counts["rejected"],
                        counts["unknown"],
                        now,
                        ref,
                    ),
                )
            conn.execute(
                'UPDATE session_files SET format = ?, size = ?, mtime = ?, "offset" = ?, '
                "lines_read = ?, lines_skipped = ?, "
                "commands = commands + ?, succeeded = succeeded + ?, failed = failed + ?, "
                "rejected = rejected + ?, unknown = unknown + ?, "
                "head_hash = ?, tail_hash = ?, content_hash = ?, anchor = ?, state = ?, pending = ?, "
                "resets = ?, version = version + 1, last_imported = ?, last_error = ? WHERE id = ?",
                (
                    row.format,
                    row.size,
                    row.mtime,
                    row.offset,
                    row.lines_read,
                    row.lines_skipped,
                    sum(file_counts.values()),
                    file_counts["success"],
                    file_counts["failure"],
                    file_counts["rejected"],
                    file_counts["unknown"],
                    row.head_hash,
                    row.tail_hash,
                    row.content_hash,
                    json.dumps(row.anchor),
                    json.dumps(row.state, separators=(",", ":"), default=str),
                    len(row.state.get("pending") or {}),
                    row.resets,
                    now,
                    row.last_error,
                    file_id,
                ),
            )
            return added, file_id

        added, row.id = self.db.transaction(write, what=f"the commands imported from {row.path}")
        row.version += 1
        return added
