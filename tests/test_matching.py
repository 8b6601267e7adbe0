"""Finding a procedure: key terms and meaning together, and a flagged lexical fallback when the companion is gone."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sherpa_skills.skills.matcher import Matcher
from sherpa_skills.skills.models import CapturedProcedure, ProcedureStep
from sherpa_skills.skills.store import SkillStore


@pytest.fixture
def store(tmp_path: Path) -> SkillStore:
    store = SkillStore(tmp_path / "store.db")
    matcher = Matcher(store)
    for task_type, description, commands in [
        ("restart-web", "Restart the nginx web server after a config change", ["nginx -t", "systemctl reload nginx"]),
        ("db-backup", "Dump the postgres database to a compressed file", ["pg_dump app > app.sql", "gzip app.sql"]),
        ("release-python", "Build and upload a Python package to the index", ["python -m build", "twine upload dist/*"]),
    ]:
        p = store.add_procedure(CapturedProcedure(id="", task_type=task_type, description=description, success_count=1,
                                                  steps=[ProcedureStep(command=c) for c in commands]))
        assert matcher.index(p) is None
    return store


def test_key_terms_find_a_procedure(store: SkillStore) -> None:
    """The task type's words and the programs used are found in one Aho-Corasick pass."""
    result = Matcher(store).match("db backup please")
    assert result.mode == "hybrid" and result.degraded is None
    assert result.matches[0].procedure.task_type == "db-backup"
    assert "db backup" in result.matches[0].matched_terms


def test_a_paraphrase_is_found_by_meaning(store: SkillStore) -> None:
    """No shared key term: the semantic companion still ranks the right procedure first."""
    result = Matcher(store).match("reboot the http daemon")
    assert result.matches[0].procedure.task_type == "restart-web"
    assert result.matches[0].semantic is not None and result.matches[0].lexical == 0.0


def test_a_corrupt_companion_degrades_to_lexical_and_says_so(store: SkillStore) -> None:
    """Garbage in the companion's database: matching still works, through FTS5, and the result says why."""
    companion = store.path.parent / "companion"
    for f in companion.rglob("chroma.sqlite3"):
        f.write_bytes(b"this is not a database" * 100)
    result = Matcher(store).match("compress the postgres database")
    assert result.mode == "lexical" and "unavailable" in (result.degraded or "")
    assert result.matches[0].procedure.task_type == "db-backup"
    assert store.count() == 3  # the truth lost nothing


def test_reindex_rebuilds_a_missing_companion_from_the_truth(store: SkillStore) -> None:
    """Delete the companion folder; reindex brings meaning-based matching back."""
    shutil.rmtree(store.path.parent / "companion")
    matcher = Matcher(store)
    assert matcher.reindex() == 3
    result = matcher.match("reboot the http daemon")
    assert result.mode == "hybrid" and result.matches[0].procedure.task_type == "restart-web"


def test_candidates_are_not_matched_until_promoted(store: SkillStore) -> None:
    """A mined candidate is invisible to replay matching; promotion makes it visible."""
    p = store.add_procedure(CapturedProcedure(id="", task_type="lint-code", description="Run the linters", status="candidate",
                                              success_count=1, steps=[ProcedureStep(command="ruff check ."), ProcedureStep(command="mypy .")]))
    assert all(m.procedure.id != p.id for m in Matcher(store).match("lint code with ruff").matches)
    store.set_status(p.id, "active")
    assert Matcher(store).match("lint code with ruff").matches[0].procedure.id == p.id
