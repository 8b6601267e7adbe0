"""Round 5's candidate scores for `decision_head_sim.py --hindsight` (SIM_ROUND5=1), issue 36: a softmax regression
per state beside the shipped head, and penalties for decisions seen confused before. Each sees only the decisions
before the one it scores, as the hindsight loop's head does.

- `base + a lrp(head)`: the shipped score plus `a` times the regression's probability of the head's guess.
- `base if agree`: the shipped score where the regression's guess is the head's, else one less.
- `pair λ`: the shipped score less λ where the head's guess and its runner-up were confused before (either way).
- `touch λ`: less λ where the guess was ever part of a confusion; `rate λ`: less λ × its confusions / (guesses + 2).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

#: The regression's logit scale (cosines are small), L2 weight, gradient steps, and how many new examples of a state
#: between two refits.
TEMP = float(os.environ.get("SIM_LR_TEMP", "20"))
L2 = float(os.environ.get("SIM_LR_L2", "1e-3"))
STEPS = int(os.environ.get("SIM_LR_STEPS", "150"))
EVERY = int(os.environ.get("SIM_LR_EVERY", "25"))
KEYS = ["base + 0.5 lrp(head)", "base + 1.0 lrp(head)", "base if agree", "lr p"] + [
    f"{kind} {lam}" for kind in ("pair", "touch", "rate") for lam in (0.1, 0.2, 0.4)
]


def fit(x: Any, y: Any, classes: int) -> Any:
    """Softmax regression on unit vectors by full-batch gradient descent: weights (dim + 1) × classes."""
    import numpy as np

    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1), np.float32)])
    target = np.zeros((n, classes), np.float32)
    target[np.arange(n), y] = 1
    w = np.zeros((d + 1, classes), np.float32)
    for _ in range(STEPS):
        z = TEMP * (xb @ w)
        z -= z.max(1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(1, keepdims=True)
        w -= (2.0 / TEMP) * (TEMP * xb.T @ (p - target) / n + L2 * w)
    return w


@dataclass
class Round5:
    """What the round-5 scores remember: each state's regression, and the confusions seen."""

    models: dict[str, tuple[Any, list[str]]] = field(default_factory=dict)
    pairs: set[tuple[str, frozenset[str]]] = field(default_factory=set)
    touched: dict[tuple[str, str], int] = field(default_factory=dict)
    guessed: dict[tuple[str, str], int] = field(default_factory=dict)

    def scores(self, where: str, q: Any, base: float, top: str, second: str, truth: str) -> tuple[dict, dict]:
        """The candidate scores of one decision, and whether each one's guess is right."""
        import numpy as np

        scores: dict[str, float] = {}
        right = top == truth
        ok = dict.fromkeys(KEYS, right)
        model = self.models.get(where)
        if model is None:
            scores.update(dict.fromkeys(KEYS[:4], -9.0))
        else:
            w, names = model
            z = TEMP * (np.append(q, 1.0) @ w)
            p = np.exp(z - z.max())
            p /= p.sum()
            lr_guess = names[int(p.argmax())]
            p_head = float(p[names.index(top)]) if top in names else 0.0
            for a in (0.5, 1.0):
                scores[f"base + {a} lrp(head)"] = base + a * p_head
            scores["base if agree"] = base if lr_guess == top else base - 1
            scores["lr p"], ok["lr p"] = float(p.max()), lr_guess == truth
        paired = (where, frozenset((top, second))) in self.pairs
        touched, guessed = self.touched.get((where, top), 0), self.guessed.get((where, top), 0)
        for lam in (0.1, 0.2, 0.4):
            scores[f"pair {lam}"] = base - lam * paired
            scores[f"touch {lam}"] = base - lam * (touched > 0)
            scores[f"rate {lam}"] = base - lam * touched / (guessed + 2)
        self.guessed[(where, top)] = guessed + 1
        if not right:
            self.pairs.add((where, frozenset((top, truth))))
            self.touched[(where, top)] = touched + 1
            self.touched[(where, truth)] = self.touched.get((where, truth), 0) + 1
        return scores, ok

    def learned(self, where: str, rows: list[Any], labels: list[str]) -> None:
        """A state gained an example: refit its regression every `EVERY` examples."""
        import numpy as np

        if len(set(labels)) < 2 or len(labels) % EVERY:
            return
        names = sorted(set(labels))
        index = {n: i for i, n in enumerate(names)}
        self.models[where] = (fit(np.vstack(rows), np.asarray([index[x] for x in labels]), len(names)), names)
