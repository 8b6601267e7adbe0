"""The decision memory persisted in the skill store, on both engines: a fresh process loads it and answers exactly as
the process that built it; a snapshot older than the examples is brought up to date (never answered from as it was);
forgetting a state or evicting a contradicted answer's teachers drops it; a corrupt or foreign snapshot is ignored
and rebuilt, never a crash."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import structlog.testing
from _engines import Engine

from sherpa_skills.skills.decide import snapshot
from sherpa_skills.skills.decide.examples import Example, add_examples
from sherpa_skills.skills.decide.memory import DecisionMemory, scorer, settings
from sherpa_skills.skills.decide.recall import Recall
from sherpa_skills.skills.store.database import ProcedureDatabase

ROOT = Path(__file__).resolve().parents[3]
FEATURES = {"options": "a,b"}
RNG = np.random.default_rng(7)
CENTRES = {k: RNG.normal(size=384).astype(np.float32) for k in "abc"}
QUERY = CENTRES["a"] + RNG.normal(size=384).astype(np.float32) * 0.02

CHILD = """
import json, sys
import numpy as np
from sherpa_skills.skills.decide.memory import DecisionMemory
from sherpa_skills.skills.store.database import ProcedureDatabase
home, query = sys.argv[1], np.asarray(json.loads(sys.argv[2]), dtype=np.float32)
store = ProcedureDatabase(home=home)
memory = DecisionMemory(store)
memory.refresh("w")
a = memory.answer("w", "s", lambda: query, {"options": "a,b"}, "")
state = memory._states["w"]["s"]
print(json.dumps({"trigger": a.example.trigger if a.example else None, "why": a.why, "score": a.score,
                  "teachers": a.teachers, "restored": state.restored is not None}))
store.close()
"""


def vector(label: str) -> bytes:
    return (CENTRES[label] + RNG.normal(size=384).astype(np.float32) * 0.05).tobytes()


def teach(store: ProcedureDatabase, n: int = 500, labels: str = "ab", state: str = "s") -> None:
    add_examples(
        store,
        [
            Example(
                workflow="w",
                state=state,
                trigger=labels[i % len(labels)],
                args={},
                features=FEATURES,
                path="",
                task="t",
                vector=vector(labels[i % len(labels)]),
                score=0.5 + (i % 7) / 100,
                hit=True,
                tokens=100,
                scorer=scorer(),
            )
            for i in range(n)
        ],
    )


@pytest.fixture
def engine(engine_url: str | None, tmp_path: Path) -> Iterator[Engine]:
    found = Engine("postgresql" if engine_url else "sqlite", tmp_path, engine_url)
    yield found
    found.close()


def ask(memory: DecisionMemory, query: Any = QUERY) -> Any:
    memory.refresh("w")
    return memory.answer("w", "s", lambda: query, FEATURES, "")


def fields(answer: Any) -> dict[str, Any]:
    return {
        "trigger": answer.example.trigger if answer.example else None,
        "why": answer.why,
        "score": answer.score,
        "teachers": answer.teachers,
    }


def kept(store: ProcedureDatabase) -> int:
    return int(store.conn.execute("SELECT COUNT(*) FROM decision_snapshots").fetchone()[0])


def test_a_fresh_process_loads_it_and_answers_the_same(engine: Engine) -> None:
    store = engine.procedures()
    teach(store)
    built = fields(ask(DecisionMemory(store)))
    assert built["trigger"] == "a" and kept(store) == 1
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(engine.home()), json.dumps(QUERY.tolist())],
        env={**engine.env(), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    loaded = json.loads(out.strip().splitlines()[-1])
    assert loaded.pop("restored") is True
    assert loaded == built


def test_examples_newer_than_the_snapshot_are_read_not_ignored(engine: Engine) -> None:
    store = engine.procedures()
    teach(store)
    ask(DecisionMemory(store))  # persisted
    teach(store, n=300, labels="c")  # a third decision arrives after it
    fresh = DecisionMemory(engine.procedures())
    answer = ask(fresh, CENTRES["c"])
    # The newest 128 of each decision are kept (settings' kept_per_decision), the new one's among them.
    assert fresh._states["w"]["s"].size() == 3 * 128 and answer.guess is not None and answer.guess.startswith("c ")
    assert fields(answer) == scratch_of(engine, CENTRES["c"])


def test_a_few_new_examples_are_read_though_the_snapshot_is_not_rewritten_for_them(engine: Engine) -> None:
    store = engine.procedures()
    teach(store)
    ask(DecisionMemory(store))
    (written,) = store.conn.execute("SELECT upto FROM decision_snapshots").fetchone()
    teach(store, n=4, labels="c")  # fewer than a rewrite waits for
    fresh = DecisionMemory(engine.procedures())
    answer = ask(fresh, CENTRES["c"])
    assert fresh._states["w"]["s"].size() == 2 * 128 + 4 and answer.guess is not None and answer.guess.startswith("c ")
    assert store.conn.execute("SELECT upto FROM decision_snapshots").fetchone()[0] == written
    assert fields(answer) == scratch_of(engine, CENTRES["c"])


def scratch_of(engine: Engine, query: Any) -> Any:
    store = engine.procedures()
    store.db.transaction(lambda conn: snapshot.drop(store, "w"))
    return fields(ask(DecisionMemory(store), query))


def test_forgetting_a_state_drops_it(engine: Engine) -> None:
    store = engine.procedures()
    teach(store)
    ask(DecisionMemory(store))
    assert DecisionMemory(store).forget_state("w", "s") == 500
    assert kept(store) == 0
    answer = ask(DecisionMemory(engine.procedures()))
    assert answer.example is None and answer.why == "no decision in 's' seen yet"


def test_a_contradicted_answer_is_not_answered_again_from_the_snapshot(engine: Engine) -> None:
    store = engine.procedures()
    teach(store)
    memory = DecisionMemory(store)
    answer = ask(memory)
    assert answer.example is not None
    Recall(memory, "w", {}, {}, lambda: (QUERY, "test")).contradicted("s", answer.score, answer.teachers, "corrected")
    fresh = DecisionMemory(engine.procedures())
    again = ask(fresh)
    assert not {e.id for e in fresh._states["w"]["s"].examples} & set(answer.teachers)
    assert not set(again.teachers) & set(answer.teachers)


def test_examples_deleted_behind_its_back_make_it_stale(engine: Engine) -> None:
    store = engine.procedures()
    teach(store)
    ask(DecisionMemory(store))
    # another version of the library deleting rows, without dropping the snapshot
    store.db.transaction(lambda conn: conn.execute("DELETE FROM decision_examples WHERE trigger = 'a'"))
    fresh = DecisionMemory(engine.procedures())
    answer = ask(fresh)
    assert fresh._states["w"]["s"].restored is None and {e.trigger for e in fresh._states["w"]["s"].examples} == {"b"}
    assert answer.example is None or answer.example.trigger != "a"


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not a snapshot at all",
        b"SKDM" + (10**9).to_bytes(8, "little") + b"{",
        b"SKDM" + (2).to_bytes(8, "little") + b"{}",
        b"SKDM" + (21).to_bytes(8, "little") + b'{"format":1,"states":' + b"7}",
        "header",  # a well-formed header whose columns disagree with its vectors
        "truncated",  # the vectors cut short
        "rows",  # the head names one example twice
        "decisions",  # the head's codes put an example of one decision among another's
    ],
)
def test_a_corrupt_snapshot_is_ignored_and_rebuilt(engine: Engine, body: Any) -> None:
    store = engine.procedures()
    teach(store)
    built = fields(ask(DecisionMemory(store)))
    (good,) = store.conn.execute("SELECT body FROM decision_snapshots").fetchone()
    good = bytes(good)
    if body == "truncated":
        body = good[:-100]
    elif body == "header":
        size = int.from_bytes(good[4:12], "little")
        header = json.loads(good[12 : 12 + size])
        header["states"]["s"]["ids"] = header["states"]["s"]["ids"][:-1]
        text = json.dumps(header).encode()
        body = b"SKDM" + len(text).to_bytes(8, "little") + text + good[12 + size :]
    elif body in ("rows", "decisions"):
        case, body = body, bytearray(good)
        rows = head_rows(good)
        if case == "rows":
            rows[1] = rows[0]
        else:  # the first row of the first decision and the last row of the last one swap places
            rows[0], rows[-1] = rows[-1], rows[0]
        body[rows.offset : rows.offset + rows.size * 4] = rows.astype("<i4").tobytes()
        body = bytes(body)
    store.db.transaction(lambda conn: conn.execute("UPDATE decision_snapshots SET body = ?", (body,)))
    fresh = DecisionMemory(engine.procedures())
    assert fields(ask(fresh)) == built
    assert fresh._states["w"]["s"].restored is None  # rebuilt from the examples
    (again,) = store.conn.execute("SELECT body FROM decision_snapshots").fetchone()
    assert bytes(again) == good  # and persisted again as it should be


def _header_set(header: dict[str, Any], where: str, value: Any) -> None:
    *path, last = where.split(".")
    for key in path:
        header = header[key]
    header[last] = value


@pytest.mark.parametrize(
    ("where", "value"),
    [
        ("unusable", []),
        ("unusable", "gone"),
        ("unusable", {"gone": "many"}),
        ("states", []),
        ("states.s", []),
        ("states.s.seen", []),
        ("states.s.seen", "options"),
        ("states.s.seen", {"options": 7}),
        ("states.s.ids", "1,2"),
        ("states.s.varied", 3),
        ("kinds", {"a": 1}),
        ("calibration", "none"),
        ("points_read", [1]),
        ("cost", None),
        ("read", []),
    ],
)
def test_a_header_of_the_wrong_shape_is_ignored_and_rebuilt(
    engine: Engine, where: str, value: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A header whose fields are not what the format says (a list where a mapping is, a text where numbers are) is
    ignored, logged once, and the memory rebuilt: never an AttributeError at the first ask."""
    store = engine.procedures()
    teach(store)
    built = fields(ask(DecisionMemory(store)))
    (good,) = store.conn.execute("SELECT body FROM decision_snapshots").fetchone()
    good = bytes(good)
    size = int.from_bytes(good[4:12], "little")
    header = json.loads(good[12 : 12 + size])
    _header_set(header, where, value)
    text = json.dumps(header).encode()
    store.db.transaction(
        lambda conn: conn.execute(
            "UPDATE decision_snapshots SET body = ?",
            (b"SKDM" + len(text).to_bytes(8, "little") + text + good[12 + size :],),
        )
    )
    fresh = DecisionMemory(engine.procedures())
    with structlog.testing.capture_logs() as logs:
        assert fields(ask(fresh)) == built
    assert fresh._states["w"]["s"].restored is None
    assert [e["event"] for e in logs].count("decision_snapshot_ignored") == 1
    (again,) = store.conn.execute("SELECT body FROM decision_snapshots").fetchone()
    assert bytes(again) == good


def test_an_example_committed_below_what_was_read_makes_the_snapshot_stale(engine: Engine) -> None:
    """On PostgreSQL an example's id is taken when it is inserted, so one with a lower id can commit after a reader
    went past it: a snapshot written then must not count it as read, or every later process trusts a snapshot that
    omits it. Simulated: the id below what was read is filled after the memory read past it, then the memory writes
    its snapshot again (after new examples). (It notices the late example itself now, counting at each refresh.)"""
    store = engine.procedures()
    teach(store)
    # the id the late example takes, free while the memory reads past it
    store.db.transaction(lambda conn: conn.execute("DELETE FROM decision_examples WHERE id = 3"))
    memory = DecisionMemory(store)
    ask(memory)
    (first,) = store.conn.execute("SELECT upto FROM decision_snapshots").fetchone()
    teach(store, n=1, labels="c")
    # ... commits now, below what was read
    store.db.transaction(lambda conn: conn.execute("UPDATE decision_examples SET id = 3 WHERE trigger = 'c'"))
    teach(store, n=40)  # enough new examples for the memory to write its snapshot again
    ask(memory)
    (upto,) = store.conn.execute("SELECT upto FROM decision_snapshots").fetchone()
    assert upto > first > 3
    fresh = DecisionMemory(engine.procedures())
    answer = ask(fresh, CENTRES["c"])
    state = fresh._states["w"]["s"]
    # The memory that read past it counts again at each refresh, so it read the late example before writing: the
    # snapshot counts it (else a fresh process finds the snapshot stale and rebuilds; either way it is there).
    assert 3 in {e.id for e in state.examples} and answer.guess is not None and answer.guess.startswith("c ")
    again = DecisionMemory(engine.procedures())
    again.refresh("w")
    assert again._states["w"]["s"].restored is not None and 3 in again._states["w"]["s"].restored.ids


class _Rows(np.ndarray):
    offset: int


def head_rows(body: bytes) -> Any:
    """State 's''s head rows in a snapshot body (a copy), and where they are in it."""
    size = int.from_bytes(body[4:12], "little")
    kept = json.loads(body[12 : 12 + size])["states"]["s"]
    offset = 12 + size + kept["rows"] * kept["width"] * 4
    rows = np.frombuffer(body, dtype="<i4", count=kept["rows"], offset=offset).copy().view(_Rows)
    rows.offset = offset
    return rows


@pytest.mark.parametrize("stamped", ["as it was", "as today"])
def test_a_snapshot_of_the_old_format_is_rebuilt(engine: Engine, stamped: str) -> None:
    """A snapshot the previous version wrote (format 1: vectors in the examples' order, no head) is not read as a head:
    the memory is rebuilt from the examples, answers the same, and the snapshot is written again in today's format."""
    store = engine.procedures()
    teach(store)
    built = fields(ask(DecisionMemory(store)))
    (good,) = store.conn.execute("SELECT body FROM decision_snapshots").fetchone()
    good = bytes(good)
    size = int.from_bytes(good[4:12], "little")
    header = json.loads(good[12 : 12 + size])
    kept = header["states"]["s"]
    header["format"] = 1
    del kept["labels"]
    text = json.dumps(header).encode()
    old = (
        b"SKDM"
        + len(text).to_bytes(8, "little")
        + text
        + good[12 + size : 12 + size + kept["rows"] * kept["width"] * 4]
    )
    old_stamp = snapshot.stamp(settings()).replace(f"/{snapshot.FORMAT} ", "/1 ")

    def rewrite(conn: Any) -> None:
        conn.execute("UPDATE decision_snapshots SET body = ?", (old,))
        if stamped == "as it was":
            conn.execute("UPDATE decision_snapshots SET stamp = ?", (old_stamp,))

    store.db.transaction(rewrite)
    fresh = DecisionMemory(engine.procedures())
    assert fields(ask(fresh)) == built
    assert fresh._states["w"]["s"].restored is None
    (again,) = store.conn.execute("SELECT body FROM decision_snapshots").fetchone()
    assert bytes(again) == good
    again_loaded = DecisionMemory(engine.procedures())
    assert fields(ask(again_loaded)) == built and again_loaded._states["w"]["s"].restored is not None


def test_a_snapshot_of_other_settings_or_another_workflow_shape_is_not_used(engine: Engine) -> None:
    store = engine.procedures()
    teach(store)
    ask(DecisionMemory(store))
    store.db.transaction(
        lambda conn: conn.execute("UPDATE decision_snapshots SET stamp = 'decide-snapshot/0 settings:elsewhere'")
    )
    fresh = DecisionMemory(engine.procedures())
    fresh.refresh("w")
    assert fresh._states["w"]["s"].restored is None
    # Read for another shape of the workflow (its valid (state, trigger) pairs): rebuilt for this one.
    shaped = DecisionMemory(engine.procedures())
    shaped.refresh("w", {("s", "a")})
    assert {e.trigger for e in shaped._states["w"]["s"].examples} == {"a"}
    other = DecisionMemory(engine.procedures())
    other.refresh("w", {("s", "a"), ("s", "b")})
    assert other._states["w"]["s"].restored is None and other._states["w"]["s"].size() == 2 * 128


def test_the_settings_stamp_names_the_format() -> None:
    assert snapshot.stamp(settings()).startswith(f"decide-snapshot/{snapshot.FORMAT} ")


def test_a_live_memory_drops_a_state_another_forgot(engine: Engine) -> None:
    """A memory kept across runs (one per home in a process) must not answer from examples forgotten elsewhere: the
    CLI's `learn decisions --forget`, another process's eviction."""
    store = engine.procedures()
    teach(store)
    live = DecisionMemory(store)
    assert ask(live).example is not None
    assert DecisionMemory(engine.procedures()).forget_state("w", "s") == 500
    answer = ask(live)
    assert answer.example is None and answer.why == "no decision in 's' seen yet"


def test_a_live_memory_drops_examples_deleted_behind_its_back(engine: Engine) -> None:
    store = engine.procedures()
    teach(store)
    live = DecisionMemory(store)
    ask(live)
    store.db.transaction(lambda conn: conn.execute("DELETE FROM decision_examples WHERE trigger = 'a'"))
    answer = ask(live)
    assert {e.trigger for e in live._states["w"]["s"].examples} == {"b"}
    assert answer.example is None or answer.example.trigger != "a"


def test_a_live_memory_reads_only_what_is_new(engine: Engine) -> None:
    """Kept across runs, a memory reads each run's new examples, not every example again: what keeps a request's
    cost flat as examples grow (bench/RESULTS.md, the BANKING77 stream's cost by tenth)."""
    store = engine.procedures()
    teach(store)
    live = DecisionMemory(store)
    ask(live)
    before = live._states["w"]["s"]
    teach(store, n=4, labels="c")
    answer = ask(live, CENTRES["c"])
    assert live._states["w"]["s"] is before and before.size() == 2 * 128 + 4
    assert answer.guess is not None and answer.guess.startswith("c ")
