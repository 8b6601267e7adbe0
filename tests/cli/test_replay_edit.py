"""`learn replay … --execute` asks `Execute? [y/n/edit]`; edit opens $EDITOR on the rendered steps. Driven through a
real terminal (a pty) and a real editor (a small script that rewrites the file), as a person at a terminal would."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from sherpa_skills.cli import main

ROOT = Path(__file__).resolve().parents[2]
PROMPT = b"Execute? [y/n/edit]: "
STEPS = """
description: Package the notes folder into a tarball
steps:
  - command: mkdir -p build
  - command: tar -czf build/{{ name }}.tar.gz notes
  - command: tar -tzf build/{{ name }}.tar.gz
    expected_output_pattern: "notes/a.txt"
"""


@pytest.fixture
def setup(tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """A promoted procedure (replayable), and the folder its steps run in."""
    work = tmp_path / "work"
    (work / "notes").mkdir(parents=True)
    (work / "notes" / "a.txt").write_text("hello\n")
    steps = tmp_path / "steps.yaml"
    steps.write_text(STEPS)
    assert main(["learn", "capture-success", "package-notes", "--steps-file", str(steps), "--json"]) == 0
    pid = json.loads(capsys.readouterr().out)["id"]
    assert main(["learn", "promote", pid]) == 0
    capsys.readouterr()
    return {"home": home, "work": work, "id": pid, "tmp": tmp_path}


def editor(tmp_path: Path, body: str) -> str:
    """An $EDITOR: a script that rewrites the file it is given (`text` holds what was shown)."""
    script = tmp_path / "edit.py"
    script.write_text(f"import sys\npath = sys.argv[1]\ntext = open(path).read()\n{body}\n")
    return f"{sys.executable} {script}"


def at_terminal(setup: dict[str, Any], answers: list[bytes], editor_command: str) -> tuple[int, str]:
    """Run the replay with a real terminal; each answer is typed when the prompt appears."""
    import pty

    pid, fd = pty.fork()
    if pid == 0:  # the child: the CLI with a pty on stdin, stdout and stderr
        os.chdir(setup["work"])
        os.environ.update(PYTHONPATH=str(ROOT), EDITOR=editor_command, COLUMNS="200", NO_COLOR="1")
        os.execv(
            sys.executable,
            [
                sys.executable,
                "-m",
                "sherpa_skills",
                "learn",
                "replay",
                "package the notes",
                "--procedure",
                setup["id"],
                "-p",
                "name=n",
                "--execute",
                "--home",
                str(setup["home"]),
            ],
        )
    import selectors
    import signal

    # a selector, not select.select: in a process holding over 1,024 files the pty's fd is beyond what select watches
    waiting = selectors.DefaultSelector()
    waiting.register(fd, selectors.EVENT_READ)
    out, pending, deadline = b"", list(answers), time.monotonic() + 60
    while time.monotonic() < deadline:
        if not waiting.select(1.0):
            continue  # nothing yet: a prompt that never comes ends at the deadline, not in a blocked read
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
        if pending and out.count(PROMPT) > len(answers) - len(pending):
            os.write(fd, pending.pop(0))
    else:
        os.kill(pid, signal.SIGKILL)  # never answered as expected: the assertions below say what it printed
    _, status = os.waitpid(pid, 0)
    waiting.close()
    os.close(fd)  # the pty's master end: each run would leave one open
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace").replace("\r\n", "\n")


def procedure(home: Path, pid: str, version: int | None = None) -> Any:
    from sherpa_skills.skills.store.database import ProcedureDatabase

    store = ProcedureDatabase(home=home)
    try:
        return store.get(pid, version)
    finally:
        store.close()


def test_edited_steps_run_checked_and_become_the_next_version(setup: dict[str, Any]) -> None:
    """The person rewrites step 1: asked again with the new steps, they run, pass, and are v2 (one success: a
    person's capture); v1 is kept, and the unchanged steps keep their template and expectations."""
    edit = editor(
        setup["tmp"],
        "open(path, 'w').write(text.replace('mkdir -p build\\n', 'mkdir -p build && touch build/edited\\n'))",
    )
    code, out = at_terminal(setup, [b"edit\n", b"y\n"], edit)
    assert code == 0, out
    assert out.count("Execute? [y/n/edit]") == 2  # asked again, showing what will run
    assert "1. mkdir -p build && touch build/edited" in out
    assert f"your steps passed: kept as {setup['id']} v2" in out
    assert (setup["work"] / "build" / "edited").exists() and (setup["work"] / "build" / "n.tar.gz").exists()
    new, old = procedure(setup["home"], setup["id"]), procedure(setup["home"], setup["id"], 1)
    assert new.version == 2 and new.source == "manual"
    assert [s.command for s in new.steps] == [
        "mkdir -p build && touch build/edited",
        "tar -czf build/{{ name }}.tar.gz notes",
        "tar -tzf build/{{ name }}.tar.gz",
    ]
    assert new.steps[2].expected_output_pattern == "notes/a.txt"
    assert (new.success_count, new.failure_count) == (1, 0)
    assert [s.command for s in old.steps][0] == "mkdir -p build"


def test_edited_steps_that_fail_are_not_kept_and_count_against_nothing(setup: dict[str, Any]) -> None:
    edit = editor(setup["tmp"], "open(path, 'w').write(text.replace('mkdir -p build\\n', 'mkdir -p build\\nfalse\\n'))")
    code, out = at_terminal(setup, [b"e\n", b"y\n"], edit)
    assert code == 1, out
    assert "diverged" in out and "your steps did not pass: nothing kept; v1 is unchanged" in out
    proc = procedure(setup["home"], setup["id"])
    assert (proc.version, proc.failure_count) == (1, 0)  # v1 did not run: no failure is its


def test_changing_only_a_value_is_a_parameter_not_a_new_version(setup: dict[str, Any]) -> None:
    edit = editor(setup["tmp"], "open(path, 'w').write(text.replace('build/n.tar.gz', 'build/other.tar.gz'))")
    code, out = at_terminal(setup, [b"edit\n", b"y\n"], edit)
    assert code == 0, out
    assert "2. tar -czf build/other.tar.gz notes" in out
    assert (setup["work"] / "build" / "other.tar.gz").exists()
    assert procedure(setup["home"], setup["id"]).version == 1
    assert "your steps" not in out


def test_an_emptied_file_runs_nothing(setup: dict[str, Any]) -> None:
    edit = editor(setup["tmp"], "open(path, 'w').write('# nothing\\n')")
    code, out = at_terminal(setup, [b"edit\n"], edit)
    assert code == 1, out
    assert "the edited steps are empty: nothing runs" in out and "refused" in out
    assert not (setup["work"] / "build").exists()


def test_a_step_a_capture_would_refuse_is_said_before_anything_runs(setup: dict[str, Any]) -> None:
    edit = editor(setup["tmp"], "open(path, 'w').write('echo ' + 'x' * 100_001 + '\\n')")
    code, out = at_terminal(setup, [b"edit\n", b"n\n"], edit)
    assert code == 1, out
    assert "not run: step 1 command: 100,006 characters, over the 100,000" in out
    assert not (setup["work"] / "build").exists() and procedure(setup["home"], setup["id"]).version == 1


def test_an_editor_that_fails_leaves_the_steps_as_they_were(setup: dict[str, Any]) -> None:
    code, out = at_terminal(setup, [b"edit\n", b"y\n"], f"{sys.executable} -c 'raise SystemExit(3)'")
    assert code == 0, out
    assert "the editor exited with 3" in out
    assert procedure(setup["home"], setup["id"]).version == 1


def test_the_machine_refuses_empty_edited_steps(setup: dict[str, Any]) -> None:
    """Through the Python API too (the confirm hook): an empty rewrite is an error, and nothing ran."""
    from sherpa_skills.logs import configure
    from sherpa_skills.skills.api import SkillStore

    configure(level="critical")  # the fixture's CLI run left its logs on the set-up phase's (closed) stderr
    payload = SkillStore(setup["home"]).replay(
        procedure_id=setup["id"],
        params={"name": "n"},
        execute=True,
        cwd=str(setup["work"]),
        confirm=lambda pending: ("edit_steps", {"steps": []}),
    )
    assert payload["status"] == "error" and "the edited steps are empty" in payload["reason"]
    assert not (setup["work"] / "build").exists()


def test_the_confirm_hook_can_rewrite_steps(setup: dict[str, Any]) -> None:
    """`SkillStore.replay(confirm=...)` answering ("edit_steps", {"steps": [...]}), then approving what it is shown."""
    from sherpa_skills.logs import configure
    from sherpa_skills.skills.api import SkillStore

    configure(level="critical")  # the fixture's CLI run left its logs on the set-up phase's (closed) stderr
    answers: list[tuple[str, dict[str, Any]]] = [
        ("edit_steps", {"steps": ["mkdir -p build out", "tar -czf build/n.tar.gz notes"]}),
        ("approve", {}),
    ]
    shown: list[list[str]] = []

    def confirm(pending: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        shown.append([s["command"] for s in pending["steps"]])
        return answers.pop(0)

    payload = SkillStore(setup["home"]).replay(
        procedure_id=setup["id"], params={"name": "n"}, execute=True, cwd=str(setup["work"]), confirm=confirm
    )
    assert payload["status"] == "succeeded", payload
    assert shown[1] == ["mkdir -p build out", "tar -czf build/n.tar.gz notes"]
    assert payload["edited_steps"]["new_version"] == 2 and payload["edited_steps"]["changed"] == [1]
    proc = procedure(setup["home"], setup["id"])
    # a line left as shown keeps its template: the parameter stays a parameter in v2
    assert [s.command for s in proc.steps] == ["mkdir -p build out", "tar -czf build/{{ name }}.tar.gz notes"]


def test_the_terminal_is_still_driven_when_the_process_holds_over_1024_files(setup: dict[str, Any]) -> None:
    """The pty's fd lands above 1,023 (as in a long test run): `select.select` refuses it; the driver must not."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip(f"this process may open only {hard} files: the pty's fd cannot land above 1,023")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200) if hard == resource.RLIM_INFINITY else hard, hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(max(0, 1030 - len(os.listdir("/proc/self/fd"))))]
    try:
        edit = editor(setup["tmp"], "open(path, 'w').write('# nothing\\n')")
        code, out = at_terminal(setup, [b"edit\n"], edit)
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert code == 1, out
    assert "the edited steps are empty: nothing runs" in out
