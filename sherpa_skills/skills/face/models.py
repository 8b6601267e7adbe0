"""The data types and constants callers of `SkillStore` see: procedures, steps, reports, and the rules' own words."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...db.procedure_text import fill_fts
from ..capture.from_session import Picked
from ..match.failures import FoundLearning, LearningsFound
from ..match.models import MatchDecision
from ..match.verifier import MODEL_ENV as VERIFY_MODEL_ENV
from ..run_removal import ACTIVE as ACTIVE_RUN_STATUSES
from ..run_removal import KeptRun, Removal
from ..store.answers import WordingAnswer
from ..store.migrations import MIGRATIONS
from ..store.models import (
    MAX_COMMAND_CHARS,
    CapturedLearning,
    CapturedProcedure,
    Execution,
    ProcedureHealthReport,
    ProcedureStep,
    StepsFile,
)
from ..store.params import PARAMETER
from ..store.scoring import RULE as REPLAY_RULE
from .transfer import Imported

__all__ = [
    "ACTIVE_RUN_STATUSES",
    "MAX_COMMAND_CHARS",
    "MIGRATIONS",
    "PARAMETER",
    "REPLAY_RULE",
    "VERIFY_MODEL_ENV",
    "CapturedLearning",
    "CapturedProcedure",
    "Execution",
    "FoundLearning",
    "Imported",
    "KeptRun",
    "LearningsFound",
    "MatchDecision",
    "Picked",
    "ProcedureHealthReport",
    "ProcedureShown",
    "ProcedureStep",
    "Removal",
    "WordingAnswer",
    "StepsFile",
    "fill_fts",
]


@dataclass
class ProcedureShown:
    """One procedure as `learn show` shows it: the procedure, its detail as plain data, its health, latest runs."""

    procedure: CapturedProcedure
    detail: dict[str, Any]
    health: ProcedureHealthReport
    executions: list[Execution]
