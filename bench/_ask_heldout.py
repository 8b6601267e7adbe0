"""Held-out fitting for bench/match_ask_bench.py: every setting is fitted on one half of the dev data and reported on
the other, so the figures are not the ones the settings were chosen on.

- NL2Bash: the relevance model, its floor and margin (bench/match_calibrate.py's fit) and the ask band's settings are
  fitted on one half of the split (a command's paraphrases stay in one half) and the other half is decided again with
  them, through `Matcher._decide` itself.
- Routines: the alias rule's settings (`skills/match/vouch.py`) are chosen on a grid, on the routines of one half (a
  routine's near miss goes with it; unrelated asks by a hash of their text), and reported on the other half.
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import replace
from typing import Any

import match_calibrate as mc

# The ask floor finely below 0.1: the negatives asked grow fast there, and 25 % of them is the budget.
ASK_GRID = {
    "ask_floor": (0.05, 0.06, 0.07, 0.08, 0.1, 0.2, 0.3),
    "ask_semantic": (0.35, 0.45, 1.01),
    "ask_gap": (0.1, 0.15),
}
ALIAS_GRID = {
    "alias_floor": (0.3, 0.35, 0.4, 0.45, 0.5),
    "alias_described": (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5),  # only up to alias_floor (`alias_points`)
    "alias_gap": (0.05, 0.1, 0.15),
    "alias_words": (0.25, 0.34, 0.5),
}
ASKED_NEGATIVES = 0.25  # the bound on negatives asked about
WRONG = 0.01  # the bound (counted without positives word for word another description)
FALSE = mc.FALSE_FIT  # fitted under the 3 %: what a floor lets through moves between halves


def half_of(text: str) -> int:
    return int(hashlib.sha256(("ask-bench:" + text).encode()).hexdigest(), 16) % 2


def grid(settings: dict[str, tuple[float, ...]]) -> list[dict[str, float]]:
    return [dict(zip(settings, values, strict=True)) for values in itertools.product(*settings.values())]


# ---------------------------------------------------------------- NL2Bash


def rows_of(kept: list[tuple[Any, str | None, bool, int]]) -> list[dict[str, Any]]:
    """Per query, in bench/match_calibrate.py's form: agreeing candidates' features, exact or not, and the gold id."""
    from seams import FEATURES

    return [
        {
            "gold": gold,
            "same": same,
            "fold": fold,
            "cands": [
                (c.procedure_id, [c.features[f] for f in FEATURES], c.semantic == 1.0)
                for c in d.candidates
                if not c.literals_disagreed and c.semantic is not None
            ],
        }
        for d, gold, same, fold in kept
    ]


def redecide(matcher: Any, decision: Any, model: Any) -> Any:
    """The decision `matcher` would take with `model` (relevance, floor, margin, ask band) for the same candidates."""
    candidates = [c.model_copy(deep=True, update={"reason": None}) for c in decision.candidates]
    for c in candidates:
        if c.semantic is not None and c.semantic != 1.0:  # exact rules score 1.0 whatever the model
            c.score = round(model(c.features), 4)
    candidates.sort(key=lambda c: (-c.score, -c.terms, c.procedure_id))
    matcher.model, matcher.margin, matcher.floor = model, model.margin, model.floor
    base = {
        "query": decision.query,
        "task_type": None,
        "floor": model.floor,
        "margin": model.margin,
        "min_confidence": decision.min_confidence,
    }
    return matcher._decide(base, candidates[:5], {}, decision.min_confidence, False, decision.mode, decision.degraded)


def answers(matcher: Any, kept: list[tuple[Any, str | None, bool, int]], model: Any, fold: int) -> dict[str, list]:
    """Positives' and negatives' answers (match_ask_bench.answer's words) in one half, decided with `model`. A
    positive word for word another stored command's description is marked: no matcher that reads only the task can
    pick its own command over that one (the same holds for such negatives, which are left out)."""
    from match_ask_bench import answer

    out: dict[str, list[str]] = {"pos": [], "neg": []}
    for d, gold, same, f in kept:
        if f != fold or (gold is None and same):
            continue
        said = answer(redecide(matcher, d, model), gold)
        out["pos" if gold else "neg"].append(said + (" (same text)" if gold and same else ""))
    return out


def figures(a: dict[str, list[str]]) -> dict[str, float]:
    pos, neg = a["pos"], a["neg"]
    distinct = [x for x in pos if not x.endswith(" (same text)")]
    pos = [x.removesuffix(" (same text)") for x in pos]
    return {
        "hit": pos.count("replayed") / len(pos),
        "wrong": pos.count("wrong") / len(pos),
        "wrong_distinct": distinct.count("wrong") / len(distinct),
        "false": sum(x in ("replayed", "wrong") for x in neg) / len(neg),
        "coverage": sum(x in ("replayed", "offered") for x in pos) / len(pos),
        "asked": sum(x != "none" for x in neg) / len(neg),
    }


def fit_half(
    matcher: Any, kept: list[tuple[Any, str | None, bool, int]], fold: int, wrong: float = WRONG
) -> tuple[Any, dict[str, float]]:
    """The relevance model, floor and margin (wrong ≤ `wrong` leaving out positives word for word another stored
    description, false ≤ 2 %) and the ask band (the most coverage
    asking about at most 25 % of negatives; else the fewest negatives asked) fitted on half `fold`."""
    from seams import FEATURES, default_model, from_dict

    rows = [r for r in rows_of(kept) if r["fold"] == fold]
    fitted = mc.fit(rows)
    best = None
    sc = mc.scored(fitted, rows)
    distinct = [(p, r) for p, r in sc if not (r["gold"] and r["same"])]  # see `answers`
    for margin in mc.MARGINS:
        for floor in sorted({round(p, 3) for probs, _ in sc for _, p in probs[:1] if p >= 0.05}):
            r = mc.rates(sc, floor, margin)
            r["wrong"] = mc.rates(distinct, floor, margin)["wrong"]
            if r["wrong"] <= wrong and r["false"] <= FALSE and (best is None or r["hit"] > best[2]["hit"]):
                best = (floor, margin, r)
    floor, margin = (best[0], best[1]) if best else (0.99, 0.005)
    model = replace(
        from_dict({"features": list(FEATURES), **fitted, "floor": floor, "margin": margin}),
        **{k: getattr(default_model(), k) for k in ("wording_gap", "alias_floor", "alias_gap", "alias_words")},
    )
    chosen: tuple[tuple[float, float], Any, dict[str, float]] | None = None
    for point in grid(ASK_GRID):
        candidate = replace(model, **point)
        f = figures(answers(matcher, kept, candidate, fold))
        key = (f["coverage"], -f["asked"]) if f["asked"] <= ASKED_NEGATIVES else (-1.0, -f["asked"])
        if chosen is None or key > chosen[0]:
            chosen = (key, candidate, f)
    assert chosen is not None
    return chosen[1], chosen[2]


def nl2bash_heldout(matcher: Any, kept: list[tuple[Any, str | None, bool, int]]) -> list[dict[str, Any]]:
    """Per half: the settings fitted on it (wrong ≤ 1 %, false ≤ 2 %), figures on it and on the other half."""
    out = []
    for fit_on in (0, 1):
        model, on_fit = fit_half(matcher, kept, fit_on, WRONG)
        out.append(
            {
                "fit": fit_on,
                "wrong_bound": WRONG,
                "model": model,
                "on_fit": on_fit,
                "held_out": figures(answers(matcher, kept, model, 1 - fit_on)),
            }
        )
    return out


# ---------------------------------------------------------------- routines


def alias_fit(results: dict[str, dict[str, list[tuple[int, str, str]]]], halves: set[int]) -> dict[str, Any]:
    """The alias settings with the most other wordings replayed directly (both directions) on `halves`, with no wrong
    procedure and no near miss or unrelated ask replayed; ties go to the strictest (higher floor and gap, fewer
    repeated words, a higher floor for the description). `results[point][direction]` is [(half, kind, answer)]."""
    best: tuple[tuple[float, ...], str] | None = None
    for point, by_direction in results.items():
        rows = [x for rows in by_direction.values() for x in rows if x[0] in halves]
        replayed = sum(k == "gold" and a == "replayed" for _, k, a in rows)
        unsafe = sum(a == "wrong" or (k != "gold" and a == "replayed") for _, k, a in rows)
        if unsafe:
            continue
        p = point_of(point)
        key = (replayed, p["alias_floor"], p["alias_gap"], -p["alias_words"], p["alias_described"])
        if best is None or key > best[0]:
            best = (key, point)
    if best is None:
        raise SystemExit("no alias setting on the grid keeps near misses and wrong procedures at 0")
    return {"point": best[1], "replayed": best[0][0]}


def alias_points() -> list[dict[str, float]]:
    """The alias grid: the description's floor is never above the alias's (the alias is the closer telling)."""
    return [p for p in grid(ALIAS_GRID) if p["alias_described"] <= p["alias_floor"]]


def point_name(point: dict[str, float]) -> str:
    return "/".join(f"{point[k]:g}" for k in ALIAS_GRID)


def point_of(name: str) -> dict[str, float]:
    return dict(zip(ALIAS_GRID, (float(x) for x in name.split("/")), strict=True))
