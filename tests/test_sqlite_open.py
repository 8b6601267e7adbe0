"""Many processes opening the same fresh home at once: every store opens, none fails with 'database is locked'."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

#: Each store the project creates in a home, opened (created and migrated) then closed.
OPENER = """
import sys, time
from pathlib import Path
from sherpa_skills.engine.runstore import RunStore
from sherpa_skills.heartbeat.state import HeartbeatState
from sherpa_skills.memory._store import MemoryStore
from sherpa_skills.memory.domains import Domains
from sherpa_skills.sessions._store import SessionStore
from sherpa_skills.skills.store.database import ProcedureDatabase

home, start, kinds = Path(sys.argv[1]), float(sys.argv[2]), sys.argv[3].split(",")
openers = {"runs": lambda: RunStore(home=home), "skills": lambda: ProcedureDatabase(home=home),
           "sessions": lambda: SessionStore(home=home), "memory": lambda: MemoryStore(home=home),
           "domains": lambda: Domains(home=home), "heartbeat": lambda: HeartbeatState(home=home)}
time.sleep(max(0.0, start - time.time()))  # every process reaches the first open at the same moment
for kind in kinds:
    openers[kind]().close()
print("opened", ",".join(kinds))
"""

KINDS = ["runs", "skills", "sessions", "memory", "domains", "heartbeat"]


def open_at_once(home: Path, processes: int, delay: float) -> list[subprocess.CompletedProcess[str]]:
    """`processes` children open every store of a fresh `home`,
    each starting with a different one, all at one instant."""
    start = time.time() + delay
    children = [
        subprocess.Popen(
            [sys.executable, "-c", OPENER, str(home), str(start), ",".join(KINDS[i % 6 :] + KINDS[: i % 6])],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(processes)
    ]
    results = []
    for child in children:
        out, err = child.communicate(timeout=120)
        results.append(subprocess.CompletedProcess(child.args, child.returncode, out, err))
    return results


@pytest.mark.slow
def test_eight_processes_open_a_fresh_home_at_once(tmp_path: Path) -> None:
    for round_ in range(3):
        home = tmp_path / f"home{round_}"
        home.mkdir()
        for child in open_at_once(home, 8, delay=3.0):
            assert child.returncode == 0 and child.stdout.startswith("opened"), (
                f"round {round_}: child failed:\n{child.stderr[-3000:]}"
            )
