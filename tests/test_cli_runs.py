"""The CLI's small promises about runs: narrow output that folds instead of dropping, `runs` filters, and removing runs
(`runs delete`, `runs prune`) without leaving anything that refers to a run pointing at nothing. Through the real CLI in a
subprocess (a pipe, not a terminal) on a real home."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from sherpa_skills.cli import main

ROOT = Path(__file__).resolve().parents[1]

LONG_FLOW = """
name: nightly-reconciliation-of-customer-invoices-against-the-general-ledger
initial: start
states:
  start:
    transitions: [{trigger: finish, dest: done}]
  done: {final: true}
"""

WAITING = """
name: waits-for-a-person
initial: ask
states:
  ask: {waiting: true, transitions: [{trigger: answer, dest: done}]}
  done: {final: true}
"""

CHILD = """
name: child-flow
initial: start
states:
  start:
    transitions: [{trigger: finish, dest: done}]
  done: {final: true}
"""

PARENT = """
name: parent-flow
initial: start
states:
  start:
    on_enter: {run_machine: {machine: child.yaml}}
    transitions: [{trigger: finish, dest: done}]
  done: {final: true}
"""

TASK_TYPE = "synchronise-production-database-replicas-overnight"
DESCRIPTION = ("Rebuild the replica indexes after the nightly snapshot completes and verify checksums against primary storage "
               "before traffic returns")


def sh(*argv: str, columns: int = 80, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`sherpa-skills ARGV` in a subprocess whose stdout and stdin are pipes (not a terminal)."""
    env = {**os.environ, "COLUMNS": str(columns), "PYTHONPATH": str(ROOT)}
    env.pop("SHERPA_SKILLS_HOME", None)
    proc = subprocess.run([sys.executable, "-m", "sherpa_skills", *argv], capture_output=True, text=True, env=env, timeout=120,
                          input=stdin if stdin is not None else "", cwd=ROOT)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z0-9]+", text)


def assert_every_word_shown(out: str, cell: str) -> None:
    shown = set(words(out))
    missing = [w for w in words(cell) if w not in shown]
    assert not missing, f"words of {cell!r} missing from the output: {missing}\n{out}"


def run_flow(home: Path, path: Path, *extra: str) -> dict[str, Any]:
    proc = sh("run", str(path), "--json", "--home", str(home), *extra)
    return json.loads(proc.stdout)


def age(home: Path, run_id: str, days: float) -> None:
    """Make a run look `days` old (created and last updated then)."""
    with sqlite3.connect(home / "store.db") as conn:
        then = time.time() - days * 86400
        conn.execute("UPDATE runs SET created = ?, updated = ? WHERE run_id = ?", (then, then, run_id))


def run_ids(home: Path) -> set[str]:
    return {r["run_id"] for r in json.loads(sh("runs", "--json", "--home", str(home)).stdout)}


def rows_of(home: Path, run_id: str) -> int:
    """Rows any per-run table still holds for this run."""
    with sqlite3.connect(home / "store.db") as conn:
        return sum(conn.execute(f"SELECT COUNT(*) FROM {t} WHERE run_id = ?", (run_id,)).fetchone()[0]
                   for t in ("runs", "run_trajectory", "run_log", "run_context", "run_intents", "run_events"))


# ---------------------------------------------------------------- narrow terminals and pipes


class TestNarrowOutput:
    def test_learn_procedures_keeps_task_type_and_description_at_80_columns(self, tmp_path: Path) -> None:
        """Nine columns do not fit in 80: every cell's words are still there, and the id is whole on one line."""
        from sherpa_skills.skills.models import CapturedProcedure, ProcedureStep
        from sherpa_skills.skills.store import SkillStore

        store = SkillStore(home=tmp_path / "home")
        p = store.add_procedure(CapturedProcedure(id="", task_type=TASK_TYPE, description=DESCRIPTION, success_count=1,
                                                  steps=[ProcedureStep(command="make"), ProcedureStep(command="make deploy")]))
        store.close()
        out = sh("learn", "procedures", "--all", "--home", str(tmp_path / "home")).stdout
        assert all(len(line) <= 80 for line in out.splitlines()), out
        assert any(p.id in line for line in out.splitlines())
        for cell in (TASK_TYPE, DESCRIPTION, "2 shell", "confidence", "failed", "health", "description", "task type"):
            assert_every_word_shown(out, cell)

    def test_runs_folds_a_long_workflow_name_between_its_words(self, tmp_path: Path, write_file: Any) -> None:
        home = tmp_path / "home"
        run = run_flow(home, write_file("flow.yaml", LONG_FLOW))
        for columns in (80, 60):
            out = sh("runs", "--home", str(home), columns=columns).stdout
            assert all(len(line) <= columns for line in out.splitlines()), out
            assert run["run_id"] in out
            assert_every_word_shown(out, "nightly-reconciliation-of-customer-invoices-against-the-general-ledger")

    def test_a_heartbeat_alert_is_shown_whole(self, tmp_path: Path) -> None:
        """A broken procedure with a long id raises an alert longer than the terminal: it wraps, it is not cut."""
        from sherpa_skills.skills.models import CapturedProcedure, Execution, ProcedureStep
        from sherpa_skills.skills.store import SkillStore

        home = tmp_path / "home"
        store = SkillStore(home=home)
        p = store.add_procedure(CapturedProcedure(id="", task_type=TASK_TYPE, success_count=1, steps=[ProcedureStep(command="make")]))
        for _ in range(3):
            store.record_execution(Execution(procedure_id=p.id, version=1, started=time.time(), ended=time.time(), outcome="diverged",
                                             reason="exit code 2, expected 0"))
        store.close()
        out = sh("heartbeat", "--home", str(home)).stdout
        report = json.loads(sh("heartbeat", "report", "--json", "--home", str(home)).stdout)[0]
        alert = next(a for a in report["alerts"] if p.id in a)
        assert "re-learning" in alert
        assert_every_word_shown(out, alert)
        assert all(len(line) <= 80 for line in out.splitlines()), out
