"""One procedure per path, not per wording: a learning run that took a stored procedure's path (its decisions, states
and argument templates: `decision_signature`) in other words was credited to it by the store; here its wording becomes
that procedure's alias, carrying the run as its source (`run:<run_id>`). The alias lets that wording be matched next
time; it lowers no bar for other wordings near it: no judge said what it means, so it matches its own wording only
(`AliasRow.exact_only`), never vouches for a wording close to it (skills/match/vouch.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from ...errors import SherpaError
from ..match.wording import wording_key
from ..store.answers import RUN_PREFIX, Answers, WordingAnswer
from ..store.models import CapturedProcedure

if TYPE_CHECKING:
    from .learning import Learner

log = structlog.get_logger(__name__)


def run_source(run_id: str) -> str:
    """How an alias names the run its wording came from."""
    return f"{RUN_PREFIX}{run_id}"


def alias_from_run(learner: Learner, proc: CapturedProcedure, text: str, run_id: str) -> WordingAnswer | None:
    """`text` (the run's task, described as procedures are) as an alias of `proc`, whose path the run took and whose
    success count it was credited to; None where it says what the description says, or its literals disagree with
    the procedure (the credit stands: the decisions were the same)."""
    if wording_key(text) == wording_key(proc.description):
        return None
    source = run_source(run_id)
    try:
        alias = learner.matcher.confirm(text, proc.id, task_type=proc.task_type, by=source)
    except SherpaError as exc:
        log.info("run_alias_refused", procedure=proc.id, run_id=run_id, reason=str(exc))
        return None
    if alias.by != source:
        return alias  # a judge's or person's wording already: this run did not bring it, so it is not its source
    return Answers(learner.store).set_source(alias.id, source)


def judged_from_run(learner: Learner, alias: WordingAnswer, run_id: str) -> WordingAnswer:
    """A judge's confirmation asked during a run: the alias names that run as where its wording came from."""
    return Answers(learner.store).set_source(alias.id, run_source(run_id))
