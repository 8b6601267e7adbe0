"""How sure the matcher is that a task is about a procedure: a small logistic model over the candidate's signals.

The signals (each with an absolute meaning, never normalised by the query's best):

- `semantic`: exact cosine between task and procedure (MiniLM);
- `terms`: share of the task's key-term weight (IDF) the procedure covers;
- `reverse`: share of the procedure description's key-term weight the task covers;
- `agreed`: literals the task states that the procedure has or takes as parameters, min(n, 3) / 3;
- `gap`: cosine minus the best cosine among the other candidates (a task close to two procedures is less sure);
- `length`: log(1 + key terms in the task);
- `unstated`: literals the description states that the task does not (`literals.unstated`), min(n, 3) / 3 — a near
  twin changes or drops one ("under /tmp" for "under /var") while its meaning stays close.
- `verbatim`: the longest run of words the task and the description say alike, in order, as a share of the shorter
  (`wording.verbatim`) — two descriptions written from the same words share a long run, two people describing the
  same work seldom do;
- `twin`: `verbatim` times the key words only one of them says, min(n, 3) / 3 — the same words around a changed one
  ("not newer than" for "newer than", "accessed" for "modified") is what a near twin looks like.

relevance = 1 / (1 + exp(-(bias + Σ weight·(x - mean) / scale))), in [0, 1]. The coefficients, the floor, the
margin and the ask band's settings are data (`relevance.json` beside this module), fitted on the NL2Bash dev split
by `bench/match_calibrate.py`, which also reports them cross-validated on halves of the split; the ask band's and
the alias rule's (`vouch`) by `bench/match_ask_bench.py`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

MODEL_FILE = Path(__file__).with_name("relevance.json")
FEATURES = ("semantic", "terms", "reverse", "agreed", "gap", "length", "unstated", "verbatim", "twin")
SETTINGS = (
    "ask_floor",
    "ask_semantic",
    "ask_gap",
    "wording_gap",
    "alias_floor",
    "alias_described",
    "alias_gap",
    "alias_words",
    "bound",
)


@dataclass(frozen=True)
class RelevanceModel:
    """Coefficients over FEATURES plus the decision settings calibrated with them."""

    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    floor: float
    margin: float
    ask_floor: float = 0.1  # the best candidate's relevance from which the judge at hand is asked
    ask_semantic: float = 0.35  # ... or a candidate's cosine, when it stands clear of the rest by ask_gap
    ask_gap: float = 0.1
    wording_gap: float = 0.15  # a task saying what a description says is sure only this far above the rest
    alias_floor: float = 0.35  # what a confirmed wording vouches for (`vouch`): the alias's cosine reaches this,
    alias_described: float = 0.35  # ... the description's this,
    alias_gap: float = 0.05  # ... this far above every other candidate,
    alias_words: float = 0.34  # ... repeating at most this share of the description's or an alias's key words
    bound: float = 0.02  # a store's own floor (`floor`): at most this share of asked tasks would replay wrongly

    def __call__(self, features: dict[str, float]) -> float:
        z = self.bias + sum(
            w * (features[f] - m) / s for f, m, s, w in zip(FEATURES, self.mean, self.scale, self.weights, strict=True)
        )
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


def from_dict(data: dict) -> RelevanceModel:
    """A model from its JSON form; the feature names must be FEATURES, in order."""
    if tuple(data.get("features", ())) != FEATURES:
        raise ValueError(f"relevance model features {data.get('features')} are not {list(FEATURES)}")
    return RelevanceModel(
        tuple(data["mean"]),
        tuple(data["scale"]),
        tuple(data["weights"]),
        float(data["bias"]),
        float(data["floor"]),
        float(data["margin"]),
        **{k: float(data[k]) for k in SETTINGS if k in data},
    )


@lru_cache(maxsize=1)
def default_model() -> RelevanceModel:
    return from_dict(json.loads(MODEL_FILE.read_text(encoding="utf-8")))


def length_feature(key_terms: int) -> float:
    return math.log1p(key_terms)
