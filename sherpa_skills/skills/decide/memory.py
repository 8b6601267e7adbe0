"""A workflow's decision memory: its past decisions at each state, answering the next one where they agree.

At a state, the examples that count are those that agree with the decision asked now on every value that separated
past examples: two examples took different decisions on the same path of decisions, and a short context value, an
action's outcome or check, or the options the guards left differed between them. Among those:

- the state decided the same for every kind of task: all of them agree, there are enough, and they came by different
  paths (earlier decisions differed, so the task's kind did not matter here) → that decision;
- else meaning decides: the nearest examples by the task's embedding agree, are close enough, and the nearest one
  that decided otherwise is clearly farther → that decision;
- else it abstains, and says why: the LLM decides, and its decision becomes an example.

An example is tied to the state and trigger it was recorded on: one the workflow no longer has is unusable (counted,
never answered from). How sure is sure is in settings.json, with how it was fitted.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import structlog

from ..store.database import ProcedureDatabase
from . import snapshot
from .examples import Example, calibration_after, delete_examples, examples_after
from .head import Calibration, Head, scorer_name

log = structlog.get_logger(__name__)

#: A snapshot is rewritten once the examples read since it are this many, and this share of the memory's.
_LEAST_UNSAVED = 16
_UNSAVED_SHARE = 0.05
#: Vectors' width when none is stored (an example kept without an embedding): MiniLM's.
_DIM = 384


@cache
def settings() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((Path(__file__).with_name("settings.json")).read_text())
    return loaded


def scorer() -> str:
    """The scorer the head uses with these settings (its calibration points are named by it)."""
    return scorer_name(float(settings()["density"]))


@dataclass(slots=True)
class DecisionAnswer:
    """What the memory says for one decision: `example` is the decision to take (None: it abstains, `why`)."""

    example: Example | None
    why: str
    confidence: float = 0.0
    rule: str = ""
    examples: int = 0
    #: The head's guess and score where it had one (answered or not): the model's decision there is a calibration
    #: point, and an answered decision later contradicted is a wrong one.
    guess: str | None = None
    score: float | None = None
    #: The examples that taught an answer (its decision's nearest ones): evicted if the answer is contradicted.
    teachers: list[int] = field(default_factory=list)


@dataclass(slots=True)
class Restored:
    """A state's examples as a snapshot keeps them: what repeats (decision, features, path) once per kind, the rest
    by column. A new process answers from these; an Example is made for a row only when it is asked for."""

    workflow: str
    state: str
    kinds: list[tuple[str, dict[str, Any], dict[str, Any], str, str | None, str]]
    kind: list[int]
    ids: list[int]
    runs: list[str | None]
    created: list[float]
    #: The state's head as persisted (its vectors sorted by decision) and where each row's vector is in it.
    head: Head
    position: Any
    made: dict[int, Example] = field(default_factory=dict)

    def example(self, i: int) -> Example:
        if i not in self.made:
            trigger, args, features, path, embedder, label = self.kinds[self.kind[i]]
            self.made[i] = Example(
                workflow=self.workflow,
                state=self.state,
                trigger=trigger,
                args=args,
                features=features,
                path=path,
                task="",
                vector=self.head.matrix[self.position[i]].tobytes(),
                embedder=embedder,
                run_id=self.runs[i],
                id=int(self.ids[i]),
                created=float(self.created[i]),
                _label=label,
            )
        return self.made[i]


@dataclass
class StateMemory:
    """One (workflow, state)'s examples, newest kept per decision, their vectors stacked for one product per ask."""

    _examples: list[Example] | None = field(default_factory=list)
    #: A restored state's rows, until something needs every example (a new one arrives, one is evicted).
    restored: Restored | None = None
    separating: tuple[str, ...] = ()
    #: The values each repeating key took among the examples: one never seen here is a case the memory cannot know.
    seen: dict[str, set[str]] = field(default_factory=dict)
    _matrix: Any = None
    _labels: Any = None
    _varied: set[str] = field(default_factory=set)
    _groups: dict[tuple[Any, ...], Group] | None = None
    _head: Head | None = None
    #: Each stored example's values as JSON, by example id (`_code`).
    _codes: dict[int, dict[str, str]] = field(default_factory=dict)

    @property
    def examples(self) -> list[Example]:
        """Every example, oldest first (a restored state's made now)."""
        if self._examples is None:
            restored = self.restored
            self._examples = [restored.example(i) for i in range(len(restored.ids))] if restored else []
        return self._examples

    @examples.setter
    def examples(self, examples: list[Example]) -> None:
        self._examples, self.restored = examples, None

    def size(self) -> int:
        return len(self.restored.ids) if self._examples is None and self.restored else len(self.examples)

    def example(self, i: int) -> Example:
        """Row `i`'s example (of a restored state, without making the others)."""
        if self._examples is None and self.restored is not None:
            return self.restored.example(i)
        return self.examples[i]

    def _row(self, i: int) -> tuple[str, str, dict[str, Any]]:
        """Row `i`'s (label, path, features), read from a restored state's kinds without making its example."""
        if self._examples is None and self.restored is not None:
            kind = self.restored.kinds[self.restored.kind[i]]
            return kind[5], kind[3], kind[2]
        e = self.examples[i]
        return e.label, e.path, e.features

    def head(self, dim: int) -> Head:
        """The state's head over every example (built once per change of examples)."""
        import numpy as np

        if self._head is None:
            codes: dict[str, int] = {}
            labels = np.asarray([codes.setdefault(self._row(i)[0], len(codes)) for i in range(self.size())])
            self._head = Head.build(self.matrix(dim), labels)
        return self._head

    def add(self, example: Example) -> None:
        self.examples.append(example)
        self._matrix = self._groups = self._labels = self._head = None

    def bound(self, kept: int) -> None:
        """Keep the newest `kept` examples of each decision: the memory's cost stays flat as examples pile up, and
        what the workflow does now outweighs what it did long ago."""
        counts: dict[str, int] = {}
        keep = []
        for e in reversed(self.examples):
            n = counts.get(e.label, 0)
            if n < kept:
                keep.append(e)
                counts[e.label] = n + 1
        if len(keep) != len(self.examples):
            self.examples = keep[::-1]
            self._matrix = self._groups = self._labels = self._head = None

    def matrix(self, dim: int) -> Any:
        import numpy as np

        if self._matrix is None and self._examples is None and self.restored is not None:
            self._matrix = self.restored.head.matrix[self.restored.position]
        if self._matrix is None:
            # The newest example's width wins: examples embedded by another embedder have no meaning here (zeros).
            width = next((len(e.vector) // 4 for e in reversed(self.examples) if e.vector), dim)
            # One buffer, not a stack of rows: a state's thousands of vectors are read at every change of examples.
            zero = bytes(width * 4)
            joined = b"".join(e.vector if e.vector and len(e.vector) == width * 4 else zero for e in self.examples)
            m = np.frombuffer(joined, dtype=np.float32).reshape(len(self.examples), width)
            norms = np.linalg.norm(m, axis=1, keepdims=True)
            self._matrix = m / np.where(norms == 0, 1, norms)
        return self._matrix

    def _code(self, e: Example) -> dict[str, str]:
        """Each of the example's values as JSON (what `seen` holds), made once per stored example: the separating
        values are found again over every example of a state at each change, and encoding them all again was most of
        that."""
        if not e.id:
            return {k: json.dumps(v, sort_keys=True) for k, v in e.features.items()}
        code = self._codes.get(e.id)
        if code is None:
            if len(self._codes) > 2 * len(self.examples) + 64:  # evicted examples' codes go
                kept = {x.id for x in self.examples}
                self._codes = {i: c for i, c in self._codes.items() if i in kept}
            code = self._codes[e.id] = {k: json.dumps(v, sort_keys=True) for k, v in e.features.items()}
        return code

    def find_separating(self, most_values: int, close: float) -> None:
        """The values that separated past examples: those that differ between two examples of different decisions on
        the same path whose tasks are alike in meaning (similarity at least `close`: tasks far apart in meaning are
        told apart by meaning), among values that repeat (at most `most_values` distinct ones: an id or a clock never
        separates)."""
        import numpy as np

        codes = [self._code(e) for e in self.examples]
        distinct: dict[str, set[str]] = {}
        for code in codes:
            for k, shown in code.items():
                distinct.setdefault(k, set()).add(shown)
        keys = sorted(distinct)
        usable = [k for k in keys if len(distinct[k] | {"null"}) <= most_values]
        self.seen = {k: distinct[k] | ({"null"} if any(k not in c for c in codes) else set()) for k in usable}
        # Examples by path, then by (decision, values): each such set is compared once with every other decision's.
        by_path: dict[str, dict[tuple[str, tuple[str, ...]], list[int]]] = {}
        for i, (e, code) in enumerate(zip(self.examples, codes, strict=True)):
            values = tuple(code.get(k, "null") for k in usable)
            by_path.setdefault(e.path, {}).setdefault((e.label, values), []).append(i)
        matrix = self.matrix(_DIM)
        known = np.linalg.norm(matrix, axis=1) > 0
        found: set[str] = set()
        for sets in by_path.values():
            items = list(sets.items())
            for n, ((label_a, values_a), rows_a) in enumerate(items):
                for (label_b, values_b), rows_b in items[n + 1 :]:
                    if label_a == label_b or values_a == values_b:
                        continue
                    # Different options (the guards told the cases apart), or no meaning to compare (an example
                    # kept without a vector), count as alike: the cautious side.
                    options = usable.index("options") if "options" in usable else None
                    alike = (options is not None and values_a[options] != values_b[options]) or (
                        not known[rows_a].all() or not known[rows_b].all()
                    )
                    if not alike:
                        alike = float((matrix[rows_a] @ matrix[rows_b].T).max()) >= close
                    if alike:
                        found.update(k for k, x, y in zip(usable, values_a, values_b, strict=True) if x != y)
        self.separating = tuple(sorted(found))
        self._varied = set(keys) - set(usable)
        self._groups = None

    def labels(self) -> Any:
        """Every example's decision, as an array aligned with `matrix`."""
        import numpy as np

        if self._labels is None:
            self._labels = np.asarray([e.label for e in self.examples], dtype=object)
        return self._labels

    def novel(self, features: dict[str, Any]) -> str | None:
        """A value of `features` no example here had ('key=value'), or None. Keys that never repeat (an id, a clock)
        are not asked."""
        for key, value in features.items():
            values = self.seen.get(key)
            shown = json.dumps(value, sort_keys=True)
            if values is None:
                if key not in self._varied and value is not None:
                    return f"{key}={shown}"
                continue
            if shown not in values:
                return f"{key}={shown}"
        for key, values in self.seen.items():
            if key not in features and "null" not in values:
                return f"{key} unset"
        return None

    def group(self, features: dict[str, Any], dim: int) -> Group | None:
        """The examples that agree with `features` on every separating value, ready to be asked (None: none do)."""
        if self._groups is None and self._examples is None and self.restored is not None:
            self._groups = self._restored_groups(self.restored)
        if self._groups is None:
            members: dict[tuple[Any, ...], list[int]] = {}
            if self.separating:
                for i in range(self.size()):
                    members.setdefault(_key(self._row(i)[2], self.separating), []).append(i)
            else:  # nothing separates: one group of every example (a fresh process's first ask pays no key per row)
                members[()] = list(range(self.size()))
            width = int(self.matrix(dim).shape[1])
            self._groups = {
                key: Group(
                    rows=rows,
                    width=width,
                    labels={self._row(i)[0] for i in rows},
                    paths={self._row(i)[1] for i in rows},
                )
                for key, rows in members.items()
            }
        return self._groups.get(_key(features, self.separating))

    def _restored_groups(self, restored: Restored) -> dict[tuple[Any, ...], Group]:
        """A restored state's groups, keyed and described once per kind of row, not once per row."""
        keys = [_key(k[2], self.separating) for k in restored.kinds]
        members: dict[tuple[Any, ...], list[int]] = {}
        kinds: dict[tuple[Any, ...], set[int]] = {}
        if self.separating:
            for i, k in enumerate(restored.kind):
                members.setdefault(keys[k], []).append(i)
            for key, rows in members.items():
                kinds[key] = {restored.kind[i] for i in rows}
        else:
            members[()], kinds[()] = list(range(len(restored.ids))), set(restored.kind)
        width = int(restored.head.matrix.shape[1])
        return {
            key: Group(
                rows=rows,
                width=width,
                labels={restored.kinds[k][5] for k in kinds[key]},  # type: ignore[misc]
                paths={restored.kinds[k][3] for k in kinds[key]},
            )
            for key, rows in members.items()
        }


def _check_decisions(state: str, head: Head, kinds: list[Any], kind: list[int]) -> None:
    """A restored head whose codes do not name its rows' decisions one to one is not used (it would answer others)."""
    import numpy as np

    names: dict[str, int] = {}
    per_kind = np.asarray([names.setdefault(str(k[5]), len(names)) for k in kinds], dtype=np.intp)
    decided = per_kind[np.asarray(kind, dtype=np.intp)][head.rows] if head.rows.size else np.zeros(0, np.intp)
    first = np.full(head.labels, -1, dtype=np.intp)
    first[head.present] = decided[head.starts[head.present]]
    if (decided != first[head.codes]).any() or len(set(first[head.present].tolist())) != head.present.size:
        raise ValueError(f"state '{state}': its head's decisions are not its rows'")


def _key(features: dict[str, Any], keys: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple(json.dumps(features.get(k), sort_keys=True) for k in keys)


@dataclass(slots=True)
class Group:
    """Examples that agree on every separating value: their rows, vectors' width, decisions and paths, made once."""

    rows: list[int]
    width: int
    labels: set[str]
    paths: set[str]


class DecisionMemory:
    """The decision memories of one skill store's workflows, read from it as they grow (only new rows each time)."""

    def __init__(self, store: ProcedureDatabase):
        self.store = store
        self._read: dict[str, int] = {}
        self._states: dict[str, dict[str, StateMemory]] = {}
        self._unusable: dict[str, dict[str, int]] = {}
        self._calibration: dict[str, Calibration] = {}
        self._points_read: dict[str, tuple[int, int]] = {}
        #: Tokens the model's decisions cost, by workflow: (sum, count), what a memory's answer is estimated to save.
        self._cost: dict[str, tuple[int, int]] = {}
        #: Examples read since the workflow's snapshot was written or loaded.
        self._unsaved: dict[str, int] = {}
        #: Examples up to the calibration's last id the memory read, counted as read: what a snapshot records.
        self._counted: dict[str, int] = {}
        #: The workflow's shape (its states and triggers) its examples were read for: another shape reads them again.
        self._shape: dict[str, str | None] = {}

    def calibration(self, workflow: str) -> Calibration:
        """`workflow`'s calibration points, read from the store as they grow."""
        calibration = self._calibration.setdefault(workflow, Calibration(float(settings()["calibration_window"])))
        after_example, after_error = self._points_read.get(workflow, (0, 0))
        points, errors, cost = calibration_after(self.store, workflow, after_example, after_error, scorer())
        for state, score, wrong in points + errors:
            calibration.add(state, score, wrong)
        last_example = max([after_example] + [i for i in cost.get("example_ids", [])])
        last_error = max([after_error] + [i for i in cost.get("error_ids", [])])
        self._points_read[workflow] = (last_example, last_error)
        self._counted[workflow] = self._counted.get(workflow, 0) + len(cost.get("example_ids", []))
        total, count = self._cost.get(workflow, (0, 0))
        self._cost[workflow] = (total + int(cost.get("tokens", 0)), count + int(cost.get("decisions", 0)))
        return calibration

    def decision_tokens(self, workflow: str) -> int:
        """What one of `workflow`'s decisions cost when the model took it (tokens, mean over its examples)."""
        total, count = self._cost.get(workflow, (0, 0))
        return round(total / count) if count else 0

    def evict(self, workflow: str, ids: list[int]) -> int:
        """Forget the examples `ids` of `workflow` (store and memory): what taught a contradicted answer."""
        gone = set(ids)
        for memory in self._states.get(workflow, {}).values():
            if memory._examples is None and memory.restored and gone.isdisjoint(memory.restored.ids):
                continue  # a restored state none of them is in: left as loaded
            kept = [e for e in memory.examples if e.id not in gone]
            if len(kept) != len(memory.examples):
                memory.examples = kept
                memory._matrix = memory._groups = memory._labels = memory._head = None
        gone_count = delete_examples(self.store, workflow, ids)
        # What taught an answer was read: no longer counted (an off count only makes the next snapshot stale).
        if workflow in self._counted:
            self._counted[workflow] -= gone_count
        return gone_count

    def forget_state(self, workflow: str, state: str) -> int:
        """Forget every example of `state` in `workflow` (after the workflow changed there)."""
        memory = self._states.get(workflow, {}).pop(state, None)
        ids = [e.id for e in memory.examples] if memory else []
        if workflow in self._counted:  # the state's examples read so far are no longer counted
            (read,) = self.store.conn.execute(
                "SELECT COUNT(*) FROM decision_examples WHERE workflow = ? AND state = ? AND id <= ?",
                (workflow, state, self._points_read.get(workflow, (0, 0))[0]),
            ).fetchone()
            self._counted[workflow] -= int(read)
        return delete_examples(self.store, workflow, ids, state=state)

    def refresh(self, workflow: str, valid: set[tuple[str, str]] | None = None) -> dict[str, int]:
        """Read `workflow`'s new examples; `valid` is the (state, trigger) pairs the workflow has now. Returns the
        unusable examples by why (a state or trigger the workflow no longer has). The first read in a process starts
        from the workflow's persisted snapshot where one still stands for the store's examples; a read that changed
        the memory persists it again."""
        conf = settings()
        shape = snapshot.valid_key(valid)
        if workflow in self._states and (self._shape.get(workflow) != shape or not self._holds(workflow)):
            self._drop(workflow)
        self._shape[workflow] = shape
        fresh = workflow not in self._states
        restored = fresh and self._restore(workflow, conf, valid)
        # The calibration counts what it reads first, then the examples are read up to its last id: an example
        # counted is one read (on PostgreSQL a lower id can commit late; then the count misses it, and the snapshot
        # written is stale rather than trusted without it).
        self.calibration(workflow)
        new = examples_after(
            self.store,
            workflow,
            self._read.get(workflow, 0),
            int(conf["kept_per_decision"]),
            self._points_read[workflow][0],
        )
        if not new and workflow in self._states:
            return self._unusable.get(workflow, {})
        states = self._states.setdefault(workflow, {})
        unusable = self._unusable.setdefault(workflow, {})
        touched: set[str] = set()
        for e in new:
            self._read[workflow] = e.id
            if valid is not None and (e.state, e.trigger) not in valid:
                why = (
                    f"state '{e.state}' is gone"
                    if not any(s == e.state for s, _ in valid)
                    else f"trigger '{e.trigger}' is gone from '{e.state}'"
                )
                unusable[why] = unusable.get(why, 0) + 1
                continue
            states.setdefault(e.state, StateMemory()).add(e)
            touched.add(e.state)
        for state in touched:
            memory = states[state]
            memory.bound(int(conf["kept_per_decision"]))
            memory.find_separating(int(conf["separating_values"]), float(conf["conflict_floor"]))
        # Persisted when built from the examples, or once the examples read since the last snapshot are a share
        # worth its write (a long-lived process persisting after every run would pay a growing write per run).
        lag = self._unsaved.get(workflow, 0) + len(new)
        if (
            fresh
            and not restored
            or lag >= max(_LEAST_UNSAVED, _UNSAVED_SHARE * sum(m.size() for m in states.values()))
        ):
            self._persist(workflow, conf, valid)
            lag = 0
        self._unsaved[workflow] = lag
        return unusable

    def _holds(self, workflow: str) -> bool:
        """Whether the store still has every example of `workflow` this memory counted: another memory (the CLI's
        `--forget`, another process's eviction) may have deleted some since, and a memory kept across runs must not
        answer from them."""
        upto = self._points_read.get(workflow, (0, 0))[0]
        return snapshot.counts(self.store, workflow, upto) == self._counted.get(workflow, 0)

    def _drop(self, workflow: str) -> None:
        """Forget all that was read of `workflow`: the next refresh starts again (from its snapshot if one stands);
        the examples were deleted elsewhere, or the workflow changed shape."""
        kept: list[dict[str, Any]] = [self._read, self._states, self._unusable, self._calibration, self._points_read]
        for found in [*kept, self._cost, self._unsaved, self._counted]:
            found.pop(workflow, None)
        log.info("decision_memory_reread", workflow=workflow)

    def _persist(self, workflow: str, conf: dict[str, Any], valid: set[tuple[str, str]] | None) -> None:
        """Keep the workflow's memory as a snapshot, for the next process's first ask."""
        calibration = self._calibration[workflow]  # read by the refresh that persists: counted with its examples
        states = self._states.get(workflow, {})
        if not states:
            return
        # Column by column, what repeats (a decision, its features, the path) once in `kinds`: a new process
        # parses thousands of short lists, not thousands of dicts.
        kinds: dict[str, int] = {}

        def kind(e: Example) -> int:
            text = json.dumps([e.trigger, e.args, e.features, e.path, e.embedder, e.label], sort_keys=True)
            return kinds.setdefault(text, len(kinds))

        def columns(memory: StateMemory) -> dict[str, Any]:
            restored = memory.restored
            if memory._examples is None and restored is not None:  # as it was loaded: its kinds renumbered
                renumber = [kinds.setdefault(json.dumps(list(k), sort_keys=True), len(kinds)) for k in restored.kinds]
                return {
                    "ids": restored.ids,
                    "kinds": [renumber[k] for k in restored.kind],
                    "runs": restored.runs,
                    "created": restored.created,
                }
            return {
                "ids": [e.id for e in memory.examples],
                "kinds": [kind(e) for e in memory.examples],
                "runs": [e.run_id for e in memory.examples],
                "created": [e.created for e in memory.examples],
            }

        header: dict[str, Any] = {
            "format": snapshot.FORMAT,
            "valid": snapshot.valid_key(valid),
            "read": self._read.get(workflow, 0),
            "unusable": self._unusable.get(workflow, {}),
            "states": {
                name: {
                    **columns(memory),
                    "rows": memory.size(),
                    "width": int(memory.head(_DIM).matrix.shape[1]),
                    "labels": memory.head(_DIM).labels,
                    "separating": list(memory.separating),
                    "seen": {k: sorted(v) for k, v in memory.seen.items()},
                    "varied": sorted(memory._varied),
                }
                for name, memory in states.items()
            },
            "calibration": [[st for st, _, _ in calibration.order], [sc for _, sc, _ in calibration.order]],
            "wrong": [i for i, (_, _, w) in enumerate(calibration.order) if w],
            "points_read": list(self._points_read.get(workflow, (0, 0))),
            "cost": list(self._cost.get(workflow, (0, 0))),
        }
        header["kinds"] = list(kinds)
        upto, errors_upto = self._points_read.get(workflow, (0, 0))
        heads = {
            name: {"matrix": h.matrix, "rows": h.rows, "codes": h.codes, "centroids": h.centroids}
            for name, h in ((name, m.head(_DIM)) for name, m in states.items())
        }
        counted = self._counted.get(workflow, 0)
        snapshot.save(self.store, workflow, conf, snapshot.Snapshot(header, heads, upto, errors_upto, counted))

    def _restore(self, workflow: str, conf: dict[str, Any], valid: set[tuple[str, str]] | None) -> bool:
        """The workflow's memory from its snapshot, if one still stands for the store's examples."""
        import numpy as np

        snap = snapshot.load(self.store, workflow, conf, valid)
        if snap is None:
            return False
        header = snap.header
        states: dict[str, StateMemory] = {}
        try:
            kinds = [tuple(json.loads(k)) for k in header["kinds"]]
            for name, kept in header["states"].items():
                arrays = snap.heads[name]
                ids, kind = kept["ids"], kept["kinds"]
                rows = arrays["rows"]
                if not len(ids) == len(kind) == len(kept["runs"]) == len(kept["created"]) == rows.shape[0]:
                    raise ValueError(f"state '{name}': its columns differ in length")
                if any(not 0 <= k < len(kinds) for k in kind) or any(len(k) != 6 for k in kinds):
                    raise ValueError(f"state '{name}': a row names no kind")
                head = Head.restore(arrays["matrix"], rows, arrays["codes"], arrays["centroids"], int(kept["labels"]))
                _check_decisions(name, head, kinds, kind)
                position = np.empty(rows.shape[0], dtype=np.intp)
                position[rows] = np.arange(rows.shape[0])
                memory = StateMemory(
                    _examples=None,
                    restored=Restored(
                        workflow,
                        name,
                        kinds,
                        kind,
                        ids,
                        kept["runs"],
                        kept["created"],
                        head,
                        position,  # type: ignore[arg-type]
                    ),
                    separating=tuple(kept["separating"]),
                    seen={k: set(v) for k, v in kept["seen"].items()},
                )
                memory._varied = set(kept["varied"])
                memory._head = head
                states[name] = memory
            calibration = Calibration(float(conf["calibration_window"]))
            wrong = set(header["wrong"])
            at, scores = header["calibration"]
            if len(at) != len(scores):
                raise ValueError("the calibration's columns differ in length")
            # Built column-wise, the few wrong points marked after: thousands of points are read at a first ask.
            calibration.order = list(zip(map(str, at), map(float, scores), [False] * len(at), strict=True))
            for i in wrong:
                calibration.order[i] = (calibration.order[i][0], calibration.order[i][1], True)
            points_read = (int(header["points_read"][0]), int(header["points_read"][1]))
            cost = (int(header["cost"][0]), int(header["cost"][1]))
            read, unusable = int(header["read"]), {str(k): int(v) for k, v in header["unusable"].items()}
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            log.warning("decision_snapshot_ignored", workflow=workflow, why=f"unreadable: {exc!r}")
            return False
        self._states[workflow], self._calibration[workflow] = states, calibration
        self._points_read[workflow], self._cost[workflow] = points_read, cost
        self._read[workflow], self._unusable[workflow] = read, unusable
        self._counted[workflow] = snap.examples
        return True

    def answer(
        self,
        workflow: str,
        state: str,
        meaning: Callable[[], Any],
        features: dict[str, Any],
        path: str,
        bound: float | None = None,
    ) -> DecisionAnswer:
        """The decision the memory would take at `state` now, or why it abstains; `meaning()` gives the task's
        embedding, asked for only when meaning must decide; `bound` is the workflow's error bound δ (default: the
        settings')."""
        import numpy as np

        memory = self._states.get(workflow, {}).get(state)
        if memory is None or not memory.size():
            return DecisionAnswer(None, f"no decision in '{state}' seen yet")
        conf = settings()
        novel = memory.novel(features)
        if novel is not None:
            return DecisionAnswer(None, f"'{state}' was never decided with {novel}", examples=memory.size())
        group = memory.group(features, _DIM)
        if group is None:
            shown = ", ".join(f"{k}={features.get(k)!r}" for k in memory.separating)
            return DecisionAnswer(None, f"no decision in '{state}' seen with {shown}", examples=memory.size())
        size = len(group.rows)
        if (
            len(group.labels) == 1
            and size >= int(conf["any_kind_examples"])
            and len(group.paths) >= int(conf["any_kind_paths"])
        ):
            return DecisionAnswer(
                memory.example(group.rows[-1]),
                f"{size} decisions in '{state}' agree, whatever came before",
                confidence=1 - 1 / (size + 1),
                rule="same for every kind",
                examples=size,
            )
        if size < int(conf["least_neighbours"]):
            return DecisionAnswer(None, f"only {size} decision in '{state}' to go by", examples=size)
        vector = meaning()
        if vector is None:
            return DecisionAnswer(None, "the task has no embedding", examples=size)
        q = np.asarray(vector, dtype=np.float32)
        q = q / (np.linalg.norm(q) or 1)
        if group.width != q.shape[0]:
            return DecisionAnswer(None, "the examples were embedded otherwise", examples=size)
        # Meaning decides among every decision taken at the state; the values then say which of them may be taken.
        head = memory.head(_DIM)
        found = head.guess(q, float(conf["density"]))
        if found is None:
            only = memory.example(0).trigger
            return DecisionAnswer(
                None, f"only '{only}' was ever decided in '{state}': nothing shows where it ends", examples=size
            )
        example = memory.example(found.row)
        if found.nearest < float(conf["far_floor"]):
            return DecisionAnswer(
                None,
                f"the task is far from every decision learned in '{state}' (nearest {found.nearest:.2f})",
                examples=size,
            )
        seen = DecisionAnswer(None, "", examples=size, guess=example.label, score=round(found.score, 4))
        if example.label not in group.labels:
            shown = ", ".join(f"{k}={features.get(k)!r}" for k in memory.separating)
            seen.why = f"meaning says '{example.trigger}' in '{state}', never decided there with {shown}"
            return seen
        delta = float(conf["error_bound"]) if bound is None else bound
        calibration = self._calibration.setdefault(workflow, Calibration(float(conf["calibration_window"])))
        threshold, whose = calibration.threshold(state, delta, int(conf["state_points"]))
        if threshold is None:
            seen.why = f"'{state}': {whose}"
            return seen
        if found.score < threshold:
            seen.why = (
                f"'{example.trigger}' scores {found.score:.3f} in '{state}', below the {whose} threshold "
                f"{threshold:.3f} that holds δ={delta:g}"
            )
            return seen
        top = head.codes == found.code
        sims = head.matrix[top] @ q
        nearest = head.rows[top][np.argsort(-sims)[: int(conf["neighbours"])]]
        seen.example, seen.rule, seen.confidence = example, "calibrated head", round(found.score - threshold, 3)
        seen.teachers = [memory.example(int(r)).id for r in nearest]
        seen.why = (
            f"'{example.trigger}' scores {found.score:.3f} in '{state}', at or above the {whose} threshold "
            f"{threshold:.3f} that holds δ={delta:g}"
        )
        return seen
