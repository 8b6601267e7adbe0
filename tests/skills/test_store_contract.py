"""The skill store's contract, held by both engines: every test runs on SQLite (the home's store.db) and on PostgreSQL
(a fresh database of the tests' own cluster); then what only several machines on one PostgreSQL database can show:
concurrent captures and outcomes lose nothing, and a procedure captured from one home is matched from another."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _engines import Engine

from sherpa_skills.errors import StoreError, StoreFileError
from sherpa_skills.skills.decide.examples import Example, add_examples, example_counts, examples_after
from sherpa_skills.skills.run_removal import must_stay
from sherpa_skills.skills.store.answers import Answers, Asked
from sherpa_skills.skills.store.branches import add_branch, branches
from sherpa_skills.skills.store.database import ProcedureDatabase
from sherpa_skills.skills.store.models import (
    CapturedLearning,
    CapturedProcedure,
    Execution,
    ProcedureStep,
    RecordedCheck,
    RecordedDecision,
)


@pytest.fixture
def engine(engine_url: str | None, tmp_path: Path) -> Iterator[Engine]:
    found = Engine("postgresql" if engine_url else "sqlite", tmp_path, engine_url)
    yield found
    found.close()


@pytest.fixture
def store(engine: Engine) -> ProcedureDatabase:
    return engine.procedures()


def procedure(task_type: str = "build-lib", *commands: str, description: str = "") -> CapturedProcedure:
    steps = [ProcedureStep(command=c) for c in (commands or ("make", "make test"))]
    return CapturedProcedure(
        id="", task_type=task_type, description=description or f"{task_type} procedure", steps=steps, success_count=1
    )


def execution(p: CapturedProcedure, outcome: str, run_id: str | None = None) -> Execution:
    now = time.time()
    return Execution(procedure_id=p.id, version=p.version, started=now, ended=now, outcome=outcome, run_id=run_id)  # type: ignore[arg-type]


def test_the_engine_is_the_one_asked_for(engine: Engine, store: ProcedureDatabase) -> None:
    assert store.dialect == engine.name
    assert not (engine.home() / "store.db").exists() if engine.url else (engine.home() / "store.db").is_file()


def test_the_same_steps_are_one_procedure_credited_again(store: ProcedureDatabase) -> None:
    first, new = store.insert_or_credit(procedure())
    again, new_again = store.insert_or_credit(procedure(description="said otherwise"))
    assert new and not new_again and again.id == first.id and again.success_count == 2
    assert store.count() == 1 and store.versions(first.id)[0]["success_count"] == 2
    assert store.record_success(first.id[:6]).success_count == 3  # an id prefix names it
    other, _ = store.insert_or_credit(procedure("other-task"))  # the same steps, another task type: another one
    assert other.id != first.id and store.count() == 2
    with pytest.raises(StoreError, match="already exists"):
        store.insert_or_credit(procedure("third").model_copy(update={"id": first.id}))


def test_a_new_version_keeps_the_old_ones(store: ProcedureDatabase) -> None:
    p = store.add_procedure(procedure())
    v2 = store.add_version(p.id, [ProcedureStep(command="make check")], planned_tokens=40)
    assert v2.version == 2 and v2.success_count == 1 and [s.command for s in v2.steps] == ["make check"]
    assert [v["version"] for v in store.versions(p.id)] == [1, 2]
    assert [s.command for s in store.get(p.id, version=1).steps] == ["make", "make test"]
    twin = store.add_procedure(procedure("build-lib", "cmake ."))
    with pytest.raises(StoreError, match="repeat procedure"):
        store.add_version(twin.id, [ProcedureStep(command="make check")])
    with pytest.raises(StoreError, match="no version 7"):
        store.get(p.id, version=7)


def test_executions_change_counts_and_health(store: ProcedureDatabase) -> None:
    p = store.add_procedure(procedure())
    ids = [store.record_execution(execution(p, o)).id for o in ("success", "success", "diverged", "dry-run")]
    assert ids == sorted(ids) and len(set(ids)) == 4
    now = store.get(p.id)
    assert (now.success_count, now.failure_count) == (3, 1)  # the capture's success, two replays, one divergence
    health = store.health(p.id)
    assert health.total_executions == 3 and health.last_failure is not None
    assert [e.outcome for e in store.executions(p.id, limit=2)] == ["dry-run", "diverged"]
    assert store.success_replays(p.id) == 2
    assert store.delete_executions_before(time.time() + 60, keep_per_procedure=1) == 3
    assert [e.id for e in store.executions(p.id)] == [ids[-1]]


def test_the_same_lesson_is_counted_not_copied(store: ProcedureDatabase) -> None:
    lesson = CapturedLearning(task_type="deploy", command="kubectl apply", error="forbidden", source="run")
    first = store.add_learning(lesson.model_copy(update={"created": 100.0}))
    again = store.add_learning(lesson.model_copy(update={"command": " kubectl   apply", "created": 200.0}))
    older = store.add_learning(lesson.model_copy(update={"created": 50.0}))  # an old copy never moves last_seen back
    assert first.id == again.id == older.id and older.seen == 3 and older.last_seen == 200.0
    assert [x.id for x in store.learnings("deploy")] == [first.id]
    assert store.learnings_version() == (1, first.id)


def test_aliases_and_rejections_withdraw_each_other(store: ProcedureDatabase) -> None:
    p = store.add_procedure(procedure())
    answers = Answers(store)
    before = answers.version()
    alias = answers.add_alias(p.id, "build the library", "build library", vector=b"\x00\x01", embedder="e")
    assert answers.add_alias(p.id, "build the library", "build library").id == alias.id  # the same wording: one
    assert [r.key for r in answers.alias_rows(None)] == ["build library"] and answers.alias_rows(None)[0].vector
    rejection = answers.add_rejection(p.id, "build the library", "build library")
    assert answers.alias_rows(None) == [] and answers.rejected("build library", None) == {p.id}
    assert answers.forget(rejection.id).kind == "rejection" and answers.rejected("build library", None) == set()
    assert answers.version() == before + 4
    with pytest.raises(StoreError, match="no alias 'a999'"):
        answers.get("a999")


def test_answers_keep_what_was_asked_and_the_weightier_confirmer(store: ProcedureDatabase) -> None:
    """The match floor's points (skills/match/floor.py): an alias confirming the best candidate is a right point, one
    confirming another a wrong one, a rejection of the best a wrong one; a person answering an agent's alias again
    makes it theirs, an agent answering a person's changes nothing."""
    p, q = store.add_procedure(procedure()), store.add_procedure(procedure("lint", "ruff check ."))
    answers = Answers(store)
    answers.add_alias(p.id, "build it", "build", by="agent:ops", asked=Asked(score=0.4, top=True))
    answers.add_alias(q.id, "lint it", "lint", by="alice", asked=Asked(score=0.3, top=False))
    answers.add_rejection(p.id, "test it", "test", by="alice", asked=Asked(score=0.2, top=True))
    answers.add_rejection(q.id, "test it", "test", by="alice")  # not the best: no point
    assert [(pt.score, pt.wrong, pt.by) for pt in answers.asked_points(None)] == [
        (0.4, False, "agent:ops"),
        (0.3, True, "alice"),
        (0.2, True, "alice"),
    ]
    answers.add_alias(p.id, "build it", "build", by="bob")  # asked again without a score: the score stays
    answers.add_alias(q.id, "lint it", "lint", by="agent:ops", asked=Asked(score=0.9, top=True))
    assert [(pt.score, pt.by) for pt in answers.asked_points(None)][:2] == [(0.4, "bob"), (0.3, "alice")]
    assert answers.asked_points("build-lib") == []  # another scope


def test_replays_that_held_are_points_of_their_scope(store: ProcedureDatabase) -> None:
    """skills/match/floor.py: an executed replay chosen by relevance that held; once per execution."""
    p = store.add_procedure(procedure())
    answers = Answers(store)
    before = answers.version()
    answers.add_held_replay(7, p.id, None, 0.88, "alice")
    answers.add_held_replay(7, p.id, None, 0.88, "alice")  # the same execution again: one point
    answers.add_held_replay(8, p.id, "build-lib", 0.91, "agent:ops")
    assert [(pt.score, pt.wrong, pt.by, pt.held) for pt in answers.asked_points(None)] == [(0.88, False, "alice", True)]
    assert [pt.by for pt in answers.asked_points("build-lib")] == ["agent:ops"]
    assert answers.asked_scopes() == ["", "build-lib"] and answers.version() > before


def test_branches_count_the_runs_that_took_them(store: ProcedureDatabase) -> None:
    p = store.add_procedure(procedure())
    for run in ("r1", "r2"):
        runs = add_branch(store, p.id, "sig", step=2, state="s", reason="exception", decisions=[{"a": 1}], run_id=run)
    assert runs == 2
    (branch,) = branches(store, p.id)
    assert (branch["runs"], branch["first_run"], branch["last_run"], branch["decisions"]) == (2, "r1", "r2", [{"a": 1}])


def test_decision_examples_keep_the_newest_of_each_decision(store: ProcedureDatabase) -> None:
    made = [
        Example(workflow="w", state="s", trigger="refund", args={"n": i % 2}, features={}, path="", task=f"t{i}")
        for i in range(6)
    ]
    add_examples(store, made)
    kept = examples_after(store, "w", newest=2)
    assert [e.task for e in kept] == ["t2", "t3", "t4", "t5"]
    assert [e.task for e in examples_after(store, "w", after=kept[-2].id)] == ["t5"]
    assert example_counts(store) == [
        {"workflow": "w", "state": "s", "trigger": "refund", "examples": 6, "last": made[-1].created}
    ]


def test_a_promotion_opens_a_fresh_window_and_is_kept(store: ProcedureDatabase) -> None:
    p = store.add_procedure(procedure())
    store.record_execution(execution(p, "error"))
    promoted = store.promote(p.id, by="ana")
    assert (promoted.status, promoted.success_count, promoted.failure_count) == ("active", 2, 0)
    assert store.versions(p.id)[0]["success_count"] == 2 and store.health(p.id).status == "new"
    (row,) = store.promotions(p.id)
    assert (row["promoted_by"], row["failure_before"], row["executions_before"]) == ("ana", 1, 1)


def test_the_generation_moves_with_what_matching_reads(store: ProcedureDatabase) -> None:
    start = store.generation()
    p = store.add_procedure(procedure())
    assert store.generation() == start + 1
    store.record_success(p.id)
    store.record_execution(execution(p, "success"))
    assert store.generation() == start + 1  # counts are not what the index holds
    store.set_status(p.id, "candidate")
    store.update_mined(p.id, {"support": 3}, 4)
    assert store.generation() == start + 3 and store.get(p.id).context == {"support": 3}


def test_the_identity_is_fixed_for_the_store(engine: Engine, store: ProcedureDatabase) -> None:
    assert store.identity() == engine.procedures().identity() != 0


def test_text_search_scores_best_first_within_one(store: ProcedureDatabase) -> None:
    store.add_procedure(procedure("rotate-logs", "mv app.log archive/", description="rotate the logs"))
    store.add_procedure(procedure("build-lib", "make", description="build the library and its logs"))
    found = store.fts_search("rotate logs")
    assert [pid.split("-")[0] for pid, _ in found] == ["rotate", "build"]
    assert found[0][1] == 1.0 and 0 < found[1][1] < 1.0
    assert store.fts_search("?") == [] and store.fts_search("zzz") == []


def test_runs_a_procedure_was_captured_from_stay(engine: Engine, store: ProcedureDatabase) -> None:
    runs = engine.runs()
    store.add_procedure(procedure().model_copy(update={"context": {"captured_from_run": "run-a"}}))
    p = store.add_procedure(procedure("other", "ls"))
    store.record_execution(execution(p, "success", run_id="run-b"))
    now = time.time()
    runs.conn.execute(
        "INSERT INTO run_log (run_id, tick, action, inputs, outputs, status, started, duration_ms, tokens, cost)"
        " VALUES (?, 1, 'run_machine', '{}', ?, 'ok', ?, 0, 0, 0)",
        ("run-parent", json.dumps({"run_id": "run-child"}), now),
    )
    kept = must_stay(runs.conn, ["run-a", "run-b", "run-child", "run-free"], force=True)
    assert set(kept) == {"run-a", "run-b", "run-child"}  # the child stays while the run that started it does
    assert "captured from it" in kept["run-a"] and "execution of procedure" in kept["run-b"]
    assert "run-parent started it" in kept["run-child"]
    assert must_stay(runs.conn, ["run-parent", "run-child"], force=True) == {}  # going together
    from sherpa_skills.ui.views import Stores, parent_run

    assert parent_run(Stores(engine.home(), runs, store, None, engine.home(), engine.home()), "run-child") == (
        "run-parent",
        1,
    )  # the run page's link


def test_a_store_migrated_by_a_newer_version_is_refused(engine: Engine, store: ProcedureDatabase) -> None:
    store.conn.execute("INSERT INTO _migrations (component, name) VALUES ('skills', 'm999_from_the_future')")
    with pytest.raises(StoreFileError, match=r"'skills' tables were migrated by a newer sherpa-skills \(m999"):
        engine.procedures()
    env = {k: v for k, v in os.environ.items() if k != "SHERPA_SKILLS_DATABASE"}
    env.update({"SHERPA_SKILLS_DATABASE": engine.url} if engine.url else {})
    done = subprocess.run(
        [sys.executable, "-m", "sherpa_skills", "learn", "procedures", "--json", "--home", str(engine.home())],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 2 and "upgrade sherpa-skills" in done.stderr and "Traceback" not in done.stderr
    assert done.stdout.strip() == "" or json.loads(done.stdout)  # under --json, stdout is JSON or nothing
    if engine.url:  # the database is named, never its password
        assert "on 127.0.0.1" in done.stderr and engine.url.split("@")[0].rsplit(":", 1)[1] not in done.stderr


# ---------------------------------------------------------------- several machines on one PostgreSQL database

_MACHINE = """
import json, sys, time
from pathlib import Path
from typing import Any
from sherpa_skills.skills.store.answers import Answers, Asked
from sherpa_skills.skills.store.database import ProcedureDatabase
from sherpa_skills.skills.store.models import CapturedLearning, CapturedProcedure, Execution, ProcedureStep
barrier, home, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
store = ProcedureDatabase(home=home)  # SHERPA_SKILLS_DATABASE names the shared database
while not barrier.exists():
    time.sleep(0.005)
"""


def _machines(url: str, tmp_path: Path, body: str, count: int) -> list[dict[str, object]]:
    """`count` processes over two home folders, released at once by a barrier file; what each printed (JSON)."""
    barrier = tmp_path / "go"
    env = {**os.environ, "SHERPA_SKILLS_DATABASE": url}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _MACHINE + body, str(barrier), str(tmp_path / f"home{i % 2}"), str(i)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for i in range(count)
    ]
    time.sleep(1.0)  # every process has opened its store (and migrated) and waits on the barrier
    barrier.touch()
    outputs = [p.communicate(timeout=180) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in outputs]
    return [json.loads(out) for out, _ in outputs]


@pytest.mark.postgres
@pytest.mark.slow
def test_machines_capturing_the_same_procedure_at_once_make_one_and_lose_no_count(
    postgres_url: str, tmp_path: Path
) -> None:
    """Six processes (two homes) capture the same new procedure at once, then each records 7 successes and 3
    failures, the same lesson and an alias of its own: one procedure, one version, every count."""
    body = """
p, new = store.insert_or_credit(CapturedProcedure(
    id="", task_type="deploy", description="deploy the app", steps=[ProcedureStep(command="make deploy")],
    success_count=1))
for i in range(10):
    now = time.time()
    store.record_execution(Execution(
        procedure_id=p.id, version=1, started=now, ended=now, outcome="success" if i < 7 else "error"))
store.add_learning(CapturedLearning(task_type="deploy", command="make deploy", error="denied", source="run"))
Answers(store).add_alias(p.id, f"deploy it {n}", f"deploy {n}")
print(json.dumps({"id": p.id, "new": new}))
"""
    results = _machines(postgres_url, tmp_path, body, 6)
    assert len({r["id"] for r in results}) == 1 and sum(bool(r["new"]) for r in results) == 1
    store = ProcedureDatabase(home=tmp_path / "home0", database=postgres_url)
    try:
        (p,) = store.procedures(status=None)
        assert (p.success_count, p.failure_count) == (6 + 6 * 7, 6 * 3)
        assert store.versions(p.id) == [
            {"version": 1, "source": "run", "success_count": 48, "failure_count": 18, "created": ANY_FLOAT}
        ]
        assert len(store.executions(p.id)) == 60
        (lesson,) = store.learnings("deploy")
        assert lesson.seen == 6
        assert len(Answers(store).alias_rows(None)) == 6 and Answers(store).version() == 6
        assert store.generation() == 1  # one capture; credits and outcomes change nothing matching reads
    finally:
        store.close()


@pytest.mark.postgres
@pytest.mark.slow
def test_machines_relearning_and_promoting_one_procedure_at_once_queue_up(postgres_url: str, tmp_path: Path) -> None:
    """Four processes each add five versions of one procedure and promote each, at once: each reads the version the
    one before it wrote (the row lock), so versions 2..21 all exist and twenty promotions are kept."""
    seed = ProcedureDatabase(home=tmp_path / "home0", database=postgres_url)
    try:
        p = seed.add_procedure(procedure("deploy", "make deploy"))
        body = f"""
made = []
for round in range(5):
    made.append(store.add_version({p.id!r}, [ProcedureStep(command=f"make deploy-{{n}}-{{round}}")]).version)
    store.promote({p.id!r}, by=f"machine-{{n}}")
print(json.dumps({{"versions": made}}))
"""
        results = _machines(postgres_url, tmp_path, body, 4)
        made = sorted(v for r in results for v in r["versions"])  # type: ignore[attr-defined]
        assert made == list(range(2, 22))
        assert [v["version"] for v in seed.versions(p.id)] == list(range(1, 22))
        assert seed.get(p.id).version == 21 and len(seed.promotions(p.id)) == 20
    finally:
        seed.close()


class _AnyFloat:
    def __eq__(self, other: object) -> bool:
        return isinstance(other, float)


ANY_FLOAT = _AnyFloat()


@pytest.mark.postgres
@pytest.mark.slow
def test_a_procedure_captured_in_one_home_is_matched_from_another(
    postgres_cluster: object, postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Home A captures and promotes; home B (its own matching index) matches it through the Python API and through
    `learn replay --database`; A's next capture reaches B's index, which keeps the vectors it had."""
    from sherpa_skills.skills.api import SkillStore
    from sherpa_skills.skills.match.procedure_index import ProcedureIndex
    from sherpa_skills.skills.match.texts import procedure_words

    monkeypatch.setenv("SHERPA_SKILLS_DATABASE", postgres_url)
    home_a, home_b = tmp_path / "a", tmp_path / "b"
    a, b = SkillStore(home_a), SkillStore(home_b)
    try:
        rotate = a.capture("rotate-logs", ["mv app.log archive/app.log"], description="rotate the app logs").procedure
        assert rotate is not None
        a.promote(rotate.id)
        found = b.match("rotate the app logs")
        assert found.decision == "match" and found.procedure_id == rotate.id
        assert (home_b / "index").is_dir() and not (home_b / "store.db").exists()

        clean = a.capture("clean-cache", ["rm -rf .cache"], description="clear the build cache").procedure
        assert clean is not None
        index = ProcedureIndex(b.store, b.matcher.index_path, lambda: b.matcher.embedder, procedure_words)
        snap = index.snapshot(embed=0)  # B's saved index, re-read at the new generation, nothing embedded
        assert snap.has_vector[snap.row_of[rotate.id]] and not snap.has_vector[snap.row_of[clean.id]]
    finally:
        a.close()
        b.close()

    cluster = postgres_cluster
    bare = cluster.url(postgres_url.rsplit("/", 1)[1], password=False)  # type: ignore[attr-defined]
    env = {k: v for k, v in os.environ.items() if k != "SHERPA_SKILLS_DATABASE"}
    env["PGPASSWORD"] = cluster.password  # type: ignore[attr-defined]
    done = subprocess.run(
        [sys.executable, "-m", "sherpa_skills", "learn", "replay", "rotate the app logs", "--json"]
        + ["--home", str(home_b), "--database", bare],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    payload = json.loads(done.stdout)
    assert payload["status"] == "dry-run" and payload["procedure_id"] == rotate.id


# ---------------------------------------------------------------- evidence has a source


def test_a_candidates_claims_are_kept_and_never_counted(store: ProcedureDatabase) -> None:
    """What an agent, a log or an import says arrives as a candidate: its numbers are claims, confidence stays 0, and
    the same steps claimed again add a claim, never a success — to a candidate or to an active procedure."""
    forged = procedure("deploy", "make deploy").model_copy(update={"success_count": 50, "status": "active"})
    cand, inserted = store.add_candidate(forged, "import", "import:skills", successes=50, note="from a file")
    assert inserted and cand.status == "candidate" and not cand.proven
    assert (cand.success_count, cand.failure_count, cand.confidence) == (0, 0, 0.0)
    assert (cand.claimed_successes, cand.claimed_failures) == (50, 0)
    again, inserted_again = store.add_candidate(procedure("deploy", "make deploy"), "agent", "agent:bot", successes=1)
    assert not inserted_again and again.id == cand.id and again.success_count == 0 and again.claimed_successes == 51
    claims = store.claims(cand.id)
    assert [(c.source, c.claimed_by, c.successes) for c in claims] == [
        ("agent", "agent:bot", 1),
        ("import", "import:skills", 50),
    ]
    active, _ = store.insert_or_credit(procedure("build", "make"))
    after = store.add_claim(active.id, "agent", "agent:bot", successes=3, note="it worked for me")
    assert (after.success_count, after.claimed_successes, after.confidence) == (1, 3, active.confidence)


def test_a_promotion_marks_the_version_and_a_new_version_is_not_promoted(store: ProcedureDatabase) -> None:
    p, _ = store.insert_or_credit(procedure("build", "make"))
    promoted = store.promote(p.id, by="alice")
    assert promoted.proven and promoted.success_count == 2
    relearned = store.add_version(p.id, [ProcedureStep(command="make all")])
    assert not relearned.proven and relearned.version == 2 and relearned.claimed_successes == 0
    assert store.get(p.id, 1).proven is False  # an older version reads as history


def test_an_upgraded_home_keeps_replaying_what_it_replayed_as_legacy_evidence(engine: Engine) -> None:
    """A store made before counts kept their source: its active procedures keep their counts, marked legacy, and
    replay as before; a candidate's counts become claims; a promoted version stays promoted."""
    from sherpa_skills.skills.store.scoring import replay_refusal

    conn = _store_before(engine, "m010_evidence_sources")
    now = time.time()
    rows = [("old-active", "active", 6, 1), ("old-mined", "candidate", 4, 0), ("old-promoted", "active", 2, 0)]
    for pid, status, s, f in rows:
        steps = json.dumps([{"command": f"echo {pid}"}])
        conn.execute(
            "INSERT INTO procedures (id, task_type, description, source, tags, version, status, needs_relearning,"
            " success_count, failure_count, signature, steps, preconditions, postconditions, context, planned_tokens,"
            " planned_llm_calls, created, updated, kind, decisions) VALUES (?, ?, '', 'manual', '[]', 1, ?, 0, ?, ?,"
            " ?, ?, '[]', '[]', '{}', 0, 0, ?, ?, 'shell', '[]')",
            (pid, pid, status, s, f, pid, steps, now, now),
        )
        conn.execute(
            "INSERT INTO procedure_versions (procedure_id, version, signature, steps, preconditions, postconditions,"
            " context, source, planned_tokens, planned_llm_calls, success_count, failure_count, created, decisions)"
            " VALUES (?, 1, ?, ?, '[]', '[]', '{}', 'manual', 0, 0, ?, ?, ?, '[]')",
            (pid, pid, steps, s, f, now),
        )
    conn.execute(
        "INSERT INTO promotions (procedure_id, version, promoted_at, promoted_by, after_execution, status_before,"
        " health_before, success_before, failure_before, executions_before) VALUES"
        " ('old-promoted', 1, ?, 'alice', 0, 'active', 'new', 1, 0, 0)",
        (now,),
    )
    if not engine.url:
        conn.commit()
    conn.close()

    store = engine.procedures()
    active, mined, promoted = (store.get(pid) for pid, *_ in rows)
    assert (active.success_count, active.failure_count, active.legacy_successes, active.legacy_failures) == (6, 1, 6, 1)
    assert replay_refusal(active, store.health(active.id)) is None  # replayed before (6 / 7.4 = 0.81), replays now
    assert (mined.status, mined.success_count, mined.claimed_successes, mined.confidence) == ("candidate", 0, 4, 0.0)
    assert store.versions(mined.id)[0]["success_count"] == 0
    assert "candidate" in (replay_refusal(mined, store.health(mined.id)) or "")
    assert promoted.proven and active.proven and replay_refusal(promoted, store.health(promoted.id)) is None
    fresh, _ = store.insert_or_credit(procedure("build", "make"))
    assert fresh.legacy_successes == 0  # what this store counts from now on is its own


# ---------------------------------------------------------------- one procedure per path (issue 40)


def trajectory(description: str, *decisions: RecordedDecision) -> CapturedProcedure:
    return CapturedProcedure(
        id="",
        task_type="tickets",
        description=description,
        steps=[],
        kind="trajectory",
        decisions=list(decisions),
        success_count=1,
    )


REFUND = RecordedDecision(state="assess", trigger="refund", args={"order": "{{ order }}", "reason": "damaged"})
CLOSE = RecordedDecision(state="checked", trigger="close")


def test_a_path_is_one_trajectory_procedure_whatever_its_wording(store: ProcedureDatabase) -> None:
    """The path is the decisions' states, triggers and argument templates: another wording, another decider, checks
    observed, or arguments named in another order are the same path, credited; a literal argument that differs is
    another decision, so another procedure."""
    first, new = store.insert_or_credit(trajectory("refund my order {{ order }}", REFUND, CLOSE))
    reworded = [
        REFUND.model_copy(update={"args": {"reason": "damaged", "order": "{{ order }}"}, "decided_by": "rule"}),
        CLOSE.model_copy(update={"checks": [RecordedCheck(action="price", features={"paid": True})]}),
    ]
    again, new_again = store.insert_or_credit(trajectory("I want my money back {{ order }}", *reworded))
    assert new and not new_again and again.id == first.id
    assert (again.description, again.success_count, again.proven) == ("refund my order {{ order }}", 2, True)
    literal = REFUND.model_copy(update={"args": {"order": "4417", "reason": "damaged"}})
    other, new_other = store.insert_or_credit(trajectory("refund order 4417", literal, CLOSE))
    assert new_other and other.id != first.id
    assert store.add_version(first.id, [], decisions=reworded).version == 2  # its own path, in a changed world
    with pytest.raises(StoreError, match=f"repeat the path of procedure '{first.id}'"):
        store.add_version(other.id, [], decisions=[REFUND, CLOSE])
    shell, _ = store.insert_or_credit(procedure("tickets", "make"))
    assert len(store.procedures("tickets")) == 3 and shell.kind == "shell"


def test_an_upgraded_home_keeps_its_twin_trajectories_and_one_of_them_takes_their_path(engine: Engine) -> None:
    """Twins made before paths were kept (one path, two wordings) stay as they were, counts and all; a new run of
    their path credits the proven one, and the other still takes a new version of itself."""
    conn = _store_before(engine, "m013_trajectory_paths")
    now = time.time()
    path = json.dumps([d.model_dump() for d in (REFUND, CLOSE)])
    other = json.dumps([REFUND.model_dump(), {"state": "checked", "trigger": "hand_to_disputes", "args": {}}])
    rows = [
        ("twin-first", "refund my order {{ order }}", path, 1, 0),
        ("twin-proven", "money back please {{ order }}", path, 2, 1),
        ("disputes", "my bank disputes it {{ order }}", other, 1, 0),
    ]
    for n, (pid, description, decisions, successes, proven) in enumerate(rows):
        conn.execute(
            "INSERT INTO procedures (id, task_type, description, source, tags, version, status, needs_relearning,"
            " success_count, failure_count, signature, steps, preconditions, postconditions, context, planned_tokens,"
            " planned_llm_calls, created, updated, kind, decisions, proven) VALUES (?, 'tickets', ?, 'run', '[]', 1,"
            " 'active', 0, ?, 0, ?, '[]', '[]', '[]', '{}', 0, 0, ?, ?, 'trajectory', ?, ?)",
            (pid, description, successes, f"t:{pid}", now + n, now + n, decisions, proven),
        )
    conn.execute(
        "INSERT INTO aliases (procedure_id, task_type, scope, text, key, confirmed_by, created) VALUES"
        " ('twin-first', 'tickets', 'tickets', 'give my money back', 'back give money', 'alice', ?)",
        (now,),
    )
    if not engine.url:
        conn.commit()
    conn.close()

    store = engine.procedures()
    kept = {p.id: (p.description, p.success_count) for p in store.procedures("tickets")}
    assert kept == {pid: (description, successes) for pid, description, _, successes, _ in rows}
    [alias] = Answers(store).entries("twin-first")
    assert (alias.by, alias.source) == ("alice", None)  # answered before aliases named their run
    credited, new = store.insert_or_credit(trajectory("I'd like a refund {{ order }}", REFUND, CLOSE))
    assert (credited.id, credited.success_count, new) == ("twin-proven", 3, False)
    assert store.add_version("twin-first", [], decisions=[REFUND, CLOSE]).version == 2
    assert len(store.procedures("tickets")) == 3


def test_an_upgraded_home_keeps_agents_answers_as_their_own(engine: Engine) -> None:
    """m016: answers written before they had an owner keep their word; an agent's becomes its own (it shaped every
    match before), a person's stays everyone's, and a second agent may then answer the same pair."""
    conn = _store_before(engine, "m016_answer_owners")
    now = time.time()
    conn.execute(
        "INSERT INTO procedures (id, task_type, description, source, tags, version, status, needs_relearning,"
        " success_count, failure_count, signature, steps, preconditions, postconditions, context, planned_tokens,"
        " planned_llm_calls, created, updated) VALUES ('p1', 'build-lib', 'build the library', 'manual', '[]', 1,"
        " 'active', 0, 2, 0, 'sig-p1', '[]', '[]', '[]', '{}', 0, 0, ?, ?)",
        (now, now),
    )
    for text, key, by in [("build it", "build", "agent:ops"), ("make it", "make", "alice")]:
        conn.execute(
            "INSERT INTO aliases (procedure_id, task_type, scope, text, key, confirmed_by, created) VALUES"
            " ('p1', 'build-lib', '', ?, ?, ?, ?)",
            (text, key, by, now),
        )
    conn.execute(
        "INSERT INTO rejections (procedure_id, scope, text, key, rejected_by, created) VALUES"
        " ('p1', '', 'lint it', 'lint', 'agent:ops', ?)",
        (now,),
    )
    if not engine.url:
        conn.commit()
    conn.close()

    answers = Answers(engine.procedures())
    assert {(a.key, a.owner) for a in answers.alias_rows(None)} == {("build", "agent:ops"), ("make", "")}
    assert (answers.rejected("lint", None), answers.rejected("lint", None, "agent:ops")) == (set(), {"p1"})
    assert answers.add_alias("p1", "build it", "build", by="agent:eve").by == "agent:eve"
    assert len(answers.alias_rows(None)) == 3


def test_a_run_an_alias_came_from_stays(engine: Engine, store: ProcedureDatabase) -> None:
    runs = engine.runs()
    p = store.add_procedure(procedure())
    answers = Answers(store)
    alias = answers.add_alias(p.id, "build it", "build", by="run:run-c")
    assert answers.set_source(alias.id, "run:run-c").source == "run:run-c"
    assert answers.set_source(alias.id, "run:run-d").source == "run:run-c"  # its first run stays its source
    kept = must_stay(runs.conn, ["run-c", "run-d", "run-free"], force=True)
    assert kept == {"run-c": f"alias {alias.id} of procedure {p.id} came from it"}


def test_only_the_aliases_written_since_are_read_again(engine: Engine, store: ProcedureDatabase) -> None:
    """m017: a matcher reads the aliases written at or after the version it last read, while none was removed; an
    update a match reads (a person confirming a run's wording, a vector) is a write too."""
    p = store.add_procedure(procedure("t"))
    answers = Answers(store)
    old = answers.add_alias(p.id, "do the thing", "do thing", scope="t", by="run:r1")
    version, removals = answers.alias_changes()
    assert answers.alias_rows("t", since=version) == []
    new = answers.add_alias(p.id, "do the other thing", "do other thing", scope="t")
    assert [r.id for r in answers.alias_rows("t", since=version)] == [new.id]
    assert answers.alias_rows("elsewhere", since=version) == []  # another scope's reader reads nothing
    # An update is a change too: a person confirming the run's wording makes it a full alias.
    version, _ = answers.alias_changes()
    answers.add_alias(p.id, "do the thing", "do thing", scope="t", by="alice")
    [changed] = answers.alias_rows("t", since=version)
    assert (changed.id, changed.exact_only) == (old.id, False)
    version, _ = answers.alias_changes()
    answers.set_vector(new.id, b"\0" * 8, "other-embedder")  # written without a new version: read again still
    assert [r.id for r in answers.alias_rows("t", since=version)] == [new.id]
    answers.forget(old.id)
    assert answers.alias_changes()[1] == removals + 1
    assert [r.id for r in answers.alias_rows("t")] == [new.id]


def _store_before(engine: Engine, migration: str) -> Any:
    """A connection to a store at the level before `migration`, for rows written as the code before it wrote them."""
    from sherpa_skills.skills.store.migrations import MIGRATIONS

    older = MIGRATIONS[: [m.__name__ for m in MIGRATIONS].index(migration)]
    if engine.url:
        from sherpa_skills.db.migrations import connect_migrated

        return connect_migrated(engine.url, "skills", older)
    from sherpa_skills.db.sqlite import connect, migrate

    engine.home().mkdir(parents=True, exist_ok=True)
    conn = connect(engine.home() / "store.db")
    migrate(conn, "skills", older)
    return conn


def _old_signature(description: str, decisions: list[dict[str, Any]]) -> str:
    """A trajectory's signature as the code before paths computed it: arguments compact, in the order given."""
    import hashlib

    said = [
        f"{d['state']} {d['trigger']} {json.dumps(d['args'], separators=(',', ':'), default=str)}" for d in decisions
    ]
    normal = "\n".join([" ".join(description.strip().lower().split()), *said])
    return "t:" + hashlib.sha256(normal.encode()).hexdigest()[:22]


def _insert_trajectory(conn: Any, pid: str, description: str, decisions: Any, signature: str, at: float) -> None:
    conn.execute(
        "INSERT INTO procedures (id, task_type, description, source, tags, version, status, needs_relearning,"
        " success_count, failure_count, signature, steps, preconditions, postconditions, context, planned_tokens,"
        " planned_llm_calls, created, updated, kind, decisions, proven) VALUES (?, 'tickets', ?, 'run', '[]', 1,"
        " 'active', 0, 1, 0, ?, '[]', '[]', '[]', '{}', 0, 0, ?, ?, 'trajectory', ?, 0)",
        (pid, description, signature, at, at, decisions if isinstance(decisions, str) else json.dumps(decisions)),
    )


def test_an_upgraded_home_matches_its_trajectories_and_branches_stored_before(engine: Engine) -> None:
    """Signatures stored before paths still match the same decisions after the upgrade: a run of a known branch adds
    to its row (no second one) and a described task's run credits its procedure, whether its arguments were stored in
    sorted order (the same text as before) or not (recomputed by m013, a `~` mark kept)."""
    from sherpa_skills.skills.store.recording import credit_described
    from sherpa_skills.skills.store.signatures import decision_signature

    now = time.time()
    refund, close = REFUND.model_dump(), CLOSE.model_dump()
    unsorted = {**refund, "args": {"reason": "damaged", "order": "{{ order }}"}}
    late = {**refund, "args": {"reason": "late", "order": "{{ order }}"}}
    disputes = {"state": "checked", "trigger": "hand_to_disputes", "args": {"team": "b", "priority": 2}}
    conn = _store_before(engine, "m013_trajectory_paths")
    procs = [
        ("sorted", "refund my order {{ order }}", [refund, close], ""),
        ("unsorted", "money back please {{ order }}", [unsorted, close], ""),
        ("marked", "it came late {{ order }}", [late, close], "~7"),
    ]
    for n, (pid, description, decisions, mark) in enumerate(procs):
        _insert_trajectory(conn, pid, description, decisions, _old_signature(description, decisions) + mark, now + n)
    # The third is the second in sorted order (a twin row the old signatures told apart): merged into it.
    sorted_disputes = {**disputes, "args": {"priority": 2, "team": "b"}}
    for decisions in ([refund, disputes], [unsorted, close, disputes], [refund, close, sorted_disputes]):
        conn.execute(
            "INSERT INTO procedure_branches (procedure_id, signature, step, state, reason, decisions, runs, first_run,"
            " last_run, first_seen, last_seen) VALUES ('sorted', ?, 1, 'checked', 'another path', ?, 1, 'r0', 'r0',"
            " ?, ?)",
            (_old_signature("", decisions), json.dumps(decisions), now, now),
        )
    if not engine.url:
        conn.commit()
    conn.close()

    store = engine.procedures()
    for pid, description, decisions, mark in procs:
        taken = [RecordedDecision(**d) for d in decisions]
        if mark:
            assert store.get(pid).id == pid
            row = store.conn.execute("SELECT signature FROM procedures WHERE id = ?", (pid,)).fetchone()
            assert row[0] == decision_signature(taken, description) + mark
        else:
            assert credit_described(store, "tickets", description, decision_signature(taken, description)) == pid
    for decisions in ([refund, disputes], [unsorted, close, disputes]):
        taken = [RecordedDecision(**d) for d in decisions]
        runs = add_branch(
            store,
            "sorted",
            decision_signature(taken),
            step=1,
            state="checked",
            reason="again",
            decisions=decisions,
            run_id="r1",
        )
        assert runs == (2 if decisions[-1] is disputes and len(decisions) == 2 else 3)
    assert len(branches(store, "sorted")) == 2


def test_an_upgraded_home_opens_whatever_a_trajectory_row_holds_as_decisions(engine: Engine) -> None:
    """Decisions that are not a list (null, an object, not JSON) are no path: the upgrade reads them as none."""
    conn = _store_before(engine, "m013_trajectory_paths")
    for n, odd in enumerate(["null", '{"state": "x"}', "not json", "[1, null]"]):
        _insert_trajectory(conn, f"odd-{n}", f"odd {n}", odd, f"t:odd{n}", time.time() + n)
    if not engine.url:
        conn.commit()
    conn.close()

    store = engine.procedures()
    rows = store.conn.execute("SELECT id, path FROM procedures WHERE id LIKE 'odd-%' ORDER BY id").fetchall()
    assert [r[0] for r in rows] == ["odd-0", "odd-1", "odd-2", "odd-3"] and all(r[1] for r in rows)


def test_a_judge_confirming_a_runs_alias_makes_it_theirs(store: ProcedureDatabase) -> None:
    p = store.add_procedure(procedure())
    answers = Answers(store)
    ran = answers.add_alias(p.id, "build it", "build", by="run:run-c")
    assert answers.add_alias(p.id, "build it", "build", by="alice").by == "alice"
    assert answers.add_alias(p.id, "build it", "build", by="run:run-d").by == "alice"
    assert [(a.id, a.by) for a in answers.entries(p.id)] == [(ran.id, "alice")]
