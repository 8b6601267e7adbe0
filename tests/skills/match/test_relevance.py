"""The relevance model: shipped coefficients load, mean what they say, and a malformed model file is refused."""

from __future__ import annotations

import json

import pytest

from sherpa_skills.skills.match.models import MARGIN, RELEVANCE_FLOOR
from sherpa_skills.skills.match.relevance import FEATURES, MODEL_FILE, default_model, from_dict
from sherpa_skills.skills.match.wording import spoken, verbatim

TYPICAL = {
    "semantic": 0.8,
    "terms": 0.6,
    "reverse": 0.6,
    "agreed": 0.0,
    "gap": 0.2,
    "length": 2.0,
    "unstated": 0.0,
    "verbatim": 0.3,
    "twin": 0.1,
}


def test_the_shipped_model_sets_floor_margin_and_the_ask_band() -> None:
    model = default_model()
    assert (RELEVANCE_FLOOR, MARGIN) == (model.floor, model.margin)
    assert 0 < model.ask_floor < RELEVANCE_FLOOR < 1 and 0 < MARGIN < 0.2
    assert 0 < model.ask_semantic < 1 and 0 < model.ask_gap < 1 and 0 < model.wording_gap < 1


def test_relevance_is_a_probability_that_grows_with_the_cosine_and_the_gap() -> None:
    model = default_model()
    low, high = model({**TYPICAL, "semantic": 0.6}), model({**TYPICAL, "semantic": 0.95})
    assert 0 <= low < high <= 1
    assert model({**TYPICAL, "gap": 0.0}) < model({**TYPICAL, "gap": 0.3})


def test_a_description_literal_the_task_leaves_unsaid_lowers_relevance() -> None:
    model = default_model()
    assert model({**TYPICAL, "unstated": 1 / 3}) < model(TYPICAL)


def test_the_same_words_around_a_changed_one_lower_relevance() -> None:
    """A near twin written from the description's words (a long verbatim run) that changes a key word."""
    model = default_model()
    assert model({**TYPICAL, "verbatim": 0.9, "twin": 0.6}) < model(TYPICAL)


def test_a_model_for_other_features_is_refused() -> None:
    data = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
    assert tuple(data["features"]) == FEATURES
    with pytest.raises(ValueError, match="features"):
        from_dict({**data, "features": ["semantic", "bm25"]})
    with pytest.raises(KeyError):
        from_dict({k: v for k, v in data.items() if k != "bias"})


def test_verbatim_is_the_longest_shared_run_of_words_over_the_shorter_text() -> None:
    described = spoken("Search for all files newer than file /tmp/t")
    assert verbatim(spoken("Search for all files not newer than file /tmp/t"), described) == 5 / 9
    assert verbatim(spoken("list what changed after /tmp/t was written"), described) == 2 / 8
    assert verbatim(spoken("search for all files newer than file /tmp/t."), described) == 1.0
    assert verbatim([], described) == 0.0
