"""What replay saved is computed once (skills/store/stats.py): a run's own figures, `learn stats` and the browser
view agree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sherpa_skills.cli import main
from sherpa_skills.skills.store.database import ProcedureDatabase
from sherpa_skills.skills.store.stats import stats

WORKFLOW = str(Path(__file__).resolve().parents[3] / "examples" / "ticket_learning" / "workflow.yaml")
PACKAGE = Path(__file__).resolve().parents[3] / "sherpa_skills"


def test_a_runs_savings_are_what_stats_reports_for_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    results = []
    for order, extra in (("4417", []), ("4418", []), ("4419", []), ("4420", ["-i", "disputed=yes"])):
        args = ["run", WORKFLOW, "--home", str(tmp_path), "-i", "ticket=Please refund my order, it arrived damaged"]
        assert main([*args, "-i", f"order={order}", *extra, "--json"]) == 0
        results.append(json.loads(capsys.readouterr().out))
    store = ProcedureDatabase(path=tmp_path / "store.db")
    try:
        by_run = {r["run_id"]: r for r in stats(store)["per_run"]}
    finally:
        store.close()
    for result in results[2:]:
        assert (by_run[result["run_id"]]["tokens_saved"], by_run[result["run_id"]]["llm_calls_saved"]) == (
            result["tokens_saved"],
            result["llm_calls_saved"],
        )
    assert results[3]["llm_calls_saved"] == 1  # diverged after one replayed decision, and still saved that one


def test_the_browser_view_takes_stats_from_the_skills_package_not_the_cli() -> None:
    assert "cli.learn" not in (PACKAGE / "ui" / "views.py").read_text()
