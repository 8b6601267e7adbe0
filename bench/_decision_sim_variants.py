"""Variants of the decision memory tried by bench/decision_head_sim.py (issue 36, round 4), each named for `--variant`.

A variant is one or more names joined by '+':

- `current`: the memory as shipped (its `Calibration`, examples only from the model's decisions).
- `selftrain`: a decision the memory answered also becomes an example (as the model's would); it leaves no point.
- `joint`: per-state thresholds chosen together under one pooled budget — the most answered points such that the
  wrong points above every state's threshold, summed, hold (wrong + 1) / (points + 1) ≤ δ (see `JointCalibration`).
- `joint1`: the same, but each state that answers pays its own + 1 (Σ (wrong_s + 1) ≤ δ (points + 1)): each state's
  threshold is chosen on its own points, so each pays the conformal correction once.
- `routefine`: the route scored over where its examples' requests ended (domain/intent), not their domains
  (`FineRoute`): each domain's evidence is its best intent's.
- `loo`: the calibration's points are every example scored leave-one-out by today's head, recomputed every
  `LOO_EVERY` requests, not each point's score when the model was asked (a head that knew less then): the region the
  memory answers unchecked is still calibrated by the model's earlier decisions there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from seams import Calibration

#: Names a variant may combine.
NAMES = {"current", "selftrain", "joint", "joint1", "routefine", "loo"}
#: `loo`: requests between two recomputations of the leave-one-out calibration.
LOO_EVERY = int(os.environ.get("SIM_LOO_EVERY", "20"))
#: The fewest points a state needs to be a group of its own in the joint choice (fewer: it shares the rest's).
JOINT_OWN = int(os.environ.get("SIM_JOINT_OWN", "100"))
_REST = "\0rest"


def parse(variant: str) -> set[str]:
    """The names in `variant`; an unknown one is an error naming it."""
    names = set(variant.split("+"))
    unknown = names - NAMES
    if unknown:
        raise SystemExit(f"--variant: unknown {sorted(unknown)}; known: {sorted(NAMES)}")
    return names


def calibration(names: set[str], window: float) -> Calibration:
    if "joint" in names or "joint1" in names:
        return JointCalibration(window, per_group="joint1" in names)
    return Calibration(window)


def _options(pairs: list[tuple[float, bool]], most: int) -> list[tuple[int, float | None]]:
    """For c = 0..most wrong points allowed above it: (points answered, the lowest threshold with at most c wrong
    points scoring at or above it; None when even the top score is wrong beyond c)."""
    pairs = sorted(pairs, key=lambda p: -p[0])
    out: list[tuple[int, float | None]] = []
    for c in range(most + 1):
        wrong, best, gain = 0, None, 0
        for i, (score, is_wrong) in enumerate(pairs):
            wrong += is_wrong
            if wrong > c:
                break
            if i + 1 == len(pairs) or pairs[i + 1][0] < score:
                best, gain = score, i + 1
        out.append((gain, best))
    return out


@dataclass
class JointCalibration(Calibration):
    """Each state's threshold chosen jointly: states with `JOINT_OWN` points are a group each, the rest one group;
    a dynamic programme over the groups spends the pooled budget of wrong points where it answers the most points."""

    per_group: bool = False
    _joint: dict[float, dict[str, float | None]] = field(default_factory=dict)

    def add(self, state: str, score: float, wrong: bool) -> None:
        super().add(state, score, wrong)
        self._joint.clear()

    def threshold(self, state: str, delta: float, own_points: int) -> tuple[float | None, str]:
        if delta not in self._joint:
            self._joint[delta] = self._choose(delta)
        chosen = self._joint[delta]
        key = state if state in chosen else _REST
        found = chosen.get(key)
        if found is None:
            return None, "no threshold in the joint choice"
        return found, "joint"

    def _choose(self, delta: float) -> dict[str, float | None]:
        by_state = self.points(delta)
        n = sum(len(p) for p in by_state.values())
        groups: dict[str, list[tuple[float, bool]]] = {}
        for state, pairs in by_state.items():
            groups.setdefault(state if len(pairs) >= JOINT_OWN else _REST, []).extend(pairs)
        # The wrong points the pool may hold: (W + 1) / (n + 1) ≤ δ, or Σ (W_s + 1) ≤ δ (n + 1) per group.
        budget = int(delta * (n + 1) + 1e-9) - (0 if self.per_group else 1)
        if budget < 0 or n + 1 < 1 / delta:
            return {}
        names = sorted(groups)
        fee = 1 if self.per_group else 0
        options = {g: _options(groups[g], budget) for g in names}
        # best[b]: (points answered, thresholds) spending b of the budget over the groups so far.
        best: list[tuple[int, dict[str, float | None]]] = [(0, {})] + [(-1, {})] * budget
        for g in names:
            nxt = [(v, dict(t)) for v, t in best]
            for b, (value, taken) in enumerate(best):
                if value < 0:
                    continue
                for c, (gain, tau) in enumerate(options[g]):
                    cost = b + c + fee
                    if tau is None or cost > budget:
                        continue
                    if value + gain > nxt[cost][0]:
                        nxt[cost] = (value + gain, {**taken, g: tau})
            best = nxt
        return max(best, key=lambda p: p[0])[1]


@dataclass
class FineRoute:
    """`routefine`: the route decided over the requests' final decisions (domain/intent, or out of scope) instead of
    their domains — each domain's evidence is its best intent's, so a domain made of several intents is not one
    blurred centroid. The route's examples, each labelled with where its request ended."""

    vectors: list[object] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    _built: tuple[object, list[str]] | None = None

    def add(self, vector: object, label: str) -> None:
        self.vectors.append(vector)
        self.labels.append(label)
        self._built = None

    def guess(self, q: object, density: float, route_of: dict[str, str]) -> tuple[str, float, float] | None:
        """(the route trigger, its score on the head's scale, the nearest example's similarity), or None."""
        import numpy as np
        from seams import Head

        if self._built is None:
            names = sorted(set(self.labels))
            codes = np.asarray([names.index(x) for x in self.labels])
            self._built = (Head.build(np.vstack(self.vectors), codes), names)
        head, names = self._built
        assert isinstance(head, Head)
        if head.present.size < 2:
            return None
        sims = np.einsum("ij,j->i", head.matrix, q)
        nearest = np.full(head.labels, -2.0)
        nearest[head.present] = np.maximum.reduceat(sims, head.starts[head.present])
        evidence = np.where(nearest > -2.0, 0.5 * (head.centroids @ q) + 0.5 * nearest, -2.0)
        best: dict[str, tuple[float, float]] = {}
        for code in head.present:
            route = route_of[names[int(code)]]
            if route not in best or evidence[code] > best[route][0]:
                best[route] = (float(evidence[code]), float(nearest[code]))
        if len(best) < 2:
            return None
        ranked = sorted(best, key=lambda r: -best[r][0])
        top, second = ranked[0], ranked[1]
        return top, best[top][0] - best[second][0] + density * best[top][1], float(sims.max())


def loo_points(matrix: Any, labels: list[str], density: float, far: float) -> list[tuple[float, bool]]:
    """`loo`: every example scored by today's head without itself (its score, and whether the head's guess was not
    its decision), in example order; an example far from all the others, or alone with its decision's label among
    fewer than two others, is no point (as a task with no guess)."""
    import numpy as np

    n = len(labels)
    names = sorted(set(labels))
    if n < 3 or len(names) < 2:
        return []
    codes = np.asarray([names.index(x) for x in labels])
    m = np.asarray(matrix, dtype=np.float32)
    sims = m @ m.T
    np.fill_diagonal(sims, -2.0)
    near = np.full((n, len(names)), -2.0, dtype=np.float32)
    cent = np.full((n, len(names)), -2.0, dtype=np.float32)
    for code in range(len(names)):
        own = codes == code
        total = m[own].sum(0)
        dots = m @ total
        # Its own rows leave themselves out of the centroid: (sum − x), renormalised.
        dots_out = np.where(own, dots - 1.0, dots)
        sq = float(total @ total)
        norms = np.sqrt(np.maximum(np.where(own, sq - 2 * dots + 1.0, sq), 1e-12))
        has = np.where(own, own.sum() > 1, True)
        cent[:, code] = np.where(has, dots_out / norms, -2.0)
        near[:, code] = np.where(has, sims[:, own].max(1), -2.0)
    evidence = np.where(near > -2.0, 0.5 * cent + 0.5 * near, -2.0)
    order = np.argsort(-evidence, axis=1)
    top, second = order[:, 0], order[:, 1]
    rows = np.arange(n)
    score = evidence[rows, top] - evidence[rows, second] + density * near[rows, top]
    ok = (evidence[rows, second] > -2.0) & (sims.max(1) >= far)
    return [(float(score[i]), bool(top[i] != codes[i])) for i in range(n) if ok[i]]


def loo_calibration(states: dict[str, Any], window: float, density: float, far: float) -> Calibration:
    """A calibration made of every state's examples scored leave-one-out by today's head (see `loo_points`)."""
    out = Calibration(window)
    for state, memory in sorted(states.items()):
        examples = memory.examples
        for score, wrong in loo_points(memory.matrix(384), [e.trigger for e in examples], density, far):
            out.add(state, score, wrong)
    return out
