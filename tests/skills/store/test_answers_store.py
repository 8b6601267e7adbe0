"""m008_aliases: the tables judges' answers live in, and the store-level rules (one row per pair, newer answer wins)."""

from __future__ import annotations

import pytest

from sherpa_skills.errors import StoreError
from sherpa_skills.skills.store.answers import Answers
from sherpa_skills.skills.store.database import ProcedureDatabase
from sherpa_skills.skills.store.migrations import MIGRATIONS
from sherpa_skills.skills.store.models import CapturedProcedure, ProcedureStep


def test_m008_comes_after_the_promotions_and_before_the_decision_memory() -> None:
    names = [m.__name__ for m in MIGRATIONS]
    at = names.index("m008_aliases")
    assert names[at - 1 : at + 2] == ["m007_promotions", "m008_aliases", "m009_decision_examples"]


def test_one_answer_per_pair_and_the_newer_wins(procedure_db: ProcedureDatabase) -> None:
    p = procedure_db.add_procedure(
        CapturedProcedure(id="", task_type="t", description="d", steps=[ProcedureStep(command="true")])
    )
    answers = Answers(procedure_db)
    v0 = answers.version()
    first = answers.add_alias(p.id, "do the thing", "do thing")
    assert answers.add_alias(p.id, "Do the thing!", "do thing").id == first.id  # the same key is one alias
    assert answers.add_alias(p.id, "do the thing", "do thing", scope="other").id != first.id  # another scope
    answers.add_rejection(p.id, "do the thing", "do thing")
    assert [a.kind for a in answers.entries(p.id)] == ["alias", "rejection"]  # the unscoped alias was withdrawn
    assert answers.rejected("do thing", None) == {p.id} and answers.rejected("do thing", "other") == set()
    assert answers.version() > v0
    with pytest.raises(StoreError, match="no procedure"):
        answers.add_alias("nope", "x", "x")


def test_a_judge_confirming_a_runs_alias_makes_it_theirs(procedure_db: ProcedureDatabase) -> None:
    """A run's alias matches its own wording only; a judge or person who confirms the same wording later makes it a
    full alias (that may vouch), keeping the run it came from. Another run does not take a judge's alias back."""
    p = procedure_db.add_procedure(
        CapturedProcedure(id="", task_type="t", description="d", steps=[ProcedureStep(command="true")])
    )
    answers = Answers(procedure_db)
    ran = answers.add_alias(p.id, "do the thing", "do thing", scope="t", by="run:r1")
    answers.set_source(ran.id, "run:r1")
    [row] = answers.alias_rows("t")
    assert row.exact_only
    judged = answers.add_alias(p.id, "do the thing", "do thing", scope="t", by="alice")
    assert (judged.id, judged.by, judged.source) == (ran.id, "alice", "run:r1")
    [row] = answers.alias_rows("t")
    assert not row.exact_only
    again = answers.add_alias(p.id, "do the thing", "do thing", scope="t", by="run:r2")
    assert (again.id, again.by) == (ran.id, "alice")
    assert answers.add_alias(p.id, "do the thing", "do thing", scope="t", by="bob").by == "alice"  # first person stays


def test_the_floors_points_are_read_without_walking_the_unasked_aliases(procedure_db: ProcedureDatabase) -> None:
    """m018: a match reads the floor's points (`asked_points`) each time; a store's aliases are mostly runs' wordings
    nobody was asked about, so those reads go through indexes of the asked rows only, not a walk over the scope."""
    from sherpa_skills.skills.store.answers import Asked

    p = procedure_db.add_procedure(
        CapturedProcedure(id="", task_type="t", description="d", steps=[ProcedureStep(command="true")])
    )
    answers = Answers(procedure_db)
    for n in range(30):
        answers.add_alias(p.id, f"wording {n}", f"wording {n}", scope="wf", by="run:r")
    answers.add_alias(p.id, "asked once", "asked once", scope="wf", by="cli", asked=Asked(score=0.5, top=True))
    answers.add_rejection(p.id, "not this", "not this", scope="wf", asked=Asked(score=0.7, top=True))
    statements: list[str] = []
    procedure_db.conn.set_trace_callback(statements.append)  # type: ignore[attr-defined]  # values bound in
    try:
        points = answers.asked_points("wf")
    finally:
        procedure_db.conn.set_trace_callback(None)  # type: ignore[attr-defined]
    assert sorted((pt.score, pt.wrong) for pt in points) == [(0.5, False), (0.7, True)]
    plans = {
        table: " ".join(str(row[-1]) for row in procedure_db.conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
        for sql in statements
        for table in ("aliases", "rejections")
        if f"FROM {table} " in sql
    }
    assert "USING INDEX aliases_asked" in plans["aliases"], plans
    assert "USING INDEX rejections_asked" in plans["rejections"], plans
