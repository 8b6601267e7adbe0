"""Runs keep what they executed: the machine and the files it loaded, once per spec hash, and each step's machine."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from sherpa_skills.cli import main

ROOT = Path(__file__).resolve().parents[2]


def triage(tmp_path: Path) -> Path:
    folder = tmp_path / "triage"
    shutil.copytree(ROOT / "examples" / "support_triage", folder)
    return folder / "workflow.yaml"


def test_a_run_keeps_its_workflow_rules_prompts_and_script_once_per_spec_hash(
    tmp_path: Path, home: Path, run_store: Any
) -> None:
    workflow = triage(tmp_path)
    for _ in range(2):
        assert main(["run", str(workflow), "--home", str(home), "-i", "ticket=charged twice", "-q"]) == 0
    runs, _ = run_store.search_runs()
    hashes = {run_store.machines(r.run_id)[0][1] for r in runs}
    assert len(hashes) == 1 and all(run_store.machines(r.run_id)[0][0] == 0 for r in runs)
    assert run_store.conn.execute("SELECT COUNT(*) FROM run_specs").fetchone()[0] == 1
    record = run_store.machine_record(hashes.pop())
    roles = {f["role"]: f for f in record["files"]}
    assert {"workflow", "rules", "prompt (system)", "prompt (user)", "model script"} <= set(roles)
    assert roles["workflow"]["text"] == workflow.read_text()
    assert roles["rules"]["path"].endswith("triage.rules.yaml")
    assert "respond__approval" in record["mermaid"] and "respond/approval" in record["waiting"]


def test_a_run_resumed_with_allow_changed_keeps_both_machines(tmp_path: Path, home: Path, run_store: Any) -> None:
    workflow = triage(tmp_path)
    h = str(home)
    assert main(["run", str(workflow), "--home", h, "-i", "ticket=The app crashes with an error", "-q"]) == 0
    row = run_store.search_runs()[0][0]
    assert row.status == "waiting"
    workflow.write_text(workflow.read_text().replace("Write a reply.", "Write a short reply."))
    assert main(["resume", row.run_id, "--home", h, "-i", "approved=true", "-q"]) == 2  # changed: refused
    assert main(["resume", row.run_id, "--home", h, "-i", "approved=true", "--allow-changed", "-q"]) == 0
    machines = run_store.machines(row.run_id)
    assert [m[0] for m in machines] == [0, row.tick + 1] and machines[0][1] != machines[1][1]
    assert run_store.get_run(row.run_id).status == "final"


def test_input_given_to_a_waiting_run_is_recorded_at_its_step(tmp_path: Path, home: Path, run_store: Any) -> None:
    """The context a resume adds belongs to the step the run waited at, so the state after an earlier step
    does not show it."""
    workflow = triage(tmp_path)
    h = str(home)
    assert main(["run", str(workflow), "--home", h, "-i", "ticket=The app crashes with an error", "-q"]) == 0
    row = run_store.search_runs()[0][0]
    assert main(["resume", row.run_id, "--home", h, "-i", "approved=false", "-q"]) == 0
    assert run_store.belief_at(row.run_id, 1).context["approved"] is None
    assert run_store.belief_at(row.run_id, row.tick).context["approved"] is False
