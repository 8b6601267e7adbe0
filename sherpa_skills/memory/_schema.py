"""Shared memory's tables: the migrations that build and upgrade them, with full text on SQLite (FTS5) or PostgreSQL."""

from __future__ import annotations

import sqlite3
import uuid

from ..db.sqlite import execute_script
from ..db.text_search import create_text_index
from ._hygiene import content_hash
from ._sql import MEMORY_TEXT


def m001_memory(conn: sqlite3.Connection) -> None:
    execute_script(
        conn,
        """
        CREATE TABLE memory_artifacts (
            seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, agent TEXT NOT NULL, run_id TEXT,
            scope TEXT NOT NULL CHECK (scope IN ('private', 'shared')), kind TEXT, tags TEXT NOT NULL,
            metadata TEXT NOT NULL, text TEXT NOT NULL, created REAL NOT NULL, indexed INTEGER NOT NULL DEFAULT 0);
        CREATE INDEX memory_artifacts_reader ON memory_artifacts (scope, agent);
        CREATE INDEX memory_artifacts_kind ON memory_artifacts (kind) WHERE kind IS NOT NULL;
        CREATE INDEX memory_artifacts_pending ON memory_artifacts (seq) WHERE indexed = 0;
        CREATE TABLE memory_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """,
    )
    create_text_index(conn, MEMORY_TEXT)
    # Names this store's companion collection, so several homes can share one chroma server without clashing.
    conn.execute("INSERT INTO memory_meta (key, value) VALUES ('store_id', ?)", (uuid.uuid4().hex[:12],))


def m002_hygiene(conn: sqlite3.Connection) -> None:
    """Dedup, supersede, decay and tensions:
    new columns with defaults, so a home written by older code upgrades in place."""
    execute_script(
        conn,
        """
        ALTER TABLE memory_artifacts ADD COLUMN content_hash TEXT;
        ALTER TABLE memory_artifacts ADD COLUMN seen INTEGER NOT NULL DEFAULT 1;
        ALTER TABLE memory_artifacts ADD COLUMN last_seen REAL;
        ALTER TABLE memory_artifacts ADD COLUMN last_access REAL;
        ALTER TABLE memory_artifacts ADD COLUMN reads INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE memory_artifacts ADD COLUMN confidence REAL NOT NULL DEFAULT 0.8;
        ALTER TABLE memory_artifacts ADD COLUMN abstraction TEXT NOT NULL DEFAULT 'episode';
        ALTER TABLE memory_artifacts ADD COLUMN category TEXT;
        ALTER TABLE memory_artifacts ADD COLUMN supersedes TEXT;
        ALTER TABLE memory_artifacts ADD COLUMN superseded_by TEXT;
        ALTER TABLE memory_artifacts ADD COLUMN tier TEXT NOT NULL DEFAULT 'hot';
        CREATE TABLE memory_tensions (
            id TEXT PRIMARY KEY, a TEXT NOT NULL, b TEXT NOT NULL, scope TEXT NOT NULL, agent TEXT,
            reason TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved')), kept TEXT,
            created REAL NOT NULL,
            resolved REAL, resolved_by TEXT, UNIQUE (a, b));
        CREATE INDEX memory_tensions_open ON memory_tensions (status, scope, agent);
        CREATE TABLE memory_links (src TEXT NOT NULL, dst TEXT NOT NULL, relation TEXT NOT NULL, score REAL,
            created REAL NOT NULL, PRIMARY KEY (src, dst, relation));
        CREATE TABLE memory_log (seq INTEGER PRIMARY KEY, at REAL NOT NULL, action TEXT NOT NULL, artifact TEXT,
            operator TEXT NOT NULL, reason TEXT, detail TEXT NOT NULL);
    """,
    )
    rows = conn.execute("SELECT seq, text, scope, agent, kind, created FROM memory_artifacts").fetchall()
    conn.executemany(
        "UPDATE memory_artifacts SET content_hash = ?, last_access = ? WHERE seq = ?",
        [(content_hash(text, scope, agent, kind), created, seq) for seq, text, scope, agent, kind, created in rows],
    )
    execute_script(
        conn,
        """
        CREATE INDEX memory_artifacts_hash ON memory_artifacts (content_hash) WHERE superseded_by IS NULL;
        CREATE INDEX memory_artifacts_access ON memory_artifacts (last_access);
    """,
    )


MIGRATIONS = [m001_memory, m002_hygiene]
