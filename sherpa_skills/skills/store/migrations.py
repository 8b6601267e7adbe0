"""The skill store's schema, one migration per change (m001…m017), and the list `migrate` applies in order."""

from __future__ import annotations

import sqlite3

from ...db import procedure_text
from ...db.change_stamps import ChangeStamps, create_change_stamps
from ...db.sqlite import execute_script
from .signatures import learning_key, path_of, stored_decisions


def m001_skills(conn: sqlite3.Connection) -> None:
    execute_script(
        conn,
        """
        CREATE TABLE procedures (
            id TEXT PRIMARY KEY, task_type TEXT NOT NULL, description TEXT NOT NULL, source TEXT NOT NULL,
            tags TEXT NOT NULL, version INTEGER NOT NULL, status TEXT NOT NULL,
            needs_relearning INTEGER NOT NULL DEFAULT 0,
            success_count INTEGER NOT NULL DEFAULT 0, failure_count INTEGER NOT NULL DEFAULT 0,
            signature TEXT NOT NULL, steps TEXT NOT NULL, preconditions TEXT NOT NULL, postconditions TEXT NOT NULL,
            context TEXT NOT NULL, planned_tokens INTEGER NOT NULL DEFAULT 0,
            planned_llm_calls INTEGER NOT NULL DEFAULT 0,
            created REAL NOT NULL, updated REAL NOT NULL);
        CREATE INDEX procedures_signature ON procedures (signature);
        CREATE INDEX procedures_task_type ON procedures (task_type);
        CREATE TABLE procedure_versions (
            procedure_id TEXT NOT NULL REFERENCES procedures (id) ON DELETE CASCADE, version INTEGER NOT NULL,
            signature TEXT NOT NULL, steps TEXT NOT NULL, preconditions TEXT NOT NULL, postconditions TEXT NOT NULL,
            context TEXT NOT NULL, source TEXT NOT NULL, planned_tokens INTEGER NOT NULL,
            planned_llm_calls INTEGER NOT NULL,
            success_count INTEGER NOT NULL DEFAULT 0, failure_count INTEGER NOT NULL DEFAULT 0, created REAL NOT NULL,
            PRIMARY KEY (procedure_id, version));
        CREATE TABLE executions (
            id INTEGER PRIMARY KEY, procedure_id TEXT NOT NULL, version INTEGER NOT NULL, started REAL NOT NULL,
            ended REAL NOT NULL, outcome TEXT NOT NULL, diverged_step INTEGER, reason TEXT, tokens INTEGER NOT NULL,
            llm_calls INTEGER NOT NULL, run_id TEXT);
        CREATE INDEX executions_procedure ON executions (procedure_id, version, id);
        CREATE TABLE learnings (
            id INTEGER PRIMARY KEY, task_type TEXT, procedure_id TEXT, command TEXT NOT NULL, error TEXT NOT NULL,
            exit_code INTEGER, source TEXT NOT NULL, created REAL NOT NULL);
        CREATE INDEX learnings_task ON learnings (task_type, id);
        CREATE TABLE skill_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
        INSERT INTO skill_meta (key, value) VALUES ('generation', 0);
    """,
    )
    procedure_text.create_index(conn)


def m002_fts_by_rowid(conn: sqlite3.Connection) -> None:
    """FTS rows keyed by the procedure's rowid: deleting one by an UNINDEXED column scanned the whole table."""
    procedure_text.rebuild_index(conn)


def m003_learnings_dedup(conn: sqlite3.Connection) -> None:
    """Learnings count repeats (`seen`, `last_seen`) instead of piling up copies; existing copies are folded into
    their oldest row."""
    execute_script(
        conn,
        """
        ALTER TABLE learnings ADD COLUMN key TEXT;
        ALTER TABLE learnings ADD COLUMN seen INTEGER NOT NULL DEFAULT 1;
        ALTER TABLE learnings ADD COLUMN last_seen REAL;
    """,
    )
    first: dict[str, int] = {}
    for rowid, task_type, command, error, created in conn.execute(
        "SELECT id, task_type, command, error, created FROM learnings ORDER BY id"
    ).fetchall():
        key = learning_key(task_type, command, error)
        if key in first:
            conn.execute(
                "UPDATE learnings SET seen = seen + 1, last_seen = MAX(COALESCE(last_seen, created), ?) WHERE id = ?",
                (created, first[key]),
            )
            conn.execute("DELETE FROM learnings WHERE id = ?", (rowid,))
        else:
            first[key] = rowid
            conn.execute("UPDATE learnings SET key = ?, last_seen = created WHERE id = ?", (key, rowid))
    conn.execute("CREATE UNIQUE INDEX learnings_key ON learnings (key)")


def m004_one_procedure_per_signature(conn: sqlite3.Connection) -> None:
    """The same steps are one procedure per task type; duplicates made before this keep a marked signature."""
    conn.execute(
        "UPDATE procedures SET signature = signature || '~' || rowid WHERE rowid NOT IN"
        " (SELECT MIN(rowid) FROM procedures GROUP BY task_type, signature)"
    )
    execute_script(conn, "CREATE UNIQUE INDEX procedures_task_signature ON procedures (task_type, signature);")


def m005_trajectory_procedures(conn: sqlite3.Connection) -> None:
    """Procedures of a workflow's decisions beside shell ones: every existing row is a shell procedure."""
    execute_script(
        conn,
        """
        ALTER TABLE procedures ADD COLUMN kind TEXT NOT NULL DEFAULT 'shell';
        ALTER TABLE procedures ADD COLUMN decisions TEXT NOT NULL DEFAULT '[]';
        ALTER TABLE procedure_versions ADD COLUMN decisions TEXT NOT NULL DEFAULT '[]';
    """,
    )


def m006_learning_about(conn: sqlite3.Connection) -> None:
    """What a failed command was for (the agent's description, the task, its folder): what a task finds it by."""
    execute_script(conn, "ALTER TABLE learnings ADD COLUMN about TEXT NOT NULL DEFAULT '';")


def m007_promotions(conn: sqlite3.Connection) -> None:
    """Every promotion: who and when, and where it opened the version's fresh evidence window (executions after
    `after_execution` count towards health), with the counts and health it left behind."""
    execute_script(
        conn,
        """
        CREATE TABLE promotions (
            id INTEGER PRIMARY KEY, procedure_id TEXT NOT NULL, version INTEGER NOT NULL, promoted_at REAL NOT NULL,
            promoted_by TEXT NOT NULL, after_execution INTEGER NOT NULL, status_before TEXT NOT NULL,
            health_before TEXT NOT NULL,
            success_before INTEGER NOT NULL, failure_before INTEGER NOT NULL, executions_before INTEGER NOT NULL);
        CREATE INDEX promotions_procedure ON promotions (procedure_id, version, id);
    """,
    )


def m008_aliases(conn: sqlite3.Connection) -> None:
    """Answers a judge gave to `needs-confirmation`: a confirmed wording becomes an alias of the procedure (its
    redacted, parametrised text, folded key words, and vector: derived, re-embedded when missing), a refused pair is
    remembered. `scope` is the task type the match was limited to ('' for none): an answer holds only there."""
    execute_script(
        conn,
        """
        CREATE TABLE aliases (
            id INTEGER PRIMARY KEY, procedure_id TEXT NOT NULL, task_type TEXT NOT NULL, scope TEXT NOT NULL,
            text TEXT NOT NULL, key TEXT NOT NULL, confirmed_by TEXT NOT NULL, created REAL NOT NULL,
            vector BLOB, embedder TEXT);
        CREATE UNIQUE INDEX aliases_unique ON aliases (procedure_id, scope, key);
        CREATE TABLE rejections (
            id INTEGER PRIMARY KEY, procedure_id TEXT NOT NULL, scope TEXT NOT NULL, text TEXT NOT NULL,
            key TEXT NOT NULL, rejected_by TEXT NOT NULL, created REAL NOT NULL);
        CREATE UNIQUE INDEX rejections_unique ON rejections (key, scope, procedure_id);
        INSERT INTO skill_meta (key, value) VALUES ('answers', 0) ON CONFLICT DO NOTHING;
    """,
    )


def m009_decision_examples(conn: sqlite3.Connection) -> None:
    """The decision memory (skills/decide/): every decision a workflow's LLM took, as a labelled example of its
    (workflow, state) — what the decision saw (features, the path of decisions before it, the task's wording and
    vector) and what it chose (trigger, parametrised arguments) — and the branches a procedure's runs took when an
    exception made them leave it (a branch is not a new version: the routine stays the procedure)."""
    execute_script(
        conn,
        """
        CREATE TABLE decision_examples (
            id INTEGER PRIMARY KEY, workflow TEXT NOT NULL, state TEXT NOT NULL, trigger TEXT NOT NULL,
            args TEXT NOT NULL, features TEXT NOT NULL, path TEXT NOT NULL, task TEXT NOT NULL,
            vector BLOB, embedder TEXT, run_id TEXT, created REAL NOT NULL);
        CREATE INDEX decision_examples_at ON decision_examples (workflow, id);
        CREATE TABLE procedure_branches (
            procedure_id TEXT NOT NULL, signature TEXT NOT NULL, step INTEGER, state TEXT, reason TEXT NOT NULL,
            decisions TEXT NOT NULL, runs INTEGER NOT NULL, first_run TEXT, last_run TEXT, first_seen REAL NOT NULL,
            last_seen REAL NOT NULL, PRIMARY KEY (procedure_id, signature));
    """,
    )


def m010_evidence_sources(conn: sqlite3.Connection) -> None:
    """Counts remember their source (docs: "Evidence has a source"). What a home counted before is kept and marked
    legacy — an upgraded home replays what it replayed — except a candidate's counts (mining support, an agent's
    reports, an import's numbers), which become what they always were: claims. `claims` keeps each claim, who made it;
    `proven` marks a version whose counted confidence reached the replay threshold or that a person promoted (from
    then on its health alone decides)."""
    execute_script(
        conn,
        """
        ALTER TABLE procedures ADD COLUMN claimed_successes INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE procedures ADD COLUMN claimed_failures INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE procedures ADD COLUMN legacy_successes INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE procedures ADD COLUMN legacy_failures INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE procedures ADD COLUMN proven INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE claims (
            id INTEGER PRIMARY KEY, procedure_id TEXT NOT NULL, version INTEGER NOT NULL, source TEXT NOT NULL,
            claimed_by TEXT NOT NULL, successes INTEGER NOT NULL, failures INTEGER NOT NULL, note TEXT,
            created REAL NOT NULL);
        CREATE INDEX claims_procedure ON claims (procedure_id, id);
        UPDATE procedures SET legacy_successes = success_count, legacy_failures = failure_count
            WHERE status = 'active';
        UPDATE procedures SET claimed_successes = success_count, claimed_failures = failure_count, success_count = 0,
            failure_count = 0 WHERE status != 'active';
        UPDATE procedure_versions SET success_count = 0, failure_count = 0
            WHERE procedure_id IN (SELECT id FROM procedures WHERE status != 'active');
        UPDATE procedures SET proven = 1 WHERE status = 'active' AND (EXISTS (SELECT 1 FROM promotions m
            WHERE m.procedure_id = procedures.id AND m.version = procedures.version)
            OR success_count >= 4 * (failure_count + 0.4));
    """,
    )


def m011_calibrated_decisions(conn: sqlite3.Connection) -> None:
    """The decision memory's calibration (skills/decide/head.py): each example keeps the head's score when the memory
    abstained there and whether its guess was the model's decision (a calibration point), and what the model's
    decision cost; an answer later contradicted is a wrong point; each run's answered decisions are counted with the
    tokens they are estimated to have saved."""
    execute_script(
        conn,
        """
        ALTER TABLE decision_examples ADD COLUMN score REAL;
        ALTER TABLE decision_examples ADD COLUMN hit INTEGER;
        ALTER TABLE decision_examples ADD COLUMN tokens INTEGER;
        CREATE TABLE decision_errors (
            id INTEGER PRIMARY KEY, workflow TEXT NOT NULL, state TEXT NOT NULL, score REAL NOT NULL,
            why TEXT NOT NULL, created REAL NOT NULL);
        CREATE INDEX decision_errors_at ON decision_errors (workflow, id);
        CREATE TABLE decision_answers (
            id INTEGER PRIMARY KEY, workflow TEXT NOT NULL, run_id TEXT, answered INTEGER NOT NULL,
            tokens_saved INTEGER NOT NULL, created REAL NOT NULL);
    """,
    )


def m012_decision_snapshots(conn: sqlite3.Connection) -> None:
    """The decision memory's state per workflow, persisted (skills/decide/snapshot.py): a new process loads it at its
    first ask instead of rebuilding it from every example; `upto` and `examples` say which examples it stands for.
    A calibration point names the scorer that scored it: points of another scale never set a threshold."""
    execute_script(
        conn,
        """
        ALTER TABLE decision_examples ADD COLUMN scorer TEXT;
        ALTER TABLE decision_errors ADD COLUMN scorer TEXT;
        CREATE TABLE decision_snapshots (
            workflow TEXT PRIMARY KEY, stamp TEXT NOT NULL, upto INTEGER NOT NULL, errors_upto INTEGER NOT NULL,
            examples INTEGER NOT NULL, body BLOB NOT NULL, created REAL NOT NULL);
    """,
    )


def m013_trajectory_paths(conn: sqlite3.Connection) -> None:
    """One procedure per path: a trajectory's `path` is its decisions without its wording (`decision_signature` of its
    decisions alone), unique per task type, so a run of a known path in other words credits that procedure (and its
    wording becomes an alias) rather than making a twin. Twins made before keep their rows, counts and history; one of
    each group keeps the path (active, proven, most counted successes, oldest first) and the others a marked one, as
    m004 marked duplicate steps: merging them would move executions, branches and waiting runs' matches. An alias
    keeps the run its wording came from (`source`, `run:<run_id>`; none for those answered before). Signatures now
    read arguments by sorted key: those stored otherwise are recomputed (`_resign_trajectories`)."""
    execute_script(conn, "ALTER TABLE procedures ADD COLUMN path TEXT;\nALTER TABLE aliases ADD COLUMN source TEXT;")
    _resign_trajectories(conn)
    rows = conn.execute(
        "SELECT id, task_type, decisions, status, proven, success_count FROM procedures WHERE kind = 'trajectory'"
        " ORDER BY rowid"
    ).fetchall()
    kept: set[tuple[str, str]] = set()
    # Of each group of twins, the one that keeps the path (a new run of it credits that one): active, proven, most
    # counted successes, oldest.
    ranked = sorted(range(len(rows)), key=lambda i: (rows[i][3] != "active", not rows[i][4], -int(rows[i][5] or 0), i))
    for i in ranked:
        pid, task_type, decisions = rows[i][:3]
        path = path_of(stored_decisions(decisions))
        marked = path if (task_type, path) not in kept else f"{path}~{pid}"
        kept.add((task_type, path))
        conn.execute("UPDATE procedures SET path = ? WHERE id = ?", (marked, pid))
    execute_script(conn, "CREATE UNIQUE INDEX procedures_task_path ON procedures (task_type, path);")


def _resign_trajectories(conn: sqlite3.Connection) -> None:
    """Trajectory and branch signatures as `_trajectory_signature` computes them now (arguments by sorted key), so a
    run of the same decisions still finds them. A procedure keeps its `~` mark (m004); one whose new signature another
    of its task type already holds takes one; branches of one procedure that become one are merged, runs summed."""
    procs = conn.execute(
        "SELECT id, task_type, description, decisions, signature, rowid FROM procedures WHERE kind = 'trajectory'"
        " ORDER BY rowid"
    ).fetchall()
    held = {(r[1], r[4]) for r in procs}
    for pid, task_type, description, decisions, old, rowid in procs:
        _, tilde, mark = str(old).partition("~")
        new = path_of(stored_decisions(decisions), description or "") + tilde + mark
        if new == old:
            continue
        if (task_type, new) in held:
            new = f"{new.partition('~')[0]}~{rowid}"
        held.discard((task_type, old))
        held.add((task_type, new))
        conn.execute("UPDATE procedures SET signature = ? WHERE id = ?", (new, pid))
    groups: dict[tuple[str, str], list[tuple[str, int, str, float]]] = {}
    for pid, old, decisions, runs, last_run, last_seen in conn.execute(
        "SELECT procedure_id, signature, decisions, runs, last_run, last_seen FROM procedure_branches"
        " ORDER BY procedure_id, first_seen"
    ).fetchall():
        groups.setdefault((pid, path_of(stored_decisions(decisions))), []).append((old, runs, last_run, last_seen))
    for (pid, new), found in groups.items():
        # The row already signed so stays (nothing to rename onto it); else the first seen.
        keep = next((r for r in found if r[0] == new), found[0])
        for old, runs, last_run, last_seen in (r for r in found if r is not keep):
            conn.execute("DELETE FROM procedure_branches WHERE procedure_id = ? AND signature = ?", (pid, old))
            conn.execute(
                "UPDATE procedure_branches SET runs = runs + ?,"
                " last_run = CASE WHEN last_seen < ? THEN ? ELSE last_run END,"
                " last_seen = CASE WHEN last_seen < ? THEN ? ELSE last_seen END"
                " WHERE procedure_id = ? AND signature = ?",
                (runs, last_seen, last_run, last_seen, last_seen, pid, keep[0]),
            )
        if keep[0] != new:
            conn.execute(
                "UPDATE procedure_branches SET signature = ? WHERE procedure_id = ? AND signature = ?",
                (new, pid, keep[0]),
            )


def m014_asked_scores(conn: sqlite3.Connection) -> None:
    """What a judge was asked about: with each answer, the relevance of the best candidate when the question was put
    (`asked_score`) and whether the answer was about that one (`asked_top`: 1; 0 for an alias confirming another of
    the offered). These are the store's own calibration points for the match floor (`match.floor`); answers given
    before keep NULL and are no point."""
    execute_script(
        conn,
        "ALTER TABLE aliases ADD COLUMN asked_score REAL;\nALTER TABLE aliases ADD COLUMN asked_top INTEGER;\n"
        "ALTER TABLE rejections ADD COLUMN asked_score REAL;\nALTER TABLE rejections ADD COLUMN asked_top INTEGER;",
    )


def m015_held_replays(conn: sqlite3.Connection) -> None:
    """Replays that held: an executed replay that a match chose by relevance alone and that succeeded, with that
    relevance, the match's scope and who asked. Beside the answers that say a sure replay was wrong (a rejection of
    it), they are what says the shipped floor holds in this store (`match.floor`)."""
    execute_script(
        conn,
        """
        CREATE TABLE held_replays (
            execution_id INTEGER PRIMARY KEY, procedure_id TEXT NOT NULL, scope TEXT NOT NULL, score REAL NOT NULL,
            held_by TEXT NOT NULL, created REAL NOT NULL);
        CREATE INDEX held_replays_scope ON held_replays (scope);
    """,
    )


def m016_answer_owners(conn: sqlite3.Connection) -> None:
    """Whose matches an answer shapes (`owner`): '' for every asker's (a person's, a run's, a model judge's), the
    agent for an MCP client's (`agent:NAME`), which shapes only that agent's; so each agent keeps its own answer of a
    pair beside another's, and a person's (kept apart) holds for all."""
    execute_script(
        conn,
        """
        ALTER TABLE aliases ADD COLUMN owner TEXT NOT NULL DEFAULT '';
        UPDATE aliases SET owner = confirmed_by WHERE confirmed_by LIKE 'agent:%';
        DROP INDEX aliases_unique;
        CREATE UNIQUE INDEX aliases_unique ON aliases (procedure_id, scope, key, owner);
        ALTER TABLE rejections ADD COLUMN owner TEXT NOT NULL DEFAULT '';
        UPDATE rejections SET owner = rejected_by WHERE rejected_by LIKE 'agent:%';
        DROP INDEX rejections_unique;
        CREATE UNIQUE INDEX rejections_unique ON rejections (key, scope, procedure_id, owner);
    """,
    )


def m017_alias_changes(conn: sqlite3.Connection) -> None:
    """Which aliases changed since a matcher last read them: each row carries the answers' version at its last write
    (`changed`), and removals are counted (`alias_removals`), so a matcher reads only the rows written since, not
    every alias after each run adds one. Triggers keep both, whatever writes (an answer, a vector, a run's removal)."""
    execute_script(
        conn,
        """
        ALTER TABLE aliases ADD COLUMN changed INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX aliases_changed ON aliases (scope, changed);
        INSERT INTO skill_meta (key, value) VALUES ('alias_removals', 0) ON CONFLICT DO NOTHING;
    """,
    )
    create_change_stamps(
        conn,  # type: ignore[arg-type]
        ChangeStamps(
            table="aliases",
            key="id",
            column="changed",
            # What a match reads of an alias (`Answers.alias_rows`); `source` and the asked columns are not.
            read=("procedure_id", "task_type", "scope", "text", "key", "confirmed_by", "vector", "embedder", "owner"),
            version="(SELECT value FROM skill_meta WHERE key = 'answers')",
            removed="UPDATE skill_meta SET value = value + 1 WHERE key = 'alias_removals'",
        ),
    )


def m018_asked_indexes(conn: sqlite3.Connection) -> None:
    """The answered questions that carry what was asked (`Answers.asked_points`, read at each match for the floor)
    indexed apart: a store's aliases are mostly runs' wordings that were never asked, and reading the floor's points
    walked every alias of the scope at each match."""
    execute_script(
        conn,
        """
        CREATE INDEX aliases_asked ON aliases (scope, id) WHERE asked_score IS NOT NULL;
        CREATE INDEX rejections_asked ON rejections (scope, id) WHERE asked_score IS NOT NULL;
    """,
    )


MIGRATIONS = [
    m001_skills,
    m002_fts_by_rowid,
    m003_learnings_dedup,
    m004_one_procedure_per_signature,
    m005_trajectory_procedures,
    m006_learning_about,
    m007_promotions,
    m008_aliases,
    m009_decision_examples,
    m010_evidence_sources,
    m011_calibrated_decisions,
    m012_decision_snapshots,
    m013_trajectory_paths,
    m014_asked_scores,
    m015_held_replays,
    m016_answer_owners,
    m017_alias_changes,
    m018_asked_indexes,
]
