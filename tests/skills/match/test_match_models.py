"""The matcher's answer as data: one meaning per name, so its outcome is never mistaken for a policy's Decision."""

from __future__ import annotations

from typing import get_args

import pytest
from pydantic import ValidationError

from sherpa_skills.policy.base import Decision
from sherpa_skills.skills.match import models


def test_the_outcome_of_a_match_has_a_name_of_its_own() -> None:
    """`Decision` is the policy's public class; the matcher's three outcomes are `MatchOutcome`, and nothing in the
    matcher's models is called `Decision` beside it."""
    assert not hasattr(models, "Decision")
    assert get_args(models.MatchOutcome) == ("match", "needs-confirmation", "no-match")
    assert models.MatchDecision.model_fields["decision"].annotation == models.MatchOutcome
    assert models.MatchOutcome is not Decision


def test_an_outcome_outside_the_three_is_refused() -> None:
    """A decision that is not one of the three outcomes names the field."""
    with pytest.raises(ValidationError, match="decision"):
        models.MatchDecision(query="task", decision="maybe")  # type: ignore[arg-type]
