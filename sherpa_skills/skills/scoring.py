"""Confidence and health: pure functions of a procedure's counts and recent executions.

Confidence is the success rate shrunk by 0.4 of an observation, `s / (s + f + 0.4)`. Replay is offered at
confidence 0.8 and above (REPLAY_THRESHOLD; terraphim offers replay above 0.8), so one success is not proof:
a procedure seen succeeding once scores 0.71 and needs a second success (0.83) or `learn promote`; ten
successes score 0.96. It never reaches 1, and every failure costs more than a success earns while evidence
is thin (two successes and one failure: 0.59).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Sequence

from .models import Execution, HealthStatus, ProcedureHealthReport

SHRINK = 0.4
REPLAY_THRESHOLD = 0.8
HEALTH_WINDOW = 10
HEALTHY_ABOVE = 0.8
BROKEN_BELOW = 0.5


def confidence(success_count: int, failure_count: int) -> float:
    total = success_count + failure_count
    if total <= 0:
        return 0.0
    return round(success_count / (total + SHRINK), 4)


def health_status(rate: float | None, needs_relearning: bool = False) -> HealthStatus:
    """Healthy > 0.8, degraded 0.5–0.8, broken < 0.5; broken and marked for re-capture is needs-relearning."""
    if rate is None:
        return "needs-relearning" if needs_relearning else "healthy"
    if rate < BROKEN_BELOW:
        return "needs-relearning" if needs_relearning else "broken"
    if needs_relearning:
        return "needs-relearning"
    return "healthy" if rate > HEALTHY_ABOVE else "degraded"


_VOLATILE = re.compile(r"\b\d+(\.\d+)?\b|0x[0-9a-f]+|/tmp/\S+|\b[0-9a-f]{7,40}\b", re.IGNORECASE)


def failure_pattern(reasons: Sequence[str]) -> str | None:
    """The reason most recent failures share, with numbers, hashes and temp paths folded so they compare."""
    if not reasons:
        return None
    folded = Counter(_VOLATILE.sub("#", r.strip().splitlines()[0] if r.strip() else "")[:200] for r in reasons)
    pattern, count = folded.most_common(1)[0]
    return pattern if pattern and (count >= 2 or len(reasons) == 1) else None


def health_report(procedure_id: str, executions: Sequence[Execution], needs_relearning: bool = False,
                  window: int = HEALTH_WINDOW) -> ProcedureHealthReport:
    """From the procedure's real executions (dry runs excluded), newest first."""
    real = [e for e in executions if e.outcome != "dry-run"]
    recent = real[:window]
    rate = sum(e.outcome == "success" for e in recent) / len(recent) if recent else None
    failures = [e for e in recent if e.outcome != "success"]
    last_failure = max((e.ended for e in real if e.outcome != "success"), default=None)
    return ProcedureHealthReport(
        procedure_id=procedure_id, status=health_status(rate, needs_relearning),
        rolling_success_rate=None if rate is None else round(rate, 4), total_executions=len(real),
        last_failure=last_failure, failure_pattern=failure_pattern([e.reason or "" for e in failures]), window=window)
