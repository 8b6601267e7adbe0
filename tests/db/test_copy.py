"""`sherpa-skills db copy`: a home moved into PostgreSQL and back, checked by counts; what the copy refuses."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SECRET = "Hunter2-not-for-logs"
WAITING = """
name: greet
initial: hello
inputs:
  who: {default: world}
states:
  hello:
    on_enter:
      shell: {command: "echo hello {{ who }}", timeout_secs: 30}
      save_as: hello
  ask: {waiting: true}
  done:
    final: true
    on_enter:
      shell: {command: "echo bye", timeout_secs: 30}
      save_as: bye
transitions:
  - {trigger: greeted, source: hello, dest: ask}
  - {trigger: answer, source: ask, dest: done}
"""


def sh(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != "SHERPA_SKILLS_DATABASE"} | (env or {})
    return subprocess.run(
        [sys.executable, "-m", "sherpa_skills", *argv], capture_output=True, text=True, timeout=120, env=full
    )


def ok(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip().startswith(("{", "[")) else done.stdout


def make_home(home: Path, workflow: Path) -> list[str]:
    """Two runs waiting for an answer, one finished, and a heartbeat (a run of its own, and its report): four runs,
    their ticks, machines, log and context."""
    workflow.write_text(WAITING)
    ids = [ok(sh("--home", str(home), "run", str(workflow), "--json", "-i", f"who={who}"))["run_id"] for who in "abc"]
    ok(sh("--home", str(home), "resume", ids[2], "--trigger", "answer", "--json"))
    ok(sh("--home", str(home), "heartbeat", "--once", "--json"))
    return ids


def add_procedure_and_notes(home: Path, steps: Path) -> None:
    """A captured procedure, a shared note and a private one: the skills and memory components in use."""
    steps.write_text(json.dumps([{"command": "echo build"}, {"command": "echo test"}]))
    ok(sh("--home", str(home), "learn", "capture-success", "build-it", "--steps-file", str(steps), "--json"))
    ok(sh("--home", str(home), "memory", "write", "the build server is b1", "--agent", "ops", "--shared", "--json"))
    ok(sh("--home", str(home), "memory", "write", "a private note", "--agent", "ops", "--json"))


def without_password(postgres_cluster: Any, url: str) -> tuple[str, dict[str, str]]:
    """The URL as a user gives it on the command line, and the environment libpq reads the password from."""
    return url.replace(f":{postgres_cluster.password}@", "@"), {"PGPASSWORD": postgres_cluster.password}


def counts(report: dict[str, Any]) -> dict[str, tuple[int, int]]:
    return {t["name"]: (t["source"], t["target"]) for t in report["tables"]}


@pytest.mark.postgres
def test_a_home_moves_to_postgresql_runs_resume_there_and_it_moves_back(
    postgres_cluster: Any, postgres_url: str, tmp_path: Path
) -> None:
    home, back = tmp_path / "home", tmp_path / "back"
    ids = make_home(home, tmp_path / "greet.yaml")
    url, env = without_password(postgres_cluster, postgres_url)

    report = ok(sh("db", "copy", "--from", str(home), "--to", url, "--json", env=env))
    assert report["ok"] is True and postgres_cluster.password not in json.dumps(report)
    copied = counts(report)
    assert all(s == t for s, t in copied.values())
    assert copied["runs"] == (4, 4) and copied["run_trajectory"][0] > 3 and copied["heartbeat_runs"] == (1, 1)
    assert all(s["reason"] for s in report["skipped"])  # components never used there, or not yet on PostgreSQL

    in_home = ok(sh("--home", str(home), "runs", "--json"))
    in_postgres = ok(sh("--home", str(home), "--database", url, "runs", "--json", env=env))
    assert in_postgres == in_home
    shown = ok(sh("--home", str(home), "--database", url, "show", ids[0], "--json", env=env))
    assert shown == ok(sh("--home", str(home), "show", ids[0], "--json"))

    # The identity sequences moved past the copied ids: a resumed run's new ticks insert where the copy ended.
    resumed = ok(sh("--home", str(home), "--database", url, "resume", ids[0], "--trigger", "answer", "--json", env=env))
    assert resumed["status"] == "final"
    belief = ok(sh("--home", str(home), "--database", url, "show", ids[0], "--json", env=env))["belief"]
    assert [(s["tick"], s["state"]) for s in belief["trajectory"]] == [(0, "hello"), (1, "ask"), (2, "done")]
    assert belief["context"]["bye"]["stdout"] == "bye\n"

    report = ok(sh("db", "copy", "--from", url, "--to", str(back), "--json", env=env))
    assert report["ok"] is True and counts(report)["runs"] == (4, 4)
    assert ok(sh("--home", str(back), "runs", "--json")) == ok(
        sh("--home", str(home), "--database", url, "runs", "--json", env=env)
    )
    # SQLite's implicit rowid came back from PostgreSQL's rowid column: the order rows were written in holds.
    with sqlite3.connect(back / "store.db") as conn:
        events = conn.execute("SELECT rowid, run_id FROM run_machines ORDER BY rowid").fetchall()
    assert [r[0] for r in events] == sorted(r[0] for r in events) and len(events) >= 3


@pytest.mark.postgres
def test_a_target_that_holds_rows_is_refused_naming_the_table_and_left_as_it_was(
    postgres_cluster: Any, postgres_url: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    make_home(home, tmp_path / "greet.yaml")
    url, env = without_password(postgres_cluster, postgres_url)
    first = ok(sh("db", "copy", "--from", str(home), "--to", url, "--json", env=env))
    again = sh("db", "copy", "--from", str(home), "--to", url, "--json", env=env)
    assert again.returncode == 2 and again.stdout == "" and "Traceback" not in again.stderr
    assert "not empty" in again.stderr and "run_context (" in again.stderr
    second_home = tmp_path / "other"
    report = ok(sh("db", "copy", "--from", url, "--to", str(second_home), "--json", env=env))
    assert counts(report) == counts(first)  # nothing was added by the refused copy


@pytest.mark.postgres
def test_a_value_postgresql_cannot_hold_names_table_row_and_column_and_nothing_is_copied(
    postgres_cluster: Any, postgres_url: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    ids = make_home(home, tmp_path / "greet.yaml")
    with sqlite3.connect(home / "store.db") as conn:  # SQLite keeps text in an INTEGER column without a word
        conn.execute("UPDATE runs SET tick = 'three' WHERE run_id = ?", (ids[1],))
        conn.execute("UPDATE run_log SET duration_ms = 7")  # an integer in a REAL column: converts
    url, env = without_password(postgres_cluster, postgres_url)
    done = sh("db", "copy", "--from", str(home), "--to", url, env=env)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"run_id='{ids[1]}'" in done.stderr and "column tick (bigint)" in done.stderr
    assert "runs row" in done.stderr and "nothing was copied" in done.stderr
    listed = ok(sh("--home", str(tmp_path / "empty"), "--database", url, "runs", "--json", env=env))
    assert listed == []


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_refusals_exit_2_with_a_clear_message_never_a_password(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    home = tmp_path / "home"
    make_home(home, tmp_path / "greet.yaml")
    unreachable = f"postgresql://sherpa@127.0.0.1:{_closed_port()}/teamstore"
    cases = {
        "unreachable server": (["--from", str(home), "--to", unreachable], "'teamstore' on 127.0.0.1"),
        "password on the command line": (
            ["--from", str(home), "--to", f"postgresql://u:{SECRET}@127.0.0.1:1/db"],
            "--to: the URL carries a password",
        ),
        "missing source": (["--from", str(tmp_path / "nowhere"), "--to", str(tmp_path / "t")], "no such folder"),
        "a folder without a store": (["--from", str(tmp_path), "--to", str(tmp_path / "t")], "holds no store.db"),
        "same store": (["--from", str(home), "--to", str(home)], "the same store"),
        "not a postgresql URL": (["--from", str(home), "--to", "mysql://u@h/db"], "--to: 'mysql://…'"),
    }
    for what, (argv, message) in cases.items():
        done = sh("db", "copy", *argv, "--json", env={"PGPASSWORD": SECRET})
        assert done.returncode == 2, (what, done.stderr)
        assert message in done.stderr, (what, done.stderr)
        assert done.stdout == "" and SECRET not in done.stderr and "Traceback" not in done.stderr, what
    assert not (tmp_path / "t").exists()


def test_a_home_copied_to_another_home_keeps_every_component_and_its_full_text_index(tmp_path: Path) -> None:
    home, copy = tmp_path / "home", tmp_path / "copy"
    make_home(home, tmp_path / "greet.yaml")
    add_procedure_and_notes(home, tmp_path / "steps.json")

    report = ok(sh("db", "copy", "--from", str(home), "--to", str(copy), "--json"))
    copied = counts(report)
    assert report["ok"] and all(s == t for s, t in copied.values())
    assert (
        copied["procedures"] == (1, 1) and copied["procedures_fts"] == (1, 1) and copied["memory_artifacts"] == (2, 2)
    )
    assert report["rebuilt"] == ["memory_fts"] and "memory_fts_data" not in copied
    assert ok(sh("--home", str(copy), "learn", "procedures", "--json")) == ok(
        sh("--home", str(home), "learn", "procedures", "--json")
    )
    found = ok(sh("--home", str(copy), "memory", "search", "build server", "--agent", "ops", "--json"))
    assert [h["text"] for h in found["hits"]][:1] == ["the build server is b1"]
    text = sh("db", "copy", "--from", str(home), "--to", str(tmp_path / "third"))
    assert (
        text.returncode == 0
        and "procedures_fts" in text.stdout
        and "rebuilt from the copied rows: memory_fts" in (text.stdout)
    )


@pytest.mark.postgres
def test_every_component_moves_to_postgresql_and_back_and_is_found_there(
    postgres_cluster: Any, postgres_url: str, tmp_path: Path
) -> None:
    home, back = tmp_path / "home", tmp_path / "back"
    make_home(home, tmp_path / "greet.yaml")
    add_procedure_and_notes(home, tmp_path / "steps.json")
    url, env = without_password(postgres_cluster, postgres_url)

    report = ok(sh("db", "copy", "--from", str(home), "--to", url, "--json", env=env))
    copied = counts(report)
    assert report["ok"] and all(s == t for s, t in copied.values())
    assert copied["procedures"] == (1, 1) and copied["memory_artifacts"] == (2, 2)
    # never used in this home, and the FTS5 table PostgreSQL searches without
    assert {s["name"] for s in report["skipped"]} <= {"sessions", "domains", "procedures_fts"}
    on_pg = ["--home", str(tmp_path / "other-machine"), "--database", url]
    assert ok(sh(*on_pg, "learn", "procedures", "--json", env=env)) == ok(
        sh("--home", str(home), "learn", "procedures", "--json")
    )
    found = ok(sh(*on_pg, "memory", "search", "build server", "--agent", "ops", "--json", env=env))
    assert [h["text"] for h in found["hits"]][:1] == ["the build server is b1"]
    other = ok(sh(*on_pg, "memory", "search", "private note", "--agent", "someone-else", "--json", env=env))
    assert "a private note" not in [h["text"] for h in other["hits"]]

    report = ok(sh("db", "copy", "--from", url, "--to", str(back), "--json", env=env))
    assert report["ok"] and counts(report)["procedures"] == (1, 1) and "procedures_fts" in report["rebuilt"]
    with sqlite3.connect(back / "store.db") as conn:  # the FTS5 rows PostgreSQL does not keep, made again
        assert conn.execute("SELECT count(*) FROM procedures_fts WHERE procedures_fts MATCH 'build'").fetchone() == (1,)
    assert ok(sh("--home", str(back), "learn", "procedures", "--json")) == ok(
        sh("--home", str(home), "learn", "procedures", "--json")
    )
