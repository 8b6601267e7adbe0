"""The decision memory's calibrated head on a real store, and its refusals: it abstains below the bound (too few
calibration points, or a score under the threshold), never answers from another workflow's or state's examples,
never places a task far from every learned decision, and forgets what taught an answer that was contradicted. The
end-to-end test runs the BANKING77 router through the bench's local OpenAI-API server (real HTTP, through litellm)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sherpa_skills.cli import main
from sherpa_skills.errors import SherpaError
from sherpa_skills.runtime import load_workflow_text
from sherpa_skills.skills.decide.examples import Example, add_examples, calibration_after
from sherpa_skills.skills.decide.head import Calibration
from sherpa_skills.skills.decide.memory import DecisionMemory, scorer
from sherpa_skills.skills.decide.recall import Recall
from sherpa_skills.skills.store.database import ProcedureDatabase

ROOT = Path(__file__).resolve().parents[3]
FEATURES = {"options": "a,b"}
RNG = np.random.default_rng(36)
CENTRES = {"a": RNG.normal(size=384).astype(np.float32), "b": RNG.normal(size=384).astype(np.float32)}


def near(label: str, scale: float = 0.3) -> np.ndarray:
    return CENTRES[label] + RNG.normal(scale=scale, size=384).astype(np.float32) * 0.05


def example(workflow: str, state: str, label: str, score: float | None = None, hit: bool | None = None) -> Example:
    return Example(
        workflow=workflow,
        state=state,
        trigger=label,
        args={},
        features=FEATURES,
        path="",
        task=f"a task for {label}",
        vector=near(label).tobytes(),
        score=score,
        hit=hit,
        tokens=100,
        scorer=scorer() if score is not None else None,
    )


@pytest.fixture
def store(tmp_path: Path) -> Any:
    db = ProcedureDatabase(home=tmp_path)
    yield db
    db.close()


def teach(store: ProcedureDatabase, workflow: str = "w", state: str = "s", points: int = 500, wrong: int = 0) -> None:
    """Examples of two well-separated decisions, each a calibration point the head got right (but `wrong` of them)."""
    add_examples(
        store,
        [example(workflow, state, "ab"[i % 2], score=0.5 + (i % 7) / 100, hit=i >= wrong) for i in range(points)],
    )


def ask(memory: DecisionMemory, state: str = "s", vector: Any = None, workflow: str = "w", bound: Any = None) -> Any:
    memory.refresh(workflow)
    q = near("a") if vector is None else vector
    return memory.answer(workflow, state, lambda: q, FEATURES, "", bound)


# ---------------------------------------------------------------- the bound's arithmetic


def test_the_threshold_holds_the_bound_and_needs_enough_points():
    calibration = Calibration()
    for i in range(398):
        calibration.add("s", i / 398, False)
    # 398 right points: (0 + 1) / 399 > 0.0025, so no threshold can hold δ = 0.25 %.
    threshold, why = calibration.threshold("s", 0.0025, 10_000)
    assert threshold is None and why.startswith("uncalibrated: 398 calibration points")
    calibration.add("s", 0.0, False)
    assert calibration.threshold("s", 0.0025, 10_000)[0] == 0.0  # 399: every score holds it
    # One wrong point at a high score: only scores above it are answered from, and the estimate holds δ there.
    calibration.add("s", 0.9, True)
    threshold, whose = calibration.threshold("s", 0.0025, 10_000)
    assert threshold is None or threshold > 0.9
    calibration_loose = Calibration()
    for i in range(100):
        calibration_loose.add("s", i / 100, i < 10)  # the lowest scores are the wrong ones
    threshold, whose = calibration_loose.threshold("s", 0.05, 10_000)
    # (4 wrong above it + 1) / 101 ≤ 5 %; a fifth would not be.
    assert whose == "pooled" and threshold == 0.06
    assert calibration_loose.risk(threshold, 0.05) <= 0.05


def test_calibration_points_are_what_the_model_said_where_the_head_guessed(store):
    teach(store, points=10, wrong=3)
    add_examples(store, [example("w", "s", "a")])  # no guess: not a point
    points, errors, cost = calibration_after(store, "w")
    assert len(points) == 10 and sum(w for _, _, w in points) == 3 and not errors
    assert cost["tokens"] == 1100 and cost["decisions"] == 11


# ---------------------------------------------------------------- the refusals


def test_it_abstains_below_the_bound(store):
    teach(store, points=50)
    answer = ask(DecisionMemory(store))
    assert answer.example is None and "uncalibrated: 50 calibration points" in answer.why
    assert answer.guess is not None and answer.guess.startswith("a ")  # the guess is kept: a calibration point
    # The same examples under a loose bound a workflow states for itself: answered.
    loose = ask(DecisionMemory(store), bound=0.05)
    assert loose.example is not None and loose.example.trigger == "a" and loose.rule == "calibrated head"


def test_points_of_another_scorer_never_set_a_threshold(store):
    # A home's points scored before the scorer changed (no scorer named: the margin alone) are on another scale.
    add_examples(store, [replace(example("w", "s", "ab"[i % 2], score=0.5, hit=True), scorer=None) for i in range(500)])
    answer = ask(DecisionMemory(store))
    assert answer.example is None and "uncalibrated: 0 calibration points" in answer.why


def test_a_score_under_the_threshold_abstains(store):
    teach(store, points=500)
    # Wrong points at every high score: no threshold the head's margins reach holds the bound.
    add_examples(store, [example("w", "s", "a", score=2.0 - i / 100, hit=False) for i in range(5)])
    answer = ask(DecisionMemory(store))
    assert answer.example is None and ("below the" in answer.why or "no score holds" in answer.why)


def test_calibrated_it_answers_and_says_why(store):
    teach(store, points=500)
    answer = ask(DecisionMemory(store))
    assert answer.example is not None and answer.example.trigger == "a"
    # 500 points of its own: the state's threshold (a state with fewer goes by the workflow's pooled one).
    assert "at or above the state threshold" in answer.why and answer.teachers


def test_it_never_answers_across_workflows_or_states(store):
    teach(store, workflow="w", state="s", points=500)
    memory = DecisionMemory(store)
    other_state = ask(memory, state="t")
    assert other_state.example is None and other_state.why == "no decision in 't' seen yet"
    other_workflow = ask(memory, workflow="v")
    assert other_workflow.example is None and other_workflow.why == "no decision in 's' seen yet"
    # Another workflow's calibration never calibrates this one: its state, with few points of its own, abstains.
    add_examples(store, [example("v", "s", "ab"[i % 2]) for i in range(10)])
    assert "uncalibrated: 0 calibration points" in ask(memory, workflow="v").why


def test_a_task_far_from_every_learned_decision_is_never_placed(store):
    teach(store, points=500)
    far = RNG.normal(size=384).astype(np.float32)  # unrelated to both decisions' regions
    answer = ask(DecisionMemory(store), vector=far)
    assert answer.example is None and "far from every decision learned" in answer.why


def test_a_contradicted_answer_evicts_what_taught_it_and_lowers_confidence(store):
    teach(store, points=500)
    memory = DecisionMemory(store)
    answer = ask(memory)
    assert answer.example is not None and answer.score is not None
    before = store.conn.execute("SELECT COUNT(*) FROM decision_examples").fetchone()[0]
    recall = Recall(memory, "w", {}, {}, lambda: (near("a"), "test"))
    recall.contradicted("s", answer.score, answer.teachers, "a person corrected it")
    kept = {r[0] for r in store.conn.execute("SELECT id FROM decision_examples")}
    assert not set(answer.teachers) & kept and len(kept) == before - len(answer.teachers)
    assert all(e.id not in answer.teachers for e in memory._states["w"]["s"].examples)
    # The wrong point is counted: the threshold rises above the contradicted answer's score.
    threshold, _ = memory._calibration["w"].threshold("s", 0.0025, 400)
    assert threshold is None or threshold > answer.score


def test_forgetting_a_state(store, tmp_path):
    teach(store, points=20)
    teach(store, state="t", points=4)
    assert main(["learn", "decisions", "w", "--forget", "s", "--home", str(tmp_path), "--json"]) == 0
    left = store.conn.execute("SELECT state, COUNT(*) FROM decision_examples GROUP BY state").fetchall()
    assert left == [("t", 4)]


def test_learn_decisions_states_reports_coverage_and_why(store, tmp_path, capsys):
    teach(store, points=500)
    teach(store, state="t", points=3)
    assert main(["learn", "decisions", "--states", "--home", str(tmp_path), "--json"]) == 0
    rows = {r["state"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["s"]["bound_held"] and rows["s"]["coverage"] > 0.5 and rows["s"]["examples"] == 500
    assert rows["t"]["examples"] == 3 and rows["t"]["calibration_points"] == 3
    with pytest.raises(SystemExit) as refused:
        main(["learn", "decisions", "--states", "--error-bound", "0.7", "--home", str(tmp_path)])
    assert refused.value.code == 2 and "--error-bound must be in (0, 0.2], not 0.7" in capsys.readouterr().err


# ---------------------------------------------------------------- the workflow's setting


@pytest.mark.parametrize("bound", ["0", "-0.1", "0.5", "'a lot'"])
def test_an_out_of_range_error_bound_is_refused_naming_the_field(bound):
    text = (ROOT / "examples" / "ticket_learning" / "workflow.yaml").read_text()
    text = re.sub(r"learn: \{error_bound: [0-9.]+\}", f"learn: {{error_bound: {bound}}}", text)
    assert f"error_bound: {bound}" in text
    with pytest.raises(SherpaError) as caught:
        load_workflow_text(text, base_dir=ROOT / "examples" / "ticket_learning")
    assert "error_bound" in str(caught.value)


# ---------------------------------------------------------------- end to end, over HTTP


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("decision_stream_bench", ROOT / "bench" / "decision_stream_bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["decision_stream_bench"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not os.environ.get("SHERPA_SKILLS_LEARNING_DATA"), reason="needs SHERPA_SKILLS_LEARNING_DATA")
def test_the_router_learns_over_http_and_counts_what_the_memory_saved(tmp_path, monkeypatch):
    bench = _bench()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-oracle")
    # Two domains' requests, repeated wording kinds: a loose bound (20 %) lets the memory answer within a short stream.
    items = [it for it in bench.load_stream(12, 7) if it["domain"] in ("cash", "exchange")][:60]
    rows, oracle = bench.run_stream(tmp_path, items, 0.0, 7, error_bound=0.2)
    assert all(r["status"] == "final" for r in rows)
    assert {r["state"] for r in rows} <= {it["expected"] for it in items}  # `domain/intent` paths
    answered = [r for r in rows if r["memory"]]
    assert answered, "the memory never answered"
    assert all(r["calls_saved"] >= r["memory"] and r["tokens_saved"] > 0 for r in answered)
    # One model call per decision the model took; a judge's question (one path is one procedure, proven by a second
    # wording) is a call the oracle does not answer.
    assert oracle.calls == sum(r["llm_calls"] - r["judge_calls"] for r in rows)
    assert main(["learn", "stats", "--home", str(tmp_path), "--json"]) == 0
