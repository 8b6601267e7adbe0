"""`--home DIR` while SHERPA_SKILLS_DATABASE is set: the stores stay in that database, not in DIR, and the command says
so once on stderr (never the password; --json stdout stays JSON only); quiet when --database names the database, when
the home comes from SHERPA_SKILLS_HOME, when the variable is unset, and for commands that open no store."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

SECRET = "Hunter2-not-for-stderr"
NOTICE = "keeps this machine's local files only"


def sh(*argv: str, env: dict[str, str | None]) -> subprocess.CompletedProcess[str]:
    """The CLI in a process of its own; a None in `env` unsets that variable."""
    full = {k: v for k, v in os.environ.items() if k not in ("SHERPA_SKILLS_DATABASE", "SHERPA_SKILLS_HOME")}
    full.update({k: v for k, v in env.items() if v is not None})
    for name in (k for k, v in env.items() if v is None):
        full.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "sherpa_skills", *argv], capture_output=True, text=True, timeout=60, env=full
    )


def _unreachable_url(password: str = SECRET) -> str:
    """A URL nothing listens at: the command fails to connect, after the choice of database was made."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    return f"postgresql://sherpa:{password}@127.0.0.1:{port}/teamstore"


@pytest.fixture
def url() -> str:
    pytest.importorskip("psycopg")
    return _unreachable_url()


@pytest.mark.parametrize("where", ["before", "after"])
def test_home_with_the_variable_set_says_where_the_stores_are_never_the_password(
    url: str, tmp_path: Path, where: str
) -> None:
    home = str(tmp_path / "mine")
    argv = ["--home", home, "runs"] if where == "before" else ["runs", "--home", home]
    done = sh(*argv, env={"SHERPA_SKILLS_DATABASE": url})
    assert done.returncode == 2  # the server is not there: the notice came before the connection was tried
    assert done.stderr.count(NOTICE) == 1, done.stderr
    notice = next(line for line in done.stderr.splitlines() if NOTICE in line)
    assert f"--home {home}" in notice and "SHERPA_SKILLS_DATABASE" in notice and "--database" in notice
    assert "'teamstore' on 127.0.0.1" in notice and "user 'sherpa'" in notice
    assert SECRET not in done.stderr + done.stdout and "Traceback" not in done.stderr


def test_under_json_the_notice_goes_to_stderr_and_stdout_stays_empty_or_json(url: str, tmp_path: Path) -> None:
    done = sh("runs", "--json", "--home", str(tmp_path), env={"SHERPA_SKILLS_DATABASE": url})
    assert done.returncode == 2 and done.stdout == "" and NOTICE in done.stderr and SECRET not in done.stderr


def test_quiet_when_database_names_it_on_the_command_line(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    chosen = _unreachable_url(password="").replace("sherpa:@", "sherpa@")
    done = sh("runs", "--home", str(tmp_path), "--database", chosen, env={"SHERPA_SKILLS_DATABASE": _unreachable_url()})
    assert done.returncode == 2 and NOTICE not in done.stderr, done.stderr


def test_quiet_when_the_home_comes_from_sherpa_skills_home(url: str, tmp_path: Path) -> None:
    done = sh("runs", env={"SHERPA_SKILLS_DATABASE": url, "SHERPA_SKILLS_HOME": str(tmp_path)})
    assert done.returncode == 2 and NOTICE not in done.stderr, done.stderr


def test_quiet_when_the_variable_is_unset_the_stores_are_in_the_home(tmp_path: Path) -> None:
    done = sh("runs", "--json", "--home", str(tmp_path), env={"SHERPA_SKILLS_DATABASE": None})
    assert done.returncode == 0 and json.loads(done.stdout) == [] and done.stderr == ""
    assert (tmp_path / "store.db").is_file()


def test_quiet_for_commands_that_open_no_store_of_the_home(url: str, tmp_path: Path) -> None:
    """`validate` reads a file; `db copy` copies between the folders it is named (the variable is not its target)."""
    workflow = Path(__file__).parents[2] / "examples" / "support_triage" / "workflow.yaml"
    checked = sh("--home", str(tmp_path), "validate", str(workflow), env={"SHERPA_SKILLS_DATABASE": url})
    assert checked.returncode == 0 and checked.stderr == "", checked.stderr
    sh("runs", "--home", str(tmp_path / "a"), env={"SHERPA_SKILLS_DATABASE": None})
    copied = sh(
        "db",
        "copy",
        "--from",
        str(tmp_path / "a"),
        "--to",
        str(tmp_path / "b"),
        "--home",
        str(tmp_path / "a"),
        "--json",
        env={"SHERPA_SKILLS_DATABASE": url},
    )
    assert copied.returncode == 0 and json.loads(copied.stdout)["ok"] and NOTICE not in copied.stderr, copied.stderr


def test_an_agent_hook_stays_silent(url: str, tmp_path: Path) -> None:
    """A hook prints nothing whatever happens: the agent reads its stderr."""
    full = {k: v for k, v in os.environ.items() if k != "SHERPA_SKILLS_HOME"} | {"SHERPA_SKILLS_DATABASE": url}
    done = subprocess.run(
        [sys.executable, "-m", "sherpa_skills", "hook", "claude-code", "--home", str(tmp_path)],
        input='{"hook_event_name": "SessionStart", "session_id": "s1"}',
        capture_output=True,
        text=True,
        timeout=60,
        env=full,
    )
    assert done.returncode == 0 and done.stdout == "" and done.stderr == "", done.stderr


@pytest.mark.postgres
def test_against_a_real_server_the_stores_go_to_it_said_once_json_parses(postgres_url: str, tmp_path: Path) -> None:
    password = postgres_url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
    workflow = tmp_path / "tiny.yaml"
    workflow.write_text(
        "name: tiny\ninitial: start\nstates:\n  start: {}\n  done: {final: true}\n"
        "transitions:\n  - {trigger: go, source: start, dest: done}\n"
    )
    home = tmp_path / "throwaway"
    ran = sh("run", str(workflow), "--json", "--home", str(home), env={"SHERPA_SKILLS_DATABASE": postgres_url})
    assert ran.returncode == 0, ran.stderr
    run_id = json.loads(ran.stdout)["run_id"]
    assert ran.stderr.count(NOTICE) == 1 and password not in ran.stderr + ran.stdout, ran.stderr
    assert not (home / "store.db").exists()  # what the notice says: the run is in the database, not in the home
    listed = sh("runs", "--json", "--home", str(tmp_path / "other"), env={"SHERPA_SKILLS_DATABASE": postgres_url})
    assert run_id in {r["run_id"] for r in json.loads(listed.stdout)} and NOTICE in listed.stderr


def test_the_demo_s_temporary_home_keeps_its_stores_whatever_the_variable_names(url: str, tmp_path: Path) -> None:
    """`demo` without --home runs in a throwaway folder: it must not write the demo's runs into the shared database
    (nor fail because that database is out of reach)."""
    done = sh("demo", "--json", env={"SHERPA_SKILLS_DATABASE": url, "TMPDIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert NOTICE not in done.stderr and SECRET not in done.stderr + done.stdout
    json.loads(done.stdout)
    (home,) = tmp_path.glob("sherpa-skills-demo-*")
    assert (home / "store.db").is_file()  # the runs are in the temporary home


def test_the_demo_with_a_home_named_goes_by_the_variable_and_says_so(url: str, tmp_path: Path) -> None:
    """A home named on the command line is the user's own choice: the variable's database, with the notice."""
    done = sh("demo", "--home", str(tmp_path / "mine"), "--json", env={"SHERPA_SKILLS_DATABASE": url})
    assert done.returncode != 0 and done.stderr.count(NOTICE) == 1
    assert SECRET not in done.stderr + done.stdout and "Traceback" not in done.stderr
