"""A command run in-process, or a store opened and closed, leaves no file open: a long-lived process (a server, a
notebook, this test suite) touching many homes must not creep towards the 1,024 descriptors `select` can watch."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest

from sherpa_skills.cli import main

ROUNDS = 6


def open_files() -> int:
    gc.collect()  # an object already dropped closes its files when collected: count only what something still holds
    return len(os.listdir("/proc/self/fd"))


def _commands(home: Path) -> list[list[str]]:
    at = ["--home", str(home), "--json"]
    steps = home.parent / "steps.txt"
    steps.write_text("- touch notes.txt\n", encoding="utf-8")
    return [
        ["learn", "capture-success", "write-notes", "--steps-file", str(steps), "--description", "write notes", *at],
        ["learn", "replay", "write the notes file", *at],
        ["learn", "failures", "--task", "write the notes file", *at],
    ]


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc/self/fd (Linux)")
def test_commands_run_in_process_over_many_homes_leave_no_file_open(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def one_home(i: int) -> None:
        for command in _commands(tmp_path / f"home{i}"):
            assert main(command) in (0, 1), capsys.readouterr()  # a replay that finds nothing exits 1
        capsys.readouterr()

    one_home(0)  # the first run loads what stays for the process (the embedding model, chromadb's runtime)
    before = open_files()
    for i in range(1, ROUNDS + 1):
        one_home(i)
    assert open_files() - before < ROUNDS, f"{open_files() - before} files left open by {ROUNDS} homes' commands"


def companion_files(under: Path) -> list[str]:
    """The open files of companions under `under` (other tests' own leftovers are theirs)."""
    gc.collect()
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            found.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            continue  # the listing's own descriptor, gone already
    return [target for target in found if target.startswith(str(under)) and "/companion/" in target]


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc/self/fd (Linux)")
def test_asking_a_store_for_failures_leaves_no_companion_file_open(tmp_path: Path) -> None:
    from sherpa_skills import SkillStore

    for i in range(ROUNDS):
        with SkillStore(tmp_path / f"home{i}") as skills:
            skills.capture("write-notes", ["touch notes.txt"], description="write the notes file")
            skills.failures_for("write the notes file")
            skills.reindex_failures()
    assert companion_files(tmp_path) == []
