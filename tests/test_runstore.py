"""The run store keeps what a run recorded, minus its secrets."""

from __future__ import annotations

from pathlib import Path

from sherpa_skills.engine.belief import TrajectoryEntry
from sherpa_skills.engine.runstore import RunStore, TickRecord

SECRET = "sk-live-0123456789abcdefghijklmnopqrstuv"


def test_context_values_under_secret_names_are_redacted(tmp_path: Path) -> None:
    """A context key named like a secret (api_key) is stored redacted, as the same value is in the run's inputs."""
    store = RunStore(home=tmp_path)
    record = TickRecord(trajectory=[TrajectoryEntry(tick=0, state="a", at=0.0)], context=[("api_key", SECRET), ("name", "Ada")])
    store.create_run("r1", "w", None, None, {"api_key": SECRET}, "a", {}, record)
    context = store.load_belief("r1").context
    assert context["api_key"] != SECRET and context["name"] == "Ada"
    assert store.get_run("r1").inputs["api_key"] != SECRET
    store.close()
