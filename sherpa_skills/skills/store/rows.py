"""How procedures and learnings are kept as rows: the columns read, JSON as stored, and the models read back."""

from __future__ import annotations

import json
from typing import Any

from .models import (
    STORED,
    CapturedLearning,
    CapturedProcedure,
    ProcedureStep,
    RecordedDecision,
)
from .scoring import confidence


def _dump(value: Any, sort_keys: bool = False) -> str:
    return json.dumps(value, separators=(",", ":"), default=str, sort_keys=sort_keys)


_PROC_COLUMNS = (
    "id, task_type, description, source, tags, version, status, needs_relearning, success_count, failure_count, "
    "steps, preconditions, postconditions, context, planned_tokens, planned_llm_calls, created, "
    "updated, kind, decisions, claimed_successes, claimed_failures, legacy_successes, legacy_failures, proven"
)


def _procedure(row: tuple[Any, ...]) -> CapturedProcedure:
    (
        pid,
        task_type,
        description,
        source,
        tags,
        version,
        status,
        needs,
        s,
        f,
        steps,
        pre,
        post,
        ctx,
        ptok,
        pcalls,
        created,
        updated,
        kind,
        decisions,
        claimed_s,
        claimed_f,
        legacy_s,
        legacy_f,
        proven,
    ) = row
    return CapturedProcedure(
        id=pid,
        task_type=task_type,
        description=description,
        source=source,
        tags=json.loads(tags),
        version=version,
        status=status,
        needs_relearning=bool(needs),
        success_count=s,
        failure_count=f,
        confidence=confidence(s, f),
        steps=[ProcedureStep.model_validate(x, context=STORED) for x in json.loads(steps)],
        preconditions=json.loads(pre),
        postconditions=json.loads(post),
        context=json.loads(ctx),
        planned_tokens=ptok,
        planned_llm_calls=pcalls,
        created=created,
        updated=updated,
        kind=kind,
        decisions=[RecordedDecision(**d) for d in json.loads(decisions)],
        claimed_successes=claimed_s,
        claimed_failures=claimed_f,
        legacy_successes=legacy_s,
        legacy_failures=legacy_f,
        proven=bool(proven),
    )


_LEARNING_COLUMNS = "id, task_type, procedure_id, command, error, exit_code, source, created, seen, last_seen, about"


def _learning(r: tuple[Any, ...]) -> CapturedLearning:
    return CapturedLearning(
        id=r[0],
        task_type=r[1],
        procedure_id=r[2],
        command=r[3],
        error=r[4],
        exit_code=r[5],
        source=r[6],
        created=r[7],
        seen=r[8],
        last_seen=r[9],
        about=r[10],
    )
