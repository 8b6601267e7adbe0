"""Run claims on SQLite are POSIX record locks on bytes of a file beside store.db (db/advisory.py): a process that
claims and releases runs of many homes keeps no descriptor for them, and letting go of one claim keeps the others."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sherpa_skills.db import advisory

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc/self/fd")

# Another process tries the byte of `key`: exit 0 when it could take it, 1 when it is held.
_OTHER = """
import fcntl, os, sys
from sherpa_skills.db.advisory import _offset
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _offset(sys.argv[2]), os.SEEK_SET)
except OSError:
    sys.exit(1)
sys.exit(0)
"""


def held_elsewhere(file: Path, key: str) -> bool:
    """Whether another process finds `key`'s byte of `file` locked (POSIX locks do not conflict within one process)."""
    done = subprocess.run([sys.executable, "-c", _OTHER, str(file), key], env={**os.environ}, timeout=60)
    return done.returncode == 1


def open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_claims_of_many_homes_released_leave_no_descriptor(tmp_path: Path) -> None:
    before = open_files()
    for i in range(20):
        file = str(tmp_path / f"store{i}.db.claims")
        assert advisory.try_file_lock(file, "run-1") and advisory.try_file_lock(file, "run-2")
        advisory.file_unlock(file, "run-1")
        advisory.file_unlock(file, "run-2")
    assert open_files() == before


def test_releasing_one_claim_keeps_the_others_of_the_file(tmp_path: Path) -> None:
    file = tmp_path / "store.db.claims"
    assert advisory.try_file_lock(str(file), "run-1") and advisory.try_file_lock(str(file), "run-2")
    assert advisory.try_file_lock(str(file), "run-2")  # a second holder in this process: re-entrant
    advisory.file_unlock(str(file), "run-1")
    assert not held_elsewhere(file, "run-1") and held_elsewhere(file, "run-2")
    advisory.file_unlock(str(file), "run-2")
    assert held_elsewhere(file, "run-2")  # its other holder still has it
    advisory.file_unlock(str(file), "run-2")
    assert not held_elsewhere(file, "run-2")


def test_a_claim_another_process_holds_is_refused_and_costs_no_descriptor(tmp_path: Path) -> None:
    file = tmp_path / "store.db.claims"
    file.touch()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys; from sherpa_skills.db.advisory import _offset;"
            " fd = os.open(sys.argv[1], os.O_RDWR);"
            " fcntl.lockf(fd, fcntl.LOCK_EX, 1, _offset('run-1'), os.SEEK_SET); print('held', flush=True);"
            " sys.stdin.read()",
            str(file),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        before = open_files()
        assert not advisory.try_file_lock(str(file), "run-1")
        assert open_files() == before
    finally:
        holder.communicate("", timeout=60)
