"""Choosing the engine: SQLite in the home unless a postgresql:// URL is named (--database, SHERPA_SKILLS_DATABASE);
a server that cannot be reached or refuses the credentials is a clear error naming host and database, never the
password, exit 2; a password on the command line is refused."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from sherpa_skills.db.sql import postgres_ddl, to_postgres

SECRET = "Hunter2-not-for-logs"


def sh(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **(env or {})}
    full.pop("SHERPA_SKILLS_DATABASE", None) if env is None or "SHERPA_SKILLS_DATABASE" not in env else None
    return subprocess.run(
        [sys.executable, "-m", "sherpa_skills", *argv], capture_output=True, text=True, timeout=60, env=full
    )


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends: nothing listens there


def test_nothing_changes_without_a_url_sqlite_in_the_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SHERPA_SKILLS_DATABASE", raising=False)
    from sherpa_skills.engine.runstore import RunStore

    store = RunStore(home=tmp_path)
    assert store.dialect == "sqlite" and (tmp_path / "store.db").is_file()
    store.close()


def test_an_unreachable_server_names_host_and_database_never_the_password_exit_2(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    url = f"postgresql://sherpa:{SECRET}@127.0.0.1:{_closed_port()}/teamstore"
    done = sh("runs", "--home", str(tmp_path), env={"SHERPA_SKILLS_DATABASE": url})
    assert done.returncode == 2, done.stderr
    assert "'teamstore'" in done.stderr and "127.0.0.1" in done.stderr and "Traceback" not in done.stderr
    assert SECRET not in done.stderr + done.stdout
    logs = "".join(p.read_text() for p in (tmp_path / "logs").glob("*")) if (tmp_path / "logs").exists() else ""
    assert SECRET not in logs


@pytest.mark.postgres
def test_wrong_credentials_are_refused_by_name_exit_2(postgres_cluster, tmp_path: Path) -> None:
    url = postgres_cluster.url().replace(postgres_cluster.password, SECRET)
    done = sh("runs", "--json", "--home", str(tmp_path), env={"SHERPA_SKILLS_DATABASE": url})
    assert done.returncode == 2 and done.stdout == ""
    assert "password authentication failed" in done.stderr and "'postgres' on 127.0.0.1" in done.stderr
    assert SECRET not in done.stderr


def test_a_password_on_the_command_line_is_refused_without_echoing_it(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    done = sh("runs", "--home", str(tmp_path), "--database", f"postgresql://u:{SECRET}@127.0.0.1:1/db")
    assert done.returncode == 2 and "passfile" in done.stderr and SECRET not in done.stderr


def test_a_url_that_is_not_postgresql_is_refused_naming_where_it_came_from(tmp_path: Path) -> None:
    done = sh("runs", "--home", str(tmp_path), "--database", "mysql://u@h/db")
    assert done.returncode == 2 and "--database" in done.stderr and "postgresql://" in done.stderr
    done = sh("runs", "--home", str(tmp_path), env={"SHERPA_SKILLS_DATABASE": "sqlite:///x.db"})
    assert done.returncode == 2 and "SHERPA_SKILLS_DATABASE" in done.stderr


@pytest.mark.postgres
def test_the_password_comes_from_a_password_file_or_libpq_s_own_variables(postgres_cluster, tmp_path: Path) -> None:
    """--database names no password: ?passfile=, PGPASSFILE (.pgpass format) or PGPASSWORD supply it."""
    database = postgres_cluster.create_database()
    try:
        bare = postgres_cluster.url(database, password=False)
        passfile = tmp_path / "pgpass"
        passfile.write_text(f"127.0.0.1:{postgres_cluster.port}:*:postgres:{postgres_cluster.password}\n")
        passfile.chmod(0o600)
        home = str(tmp_path / "home")
        for argv, env in (
            (["--database", f"{bare}?passfile={passfile}"], {}),
            (["--database", bare], {"PGPASSFILE": str(passfile)}),
            (["--database", bare], {"PGPASSWORD": postgres_cluster.password}),
        ):
            done = sh("runs", "--json", "--home", home, *argv, env={"PGPASSFILE": "/nonexistent", **env})
            assert done.returncode == 0, done.stderr
            assert done.stdout.strip() == "[]"
        without = sh("runs", "--home", home, "--database", bare, env={"PGPASSFILE": "/nonexistent"})
        assert without.returncode == 2 and "password" in without.stderr
    finally:
        from sherpa_skills.db.postgres import close_pools

        close_pools()
        postgres_cluster.drop_database(database)


def test_the_sqlite_spelling_is_translated_for_psycopg() -> None:
    assert to_postgres("SELECT a FROM t WHERE b = ? AND c LIKE ? ESCAPE '\\'", True) == (
        "SELECT a FROM t WHERE b = %s AND c LIKE %s ESCAPE '\\'"
    )
    assert to_postgres("SELECT '?', '%' || ? FROM t", True) == "SELECT '?', '%%' || %s FROM t"
    assert to_postgres("SELECT '50%' FROM t", False) == "SELECT '50%' FROM t"
    assert to_postgres("BEGIN IMMEDIATE", False) == "BEGIN"
    ddl = postgres_ddl("CREATE TABLE t (id INTEGER PRIMARY KEY, at REAL NOT NULL, n INTEGER)")
    assert ddl == (
        "CREATE TABLE t (id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, at DOUBLE PRECISION NOT NULL, "
        "n BIGINT)"
    )
    # SQLite gives every table a rowid; PostgreSQL gets one as a column, so `ORDER BY rowid` runs on both.
    assert postgres_ddl("CREATE TABLE e (k TEXT PRIMARY KEY)").startswith(
        "CREATE TABLE e (rowid BIGINT GENERATED ALWAYS AS IDENTITY, k TEXT"
    )
    assert postgres_ddl("INSERT INTO t VALUES (1)") == "INSERT INTO t VALUES (1)"
