"""A state's learned head and the workflow's calibration: how sure the decision memory may be, under a stated bound.

The head (per workflow state, over the examples' embeddings): each decision's evidence for a task is half its
centroid's similarity and half its nearest example's (a centroid alone blurs a decision taken for several kinds of
task, such as "none of these"); the score is the margin between the best decision and the next one, the same scale
at every state. A task whose nearest example is not close at all is far from every learned region: no score.

The calibration (split conformal risk control, pooled across the workflow's states): every decision the model took
where the head had a guess is a point (the head's score then, and whether its guess was the model's decision), kept
with the example; an answered decision later contradicted is a point that was wrong. The threshold is the lowest
score τ at which (wrong points scoring ≥ τ + 1) / (points + 1) ≤ δ: the share of the workflow's decisions the memory
answers wrongly stays under δ (marginally, for tasks like those calibrated on: on average over orders, not in every
stream; an answered decision leaves no point, so confident wrong answers above the threshold are never seen —
bench/RESULTS.md, "the bound across orders"). A state with enough points of its own
gets its own threshold; with too few points in all, no threshold can hold the bound, and the memory abstains.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def scorer_name(density: float) -> str:
    """The head's scorer as calibration points name it: a point scored otherwise is on another scale."""
    return f"margin+{density:g}nearest/1"


#: The fewest recent points a threshold is computed on, whatever the bound (a loose bound's window would be short).
_LEAST_WINDOW = 200
#: The evidence a decision's centroid gives, against its nearest example's.
_CENTROID_WEIGHT = 0.5


@dataclass(slots=True)
class Guess:
    """The head's guess for one task: the decision's code, its score (margin), and the nearest example's similarity."""

    code: int
    score: float
    nearest: float
    row: int


@dataclass(slots=True)
class Head:
    """One group of a state's examples, prepared once for every ask: rows sorted by decision, unit centroids."""

    matrix: Any
    codes: Any
    rows: Any
    starts: Any
    centroids: Any
    labels: int
    present: Any

    @classmethod
    def build(cls, matrix: Any, codes: Any) -> Head:
        import numpy as np

        order = np.argsort(codes, kind="stable")
        sorted_codes = codes[order]
        labels = int(codes.max()) + 1 if codes.size else 0
        starts, present = _starts(sorted_codes, labels)
        ordered = np.ascontiguousarray(matrix[order])
        sums = np.zeros((labels, matrix.shape[1]), dtype=np.float32)
        if present.size:
            # One pass over the sorted rows (each decision's rows are contiguous), not a mask per decision.
            sums[present] = np.add.reduceat(ordered, starts[present], axis=0)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        centroids = sums / np.where(norms == 0, 1, norms)
        return cls(ordered, sorted_codes, order, starts, centroids, labels, present)

    @classmethod
    def restore(cls, matrix: Any, rows: Any, codes: Any, centroids: Any, labels: int) -> Head:
        """The head `build` made, from its persisted arrays (rows sorted by decision already): nothing rebuilt."""
        starts, present = _starts(codes, labels)
        return cls(matrix, codes, rows, starts, centroids, labels, present)

    def guess(self, q: Any, density: float = 0.0) -> Guess | None:
        """The head's guess for the unit vector `q`; None when fewer than two decisions were taken here (no margin
        to measure)."""
        import numpy as np

        present = self.present
        if present.size < 2:
            return None
        # einsum, not BLAS: a multithreaded matrix-vector product stalls on a busy machine (30 ms for 3,000 rows).
        sims = np.einsum("ij,j->i", self.matrix, q)
        nearest = np.full(self.labels, -2.0)
        nearest[present] = np.maximum.reduceat(sims, self.starts[present])
        evidence = np.where(
            nearest > -2.0,
            _CENTROID_WEIGHT * np.einsum("ij,j->i", self.centroids, q) + (1 - _CENTROID_WEIGHT) * nearest,
            -2.0,
        )
        order = np.argpartition(-evidence, 1)[:2]
        top, second = (
            (int(order[0]), int(order[1]))
            if evidence[order[0]] >= evidence[order[1]]
            else (int(order[1]), int(order[0]))
        )
        start = int(self.starts[top])
        end = int(self.starts[top + 1]) if top + 1 < self.labels else len(self.codes)
        best = start + int(np.argmax(sims[start:end]))
        # The margin, plus `density` times how close the task is to the decision's nearest example: a clear margin
        # between two decisions far from the task is weaker evidence than the same margin among close examples.
        score = float(evidence[top] - evidence[second]) + density * float(nearest[top])
        return Guess(top, score, float(sims.max()), int(self.rows[best]))


def _starts(sorted_codes: Any, labels: int) -> tuple[Any, Any]:
    """Where each decision's rows start among rows sorted by decision, and the decisions that have rows."""
    import numpy as np

    starts = np.searchsorted(sorted_codes, np.arange(labels))
    # Where the sorted codes change, not np.unique: its first call in a process costs ~15 ms of imports.
    changes = np.flatnonzero(sorted_codes[1:] != sorted_codes[:-1]) + 1 if sorted_codes.size else np.zeros(0, int)
    present = sorted_codes[np.concatenate([[0], changes]).astype(int)] if sorted_codes.size else np.zeros(0, int)
    return starts, present


@dataclass
class Calibration:
    """A workflow's calibration points in arrival order: (state, score, wrong), and the thresholds the most recent
    `window`/δ of them give at bound δ (older points were scored by a head that knew less: not like today's tasks)."""

    window: float = 1e9
    order: list[tuple[str, float, bool]] = field(default_factory=list)
    _thresholds: dict[tuple[str | None, float], float | None] = field(default_factory=dict)
    _counts: dict[tuple[str | None, float], int] = field(default_factory=dict)

    def points(self, delta: float) -> dict[str, list[tuple[float, bool]]]:
        """The recent points by state (at bound `delta`)."""
        out: dict[str, list[tuple[float, bool]]] = {}
        for state, score, wrong in self.order[-self._size(delta) :]:
            out.setdefault(state, []).append((score, wrong))
        return out

    def add(self, state: str, score: float, wrong: bool) -> None:
        self.order.append((state, score, wrong))
        if len(self.order) > 100_000:
            del self.order[:50_000]
        self._thresholds.clear()
        self._counts.clear()

    def _size(self, delta: float) -> int:
        return max(int(self.window / delta), _LEAST_WINDOW)

    def _recent(self, state: str | None, delta: float) -> list[tuple[float, bool]]:
        recent = self.order[-self._size(delta) :]
        return [(s, w) for st, s, w in recent if state is None or st == state]

    def count(self, delta: float, state: str | None = None) -> int:
        # Asked at every answer: counted once per change of points (a workflow keeps up to 100,000 of them).
        key = (state, delta)
        if key not in self._counts:
            self._counts[key] = len(self._recent(state, delta))
        return self._counts[key]

    def wrong(self, delta: float, state: str | None = None) -> int:
        return sum(1 for _, w in self._recent(state, delta) if w)

    def threshold(self, state: str, delta: float, own_points: int) -> tuple[float | None, str]:
        """The score from which `state` may answer at bound `delta`, and whose threshold it is ('state', 'pooled'),
        or (None, why not)."""
        if self.count(delta, state) >= own_points:
            found = self._threshold(state, delta)
            if found is not None:
                return found, "state"
        found = self._threshold(None, delta)
        if found is None:
            n = self.count(delta)
            need = int(1 / delta)
            why = (
                f"uncalibrated: {n} calibration points in the workflow, the bound needs at least {need}"
                if n + 1 < need
                else f"no score holds the bound δ={delta:g} over the workflow's {n} calibration points"
            )
            return None, why
        return found, "pooled"

    def risk(self, threshold: float, delta: float) -> float:
        """The bound's estimate at `threshold`: (recent wrong points scoring at or above it + 1) / (points + 1)."""
        recent = self._recent(None, delta)
        return (sum(1 for s, w in recent if w and s >= threshold) + 1) / (len(recent) + 1)

    def _threshold(self, state: str | None, delta: float) -> float | None:
        key = (state, delta)
        if key not in self._thresholds:
            pairs = sorted(self._recent(state, delta), key=lambda p: -p[0])
            n, wrong, best = len(pairs), 0, None
            # Scanning from the highest score down: the lowest τ whose wrong answers above it still hold the bound.
            for i, (score, is_wrong) in enumerate(pairs):
                wrong += is_wrong
                if (wrong + 1) / (n + 1) > delta:
                    break
                # Ties: τ is a score all points at that score are answered from.
                if i + 1 == n or pairs[i + 1][0] < score:
                    best = score
            self._thresholds[key] = best
        return self._thresholds[key]
