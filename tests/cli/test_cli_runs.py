"""The CLI's small promises about runs: narrow output that folds instead of dropping, `runs` filters, and removing runs
(`runs delete`, `runs prune`) without leaving anything that refers to a run pointing at nothing.
Through the real CLI in a
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

ROOT = Path(__file__).resolve().parents[2]

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
DESCRIPTION = (
    "Rebuild the replica indexes after the nightly snapshot completes and verify checksums against primary storage "
    "before traffic returns"
)


def sh(*argv: str, columns: int = 80, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`sherpa-skills ARGV` in a subprocess whose stdout and stdin are pipes (not a terminal)."""
    env = {**os.environ, "COLUMNS": str(columns), "PYTHONPATH": str(ROOT)}
    env.pop("SHERPA_SKILLS_HOME", None)
    proc = subprocess.run(
        [sys.executable, "-m", "sherpa_skills", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        input=stdin if stdin is not None else "",
        cwd=ROOT,
    )
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
        return sum(
            conn.execute(f"SELECT COUNT(*) FROM {t} WHERE run_id = ?", (run_id,)).fetchone()[0]
            for t in ("runs", "run_trajectory", "run_log", "run_context", "run_intents", "run_events")
        )


# ---------------------------------------------------------------- narrow terminals and pipes


class TestNarrowOutput:
    def test_learn_procedures_keeps_task_type_and_description_at_80_columns(self, tmp_path: Path) -> None:
        """At 80 columns every cell's words are still there (headers short on purpose), and the id is whole."""
        from sherpa_skills.skills.store.database import ProcedureDatabase
        from sherpa_skills.skills.store.models import CapturedProcedure, ProcedureStep

        store = ProcedureDatabase(home=tmp_path / "home")
        p = store.add_procedure(
            CapturedProcedure(
                id="",
                task_type=TASK_TYPE,
                description=DESCRIPTION,
                success_count=1,
                steps=[ProcedureStep(command="make"), ProcedureStep(command="make deploy")],
            )
        )
        store.close()
        out = sh("learn", "procedures", "--all", "--home", str(tmp_path / "home")).stdout
        assert all(len(line) <= 80 for line in out.splitlines()), out
        assert any(p.id in line for line in out.splitlines())
        for cell in (TASK_TYPE, DESCRIPTION, "2 shell steps", "conf", "ok/fail", "health", "task (steps)"):
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
        from sherpa_skills.skills.store.database import ProcedureDatabase
        from sherpa_skills.skills.store.models import CapturedProcedure, Execution, ProcedureStep

        home = tmp_path / "home"
        store = ProcedureDatabase(home=home)
        p = store.add_procedure(
            CapturedProcedure(id="", task_type=TASK_TYPE, success_count=1, steps=[ProcedureStep(command="make")])
        )
        for _ in range(3):
            store.record_execution(
                Execution(
                    procedure_id=p.id,
                    version=1,
                    started=time.time(),
                    ended=time.time(),
                    outcome="diverged",
                    reason="exit code 2, expected 0",
                )
            )
        store.close()
        out = sh("heartbeat", "--home", str(home)).stdout
        report = json.loads(sh("heartbeat", "report", "--json", "--home", str(home)).stdout)[0]
        alert = next(a for a in report["alerts"] if p.id in a)
        assert "re-learning" in alert
        assert_every_word_shown(out, alert)
        assert all(len(line) <= 80 for line in out.splitlines()), out


# ---------------------------------------------------------------- runs --status / --workflow


@pytest.fixture
def home(tmp_path: Path, write_file: Any) -> dict[str, Any]:
    """A home with two finished runs of one workflow and one waiting run of another."""
    home = tmp_path / "home"
    flow, waiting = write_file("flow.yaml", LONG_FLOW), write_file("waiting.yaml", WAITING)
    done = [run_flow(home, flow)["run_id"] for _ in range(2)]
    wait = run_flow(home, waiting)["run_id"]
    return {
        "home": home,
        "final": done,
        "waiting": wait,
        "flow": "nightly-reconciliation-of-customer-invoices-against-the-general-ledger",
    }


class TestRunsFilters:
    def test_status_and_workflow_filter_and_plain_runs_lists_everything(self, home: dict[str, Any]) -> None:
        h = str(home["home"])
        assert run_ids(home["home"]) == {*home["final"], home["waiting"]}
        waiting = json.loads(sh("runs", "--status", "waiting", "--json", "--home", h).stdout)
        assert [r["run_id"] for r in waiting] == [home["waiting"]]
        by_flow = json.loads(sh("runs", "--workflow", home["flow"], "--json", "--home", h).stdout)
        assert {r["run_id"] for r in by_flow} == set(home["final"])
        assert (
            json.loads(sh("runs", "--workflow", home["flow"], "--status", "waiting", "--json", "--home", h).stdout)
            == []
        )
        out = sh("runs", "--status", "final", "--home", h).stdout
        assert all(i in out for i in home["final"]) and home["waiting"] not in out

    def test_an_unknown_status_is_a_usage_error_naming_the_valid_ones(self, home: dict[str, Any]) -> None:
        proc = sh("runs", "--status", "done", "--json", "--home", str(home["home"]))
        assert proc.returncode == 2 and proc.stdout == ""
        assert "'done'" in proc.stderr and all(s in proc.stderr for s in ("running", "waiting", "final", "error"))


# ---------------------------------------------------------------- runs delete


class TestRunsDelete:
    def test_delete_removes_every_row_and_the_log_file_in_one_go(self, home: dict[str, Any]) -> None:
        h, gone, stays = home["home"], home["final"][0], home["final"][1]
        assert (h / "logs" / f"{gone}.jsonl").exists()
        proc = sh("runs", "delete", gone, "--yes", "--json", "--home", str(h))
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout) == {"dry_run": False, "deleted": [gone], "kept": [], "logs_deleted": 1}
        assert rows_of(h, gone) == 0 and not (h / "logs" / f"{gone}.jsonl").exists()
        assert rows_of(h, stays) > 0 and run_ids(h) == {stays, home["waiting"]}

    def test_a_unique_prefix_names_a_run_and_text_output_says_what_went(self, home: dict[str, Any]) -> None:
        gone = home["final"][0]
        proc = sh("runs", "delete", gone[:8], "--yes", "--home", str(home["home"]))
        assert proc.returncode == 0 and f"deleted 1 run: {gone}" in proc.stdout
        assert gone not in run_ids(home["home"])

    def test_dry_run_lists_what_would_go_and_deletes_nothing(self, home: dict[str, Any]) -> None:
        gone = home["final"][0]
        proc = sh("runs", "delete", gone, "--dry-run", "--json", "--home", str(home["home"]))
        assert proc.returncode == 0
        assert json.loads(proc.stdout) == {"dry_run": True, "deleted": [gone], "kept": [], "logs_deleted": 1}
        assert gone in run_ids(home["home"]) and (home["home"] / "logs" / f"{gone}.jsonl").exists()
        text = sh("runs", "delete", gone, "--dry-run", "--home", str(home["home"])).stdout
        assert f"would delete 1 run: {gone}" in text and "dry run" in text

    def test_without_yes_and_without_a_terminal_nothing_is_deleted(self, home: dict[str, Any]) -> None:
        proc = sh("runs", "delete", home["final"][0], "--home", str(home["home"]), stdin="y\n")
        assert proc.returncode == 2 and "--yes" in proc.stderr and proc.stdout == ""
        assert home["final"][0] in run_ids(home["home"])

    def test_an_unknown_id_is_exit_2_and_nothing_is_deleted(self, home: dict[str, Any]) -> None:
        proc = sh("runs", "delete", home["final"][0], "no-such-run", "--yes", "--json", "--home", str(home["home"]))
        assert proc.returncode == 2 and "no-such-run" in proc.stderr and proc.stdout == ""
        assert home["final"][0] in run_ids(home["home"])

    def test_a_waiting_run_is_refused_unless_forced(self, home: dict[str, Any]) -> None:
        h, wait = str(home["home"]), home["waiting"]
        proc = sh("runs", "delete", wait, home["final"][0], "--yes", "--home", h)
        assert proc.returncode == 2 and wait in proc.stderr and "waiting" in proc.stderr and "--force" in proc.stderr
        assert {wait, home["final"][0]} <= run_ids(home["home"])
        proc = sh("runs", "delete", wait, "--yes", "--force", "--json", "--home", h)
        assert proc.returncode == 0 and json.loads(proc.stdout)["deleted"] == [wait]

    def test_a_running_run_is_refused_unless_forced(self, home: dict[str, Any]) -> None:
        with sqlite3.connect(home["home"] / "store.db") as conn:  # as a run whose process is still working looks
            conn.execute("UPDATE runs SET status = 'running' WHERE run_id = ?", (home["final"][0],))
        proc = sh("runs", "delete", home["final"][0], "--yes", "--home", str(home["home"]))
        assert proc.returncode == 2 and "running" in proc.stderr and "--force" in proc.stderr

    def test_a_child_run_stays_while_its_parent_does(self, tmp_path: Path, write_file: Any) -> None:
        """A run_machine child is in its parent's log:
        deleting the child alone would leave the parent pointing at nothing."""
        home = tmp_path / "home"
        write_file("child.yaml", CHILD)
        parent = run_flow(home, write_file("parent.yaml", PARENT))["run_id"]
        child = (run_ids(home) - {parent}).pop()
        proc = sh("runs", "delete", child, "--yes", "--json", "--home", str(home))
        assert proc.returncode == 0
        result = json.loads(proc.stdout)
        assert (
            result["deleted"] == [] and result["kept"][0]["run_id"] == child and parent in result["kept"][0]["reason"]
        )
        assert child in run_ids(home)
        text = sh("runs", "delete", child, "--yes", "--home", str(home)).stdout
        assert f"kept {child}" in text and parent in text
        both = json.loads(sh("runs", "delete", parent, child, "--yes", "--json", "--home", str(home)).stdout)
        assert sorted(both["deleted"]) == sorted([parent, child]) and both["kept"] == []
        assert run_ids(home) == set()

    def test_a_run_a_procedure_execution_or_capture_refers_to_stays(self, home: dict[str, Any]) -> None:
        from sherpa_skills.skills.store.database import ProcedureDatabase
        from sherpa_skills.skills.store.models import CapturedProcedure, Execution, ProcedureStep

        replayed, captured = home["final"]
        store = ProcedureDatabase(home=home["home"])
        p = store.add_procedure(
            CapturedProcedure(
                id="",
                task_type="ship",
                steps=[ProcedureStep(command="make")],
                source="run",
                context={"captured_from_run": captured},
            )
        )
        store.record_execution(
            Execution(
                procedure_id=p.id, version=1, started=time.time(), ended=time.time(), outcome="success", run_id=replayed
            )
        )
        store.close()
        result = json.loads(
            sh("runs", "delete", replayed, captured, "--yes", "--json", "--home", str(home["home"])).stdout
        )
        kept = {k["run_id"]: k["reason"] for k in result["kept"]}
        assert result["deleted"] == [] and set(kept) == {replayed, captured}
        assert p.id in kept[replayed] and "execution" in kept[replayed]
        assert p.id in kept[captured] and "captured" in kept[captured]
        assert {replayed, captured} <= run_ids(home["home"])

    def test_the_heartbeat_retention_keeps_what_is_referenced_too(self, home: dict[str, Any]) -> None:
        """The heartbeat's 30-day retention deletes old finished runs, but never one an execution records."""
        from sherpa_skills.skills.store.database import ProcedureDatabase
        from sherpa_skills.skills.store.models import CapturedProcedure, Execution, ProcedureStep

        h = home["home"]
        replayed, plain = home["final"]
        store = ProcedureDatabase(home=h)
        p = store.add_procedure(
            CapturedProcedure(id="", task_type="ship", steps=[ProcedureStep(command="make")], source="manual")
        )
        store.record_execution(
            Execution(
                procedure_id=p.id, version=1, started=time.time(), ended=time.time(), outcome="success", run_id=replayed
            )
        )
        store.close()
        age(h, replayed, 40)
        age(h, plain, 40)
        sh("heartbeat", "--once", "--json", "--home", str(h))
        left = run_ids(h)
        assert replayed in left and plain not in left


# ---------------------------------------------------------------- runs prune


class TestRunsPrune:
    def test_prune_deletes_finished_runs_older_than_the_age_and_keeps_waiting_ones(self, home: dict[str, Any]) -> None:
        h = home["home"]
        old, new = home["final"]
        age(h, old, 40)
        age(h, home["waiting"], 40)
        dry = json.loads(sh("runs", "prune", "--older-than", "30d", "--dry-run", "--json", "--home", str(h)).stdout)
        assert dry["dry_run"] is True and dry["deleted"] == [old]
        assert dry["kept"] == [{"run_id": home["waiting"], "reason": "waiting: pass --force to delete it"}]
        assert old in run_ids(h)
        proc = sh("runs", "prune", "--older-than", "30d", "--yes", "--json", "--home", str(h))
        assert proc.returncode == 0 and json.loads(proc.stdout)["deleted"] == [old]
        assert run_ids(h) == {new, home["waiting"]} and rows_of(h, old) == 0
        forced = json.loads(
            sh("runs", "prune", "--older-than", "2w", "--force", "--yes", "--json", "--home", str(h)).stdout
        )
        assert forced["deleted"] == [home["waiting"]] and run_ids(h) == {new}

    def test_prune_without_yes_and_without_a_terminal_refuses(self, home: dict[str, Any]) -> None:
        age(home["home"], home["final"][0], 40)
        proc = sh("runs", "prune", "--older-than", "12h", "--home", str(home["home"]))
        assert proc.returncode == 2 and "--yes" in proc.stderr
        assert home["final"][0] in run_ids(home["home"])

    @pytest.mark.parametrize("bad", ["30", "30x", "-1d", "0d", "abc", "1d2", "99999999999w"])
    def test_a_bad_duration_is_exit_2(self, bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        with pytest.raises(SystemExit) as exc:
            main(["runs", "prune", f"--older-than={bad}", "--yes", "--home", str(tmp_path / "home")])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert "--older-than" in err and "12h" in err and "Traceback" not in err


def test_the_cli_offers_the_statuses_the_engine_writes() -> None:
    from sherpa_skills.cli.main import RUN_STATUSES as offered
    from sherpa_skills.engine.runstore import RUN_STATUSES

    assert offered == RUN_STATUSES


@pytest.mark.parametrize(("answer", "code"), [(b"n\n", 2), (b"y\n", 0)])
def test_at_a_terminal_delete_asks_and_does_only_what_the_person_says(
    home: dict[str, Any], answer: bytes, code: int
) -> None:
    import pty

    gone = home["final"][0]
    pid, fd = pty.fork()
    if pid == 0:  # the child: the CLI with a real terminal on stdin, stdout and stderr
        os.environ["PYTHONPATH"] = str(ROOT)
        os.execv(
            sys.executable, [sys.executable, "-m", "sherpa_skills", "runs", "delete", gone, "--home", str(home["home"])]
        )
    os.write(fd, answer)
    out = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    text = out.decode()
    assert os.waitstatus_to_exitcode(status) == code, text
    assert f"delete 1 run and everything they recorded ({gone})? [y/N]" in text
    assert (gone in run_ids(home["home"])) is (answer == b"n\n")
