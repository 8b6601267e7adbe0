"""The run store's tables: the migrations that build and upgrade them, in order, and which tables hold a run's rows."""

from __future__ import annotations

import sqlite3

from ..db.sqlite import execute_script


def m001_runs(conn: sqlite3.Connection) -> None:
    execute_script(
        conn,
        """
        CREATE TABLE runs (
            run_id TEXT PRIMARY KEY, workflow TEXT NOT NULL, workflow_path TEXT, spec_hash TEXT,
            status TEXT NOT NULL, state TEXT NOT NULL, tick INTEGER NOT NULL, counters TEXT NOT NULL,
            error TEXT, inputs TEXT NOT NULL, created REAL NOT NULL, updated REAL NOT NULL);
        CREATE TABLE run_trajectory (
            id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, tick INTEGER NOT NULL, state TEXT NOT NULL,
            trigger TEXT, source TEXT, decided_by TEXT NOT NULL, at REAL NOT NULL);
        CREATE INDEX run_trajectory_run ON run_trajectory (run_id, id);
        CREATE TABLE run_log (
            id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, tick INTEGER NOT NULL, action TEXT NOT NULL,
            inputs TEXT NOT NULL, outputs TEXT, status TEXT NOT NULL, started REAL NOT NULL,
            duration_ms REAL NOT NULL, tokens INTEGER NOT NULL, cost REAL NOT NULL, error TEXT);
        CREATE INDEX run_log_run ON run_log (run_id, id);
        CREATE TABLE run_context (
            id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, tick INTEGER NOT NULL, key TEXT NOT NULL, value TEXT);
        CREATE INDEX run_context_run ON run_context (run_id, id);
        CREATE TABLE run_intents (
            run_id TEXT NOT NULL, tick INTEGER NOT NULL, seq INTEGER NOT NULL, action TEXT NOT NULL,
            started REAL NOT NULL, PRIMARY KEY (run_id, tick, seq));
    """,
    )


def m002_run_events(conn: sqlite3.Connection) -> None:
    """Events a run consumed ('in': the dedupe record) and emitted ('out': the outbox), written with the tick."""
    execute_script(
        conn,
        """
        CREATE TABLE run_events (
            run_id TEXT NOT NULL, direction TEXT NOT NULL, event_id TEXT NOT NULL, tick INTEGER NOT NULL,
            name TEXT NOT NULL, outcome TEXT NOT NULL, body TEXT NOT NULL, published INTEGER NOT NULL DEFAULT 0,
            at REAL NOT NULL, PRIMARY KEY (run_id, direction, event_id));
        CREATE INDEX run_events_outbox ON run_events (run_id) WHERE direction = 'out' AND published = 0;
    """,
    )


def m003_intent_results(conn: sqlite3.Connection) -> None:
    """An action's result is recorded the moment it completes,
    so a crash later in the same tick does not run it again."""
    execute_script(
        conn,
        """
        ALTER TABLE run_intents ADD COLUMN done INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE run_intents ADD COLUMN result TEXT;
        ALTER TABLE run_intents ADD COLUMN decision TEXT;
    """,
    )


def m004_repeated_actions(conn: sqlite3.Connection) -> None:
    """An action run again because a crash cut it short is marked, so `show` can say it may have run twice."""
    conn.execute("ALTER TABLE run_log ADD COLUMN repeated INTEGER NOT NULL DEFAULT 0")


def m005_hook_state(conn: sqlite3.Connection) -> None:
    """What a run's hooks keep with it (the replaying hook's match and where its replay stands), by hook name:
    whichever process continues the run gives it back to them."""
    conn.execute("ALTER TABLE runs ADD COLUMN hooks TEXT")


def m006_run_machines(conn: sqlite3.Connection) -> None:
    """What a run executed, kept with it: each machine (workflow text and the files it loaded) once per spec hash,
    the ticks each run ran under it, and where a fork came from."""
    execute_script(
        conn,
        """
        CREATE TABLE run_specs (spec_hash TEXT PRIMARY KEY, body TEXT NOT NULL, created REAL NOT NULL);
        CREATE TABLE run_machines (
            run_id TEXT NOT NULL, from_tick INTEGER NOT NULL, spec_hash TEXT NOT NULL,
            PRIMARY KEY (run_id, from_tick));
        CREATE TABLE run_forks (
            run_id TEXT PRIMARY KEY, parent_run_id TEXT NOT NULL, at_tick INTEGER NOT NULL, created REAL NOT NULL);
        CREATE INDEX run_forks_parent ON run_forks (parent_run_id);
    """,
    )


def m007_team_tasks(conn: sqlite3.Connection) -> None:
    """Nothing now: team tasks are the agents layer's own component (agents/task_store.py); the name stays, as stores
    migrated before record it, and the table they made then stays theirs."""


def m008_run_origin(conn: sqlite3.Connection) -> None:
    """The machine and home folder a run was started in: its log file is there, and another machine sharing the
    database says so rather than naming a path it does not have."""
    execute_script(
        conn,
        """
        ALTER TABLE runs ADD COLUMN host TEXT;
        ALTER TABLE runs ADD COLUMN home TEXT;
    """,
    )


MIGRATIONS = [
    m001_runs,
    m002_run_events,
    m003_intent_results,
    m004_repeated_actions,
    m005_hook_state,
    m006_run_machines,
    m007_team_tasks,
    m008_run_origin,
]
RUN_TABLES = (
    "run_trajectory",
    "run_log",
    "run_context",
    "run_intents",
    "run_events",
    "run_machines",
    "run_forks",
)  # a run's own rows, beside `runs`
