"""Fork a run from any step: a new run from that state, the original untouched, and what is refused."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sherpa_skills.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def waiting_run(tmp_path: Path, home: Path, run_store: Any) -> tuple[Path, Any]:
    folder = tmp_path / "triage"
    shutil.copytree(ROOT / "examples" / "support_triage", folder)
    workflow = folder / "workflow.yaml"
    assert main(["run", str(workflow), "--home", str(home), "-i", "ticket=The app crashes with an error", "-q"]) == 0
    return workflow, run_store.search_runs()[0][0]


def _rows(store: Any, run_id: str) -> list[Any]:
    return [
        store.conn.execute(f"SELECT * FROM {t} WHERE run_id = ? ORDER BY rowid", (run_id,)).fetchall()
        for t in ("runs", "run_trajectory", "run_log", "run_context")
    ]


def test_fork_from_a_step_runs_from_that_state_and_leaves_the_original(
    waiting_run: tuple[Path, Any], home: Path, run_store: Any
) -> None:
    from sherpa_skills.engine.fork import fork_run
    from sherpa_skills.engine.workflow import load_workflow

    workflow, row = waiting_run
    before = _rows(run_store, row.run_id)
    # Step 2 is triage/technical; the fork goes on from there with another customer.
    result = fork_run(run_store, row.run_id, 2, load_workflow(workflow), inputs={"customer": "Ada"})
    assert result.status == "waiting" and result.state == "respond/approval"
    assert result.run_id != row.run_id
    assert _rows(run_store, row.run_id) == before
    assert run_store.forked_from(result.run_id) == (row.run_id, 2)
    assert run_store.forks(row.run_id) == [(result.run_id, 2)]
    trajectory = run_store.load_belief(result.run_id).trajectory
    assert [t.state for t in trajectory[:3]] == [t.state for t in run_store.belief_at(row.run_id, 2).trajectory]
    assert run_store.load_belief(result.run_id).context["customer"] == "Ada"
    assert run_store.machines(result.run_id) == run_store.machines(row.run_id)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--at", "99"], "has steps 0 to 5"),
        (["--at", "1", "--trigger", "aprove"], "no such transition"),
        (["--at", "1", "-i", "nosuch=1"], "nosuch"),
    ],
)
def test_fork_refuses_what_it_cannot_do(
    waiting_run: tuple[Path, Any], home: Path, run_store: Any, argv: list[str], message: str, capsys: Any
) -> None:
    _, row = waiting_run
    runs = run_store.search_runs()[1]
    assert main(["fork", row.run_id, *argv, "--home", str(home), "--yes", "-q"]) == 2
    assert message in capsys.readouterr().err
    assert run_store.search_runs()[1] == runs  # nothing was made


def test_fork_refuses_a_final_step_and_a_changed_workflow(
    waiting_run: tuple[Path, Any], home: Path, run_store: Any, capsys: Any
) -> None:
    workflow, row = waiting_run
    h = str(home)
    assert main(["resume", row.run_id, "--home", h, "-i", "approved=true", "-q"]) == 0
    last = run_store.get_run(row.run_id).tick
    assert main(["fork", row.run_id, "--at", str(last), "--home", h, "--yes", "-q"]) == 2
    assert "final state 'sent'" in capsys.readouterr().err
    workflow.write_text(workflow.read_text().replace("Write a reply.", "Write a short reply."))
    assert main(["fork", row.run_id, "--at", "2", "--home", h, "--yes", "-q"]) == 2
    assert "--allow-changed" in capsys.readouterr().err
    assert main(["fork", row.run_id, "--at", "2", "--home", h, "--yes", "-q", "--allow-changed"]) == 0


def test_fork_cli_asks_unless_yes_and_dry_run_runs_nothing(waiting_run: tuple[Path, Any], home: Path) -> None:
    """A real subprocess without a terminal: no --yes is refused; --dry-run --json prints only the plan."""
    _, row = waiting_run
    cmd = [sys.executable, "-m", "sherpa_skills", "fork", row.run_id, "--at", "2", "--home", str(home)]
    asked = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert asked.returncode == 2 and "its actions execute" in asked.stderr and "--yes" in asked.stderr
    dry = subprocess.run([*cmd, "--dry-run", "--json"], capture_output=True, text=True, timeout=60)
    plan = json.loads(dry.stdout)
    assert dry.returncode == 0 and plan["state"] == "triage/technical" and plan["dry_run"] is True
    ran = subprocess.run([*cmd, "--yes", "--json"], capture_output=True, text=True, timeout=60)
    result = json.loads(ran.stdout)
    assert ran.returncode == 0 and result["status"] == "waiting" and result["run_id"] != row.run_id
