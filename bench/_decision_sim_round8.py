"""Round 8's candidate scores for `decision_head_sim.py --hindsight` (SIM_ROUND8=1), issue 36: a second, lexical head
(hashed words, word pairs, character 4-grams: `decision_head_sim.lexical`) beside the shipped one, used as a vote
rather than mixed into the embedding (round 3 mixed it in). Each sees only the decisions before the one it scores.

- `base if lex agrees`: the shipped score where the lexical head's guess is the shipped head's, else one less.
- `base + a lexmargin`: the shipped score plus `a` times the lexical head's margin for the shipped head's guess
  (negative where the lexical head prefers another decision).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

KEYS = ["base if lex agrees"] + [f"base + {a} lexmargin" for a in (0.5, 1.0, 2.0)]


@dataclass
class Round8:
    rows: dict[str, tuple[list[Any], list[str]]] = field(default_factory=dict)

    def scores(self, where: str, lex: Any, base: float, top: str, truth: str) -> tuple[dict, dict]:
        import numpy as np

        right = top == truth
        ok = dict.fromkeys(KEYS, right)
        rows, labels = self.rows.get(where, ([], []))
        if len(set(labels)) < 2:
            return dict.fromkeys(KEYS, base - 1), ok
        m, lab = np.vstack(rows), np.asarray(labels)
        sims = m @ lex
        names = sorted(set(labels))
        cent = []
        for n in names:
            s = m[lab == n].sum(0)
            cent.append(float((s / (np.linalg.norm(s) or 1)) @ lex))
        near = [float(sims[lab == n].max()) for n in names]
        evidence = 0.5 * np.asarray(cent) + 0.5 * np.asarray(near)
        guess = names[int(evidence.argmax())]
        mine = float(evidence[names.index(top)]) if top in names else 0.0
        others = [float(e) for n, e in zip(names, evidence, strict=True) if n != top]
        lexmargin = mine - max(others)
        out = {"base if lex agrees": base if guess == top else base - 1}
        for a in (0.5, 1.0, 2.0):
            out[f"base + {a} lexmargin"] = base + a * lexmargin
        return out, ok

    def learned(self, where: str, lex: Any, label: str) -> None:
        rows, labels = self.rows.setdefault(where, ([], []))
        rows.append(lex)
        labels.append(label)
