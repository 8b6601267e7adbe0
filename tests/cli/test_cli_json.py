"""Under `--json`, stdout holds the JSON alone, for every command: no log line, progress or markup before or after it.

The commands are found by walking the argparse parser, so a new command with `--json` joins the test by itself (and
fails it until it is given arguments below or excluded with a reason).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sherpa_skills.cli import main
from sherpa_skills.cli.main import build_parser

WAITING = """
name: waits
inputs:
  ticket: {required: true}
  approved: {type: boolean}
initial: draft
states:
  draft:
    transitions: [{trigger: ask, dest: approval}]
  approval:
    waiting: true
    transitions:
      - {trigger: approve, dest: sent, conditions: {context_true: {key: approved}}}
  sent: {final: true}
"""

LOOP = """
name: loop
initial: ping
states:
  ping:
    transitions: [{trigger: hit, dest: pong}]
  pong:
    transitions: [{trigger: hit, dest: ping}]
"""

DOMAIN = """
name: triage
domain: triage
initial: wake
states:
  wake:
    on_enter:
      - domain_propose: {key: threshold, value: 75, reason: "50 pages too often at night"}
        save_as: proposal
    final: true
"""

STEPS = "description: build the project\nsteps:\n  - {command: 'echo building'}\n  - {command: 'echo testing'}\n"
OTHER_STEPS = "description: tidy the workspace\nsteps:\n  - {command: 'echo tidying'}\n"
HISTORY = "#1700000000\ngit status\n#1700000005\nmake test\n#1700000010\ngit status\n"

#: Arguments for commands that need some ({name} is filled from the seeded home); the rest run with `--json` alone.
ARGS: dict[str, list[list[str]]] = {
    "run": [["{waiting_file}", "-i", "ticket=hi"], ["{loop_file}", "--max-steps", "2"]],
    "resume": [["{run_id}", "-i", "approved=true"]],
    "show": [["{run_id}"]],
    "fork": [["{run_id}", "--at", "1", "--dry-run"]],
    "hook install": [["claude-code", "--project", "--dir", "{tmp}/project"]],
    "hook uninstall": [["claude-code", "--project", "--dir", "{tmp}/project"]],
    "runs delete": [["{run_id}", "--force", "--dry-run"], ["{run_id}", "--yes", "--force"]],
    "runs prune": [["--older-than", "30d", "--yes"]],
    "validate": [["{waiting_file}"]],
    "tools relevant": [["run the tests"]],
    "heartbeat": [["run"], ["report"]],
    "learn capture-success": [
        ["tidy", "--steps-file", "{other_steps}"],
        ["check", "--steps-from-session", "bash-history"],
    ],
    "learn show": [["{procedure}"]],
    "learn aliases": [[], ["{procedure}"]],
    "learn forget": [["{alias}"]],
    "learn replay": [
        ["build the project"],
        ["build the project", "--procedure", "{procedure}", "--min-confidence", "0"],
    ],
    "learn promote": [["{procedure}"]],
    "learn export": [["{tmp}/out.json"]],
    "learn import": [["{export_file}"]],
    "learn reject": [["{procedure}"]],
    "sessions import": [["{history}"]],
    "sessions show": [["bash-history"]],
    "memory search": [["where do deploys go"]],
    "memory write": [["the cache is thread safe", "--agent", "ops", "--shared", "--abstraction", "pattern"]],
    "memory history": [["{artifact}"]],
    "memory resolve": [["{tension}", "--keep", "{artifact}", "--agent", "ops"]],
    "domains show": [["triage"]],
    "domains decide": [["triage", "threshold=50", "--operator", "sam"]],
    "domains accept": [["{proposal}", "--operator", "sam"]],
    "domains reject": [["{proposal}", "--operator", "sam"]],
    "db copy": [["--from", "{home}", "--to", "{tmp}/copied-home"]],
}

#: Commands not run here, and why.
EXCLUDED = {
    "agent": "serves a Redis bus until stopped (a long-running service); tests/agents/test_redis_bus.py runs it",
    "send": "publishes on a Redis bus, so it needs a redis-server; tests/agents/test_redis_bus.py reads its --json",
}

#: Exit 1 is a result too: a failing run, or a query with nothing replayable yet, still prints its JSON object.
EXPECTED_EXIT = {("run", "{loop_file} --max-steps 2"): 1, ("learn replay", "build the project"): 1}


def json_commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[str]:
    """Every (sub)command, as 'learn import', whose parser accepts --json."""
    if any("--json" in action.option_strings for action in parser._actions):
        yield " ".join(path)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from json_commands(child, (*path, name))


COMMANDS = sorted(json_commands(build_parser()))


def _cli(*argv: str) -> Any:
    """A command in this process (to seed the home), its --json output parsed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main([*argv, "--json"])
    assert code in (0, 1), (argv, code)
    return json.loads(out.getvalue())


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A small real home: a waiting and a failed run, a procedure, an imported session,
    a memory tension, a domain proposal,
    and a `learn export` file from another home (so `learn import` adds a procedure and loads the embedder)."""
    tmp = tmp_path_factory.mktemp("json-home")
    files = {
        "waiting_file": WAITING,
        "loop_file": LOOP,
        "domain_file": DOMAIN,
        "steps": STEPS,
        "other_steps": OTHER_STEPS,
        "history": HISTORY,
    }
    made = {"tmp": str(tmp)}
    for name, text in files.items():
        (tmp / name).write_text(text, encoding="utf-8")
        made[name] = str(tmp / name)
    made["history"] = str(tmp / "bash_history")
    (tmp / "history").rename(made["history"])
    home = str(tmp / "home")
    made["home"] = home
    made["run_id"] = _cli("run", made["waiting_file"], "-i", "ticket=hi", "--home", home)["run_id"]
    _cli("run", made["loop_file"], "--max-steps", "2", "--home", home)
    made["procedure"] = _cli("learn", "capture-success", "build", "--steps-file", made["steps"], "--home", home)["id"]
    made["alias"] = _cli(
        "learn", "replay", "make the project", "--procedure", made["procedure"], "--min-confidence", "0", "--home", home
    )["alias"]["id"]
    _cli("sessions", "import", made["history"], "--home", home)
    old = _cli(
        "memory",
        "write",
        "deploys go to ci-7",
        "--agent",
        "ops",
        "--shared",
        "--abstraction",
        "pattern",
        "--home",
        home,
    )
    new = _cli(
        "memory",
        "write",
        "deploys go to ci-9",
        "--agent",
        "dev",
        "--shared",
        "--abstraction",
        "pattern",
        "--home",
        home,
    )
    made["artifact"], made["tension"] = old["id"], new["tensions"][0]["id"]
    made["proposal"] = _cli("run", made["domain_file"], "--agent", "ops", "--home", home)["context"]["proposal"][
        "proposal"
    ]
    donor = str(tmp / "donor")
    _cli("learn", "capture-success", "tidy", "--steps-file", made["other_steps"], "--home", donor)
    made["export_file"] = str(tmp / "export.json")
    _cli("learn", "export", made["export_file"], "--home", donor)
    return made


def test_every_json_command_is_run_here_or_excluded_with_a_reason() -> None:
    """A command that takes arguments is listed in ARGS; stale names in ARGS or EXCLUDED are mistakes."""
    assert "learn import" in COMMANDS and "memory write" in COMMANDS and "run" in COMMANDS
    assert set(ARGS) <= set(COMMANDS) and set(EXCLUDED) <= set(COMMANDS)
    assert not set(ARGS) & set(EXCLUDED)


@pytest.mark.slow
@pytest.mark.parametrize("command", [c for c in COMMANDS if c not in EXCLUDED])
def test_stdout_holds_only_json(command: str, seeded: dict[str, str], tmp_path: Path) -> None:
    """Each command, in its own process on a copy of the seeded home, prints JSON that json.loads reads whole."""
    home = tmp_path / "home"
    shutil.copytree(seeded["home"], home)
    values = {**seeded, "home": str(home), "tmp": str(tmp_path)}
    for extra in ARGS.get(command, [[]]):
        argv = [*command.split(), *(a.format(**values) for a in extra), "--json", "--home", str(home)]
        done = subprocess.run(
            [sys.executable, "-m", "sherpa_skills", *argv],
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
        expected = EXPECTED_EXIT.get((command, " ".join(extra)), 0)
        assert done.returncode == expected, (argv, done.returncode, done.stderr[-2000:])
        assert "Traceback" not in done.stderr, done.stderr
        try:
            json.loads(done.stdout)
        except ValueError as exc:
            pytest.fail(f"`{' '.join(argv[:-2])}`: stdout is not JSON alone ({exc}):\n{done.stdout[:1500]}")


def test_a_refused_command_under_json_leaves_stdout_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A refusal is one line on stderr and exit 2;
    stdout stays empty, so a script's json.loads fails loudly, not on a log line."""
    code = main(
        ["domains", "decide", "nope", "threshold=50", "--operator", "sam", "--json", "--home", str(tmp_path / "home")]
    )
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert "no domain 'nope'" in err and "Traceback" not in err
