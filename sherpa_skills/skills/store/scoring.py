"""Confidence and health: pure functions of a procedure's counts and recent executions.

Confidence is the success rate shrunk by 0.4 of an observation, `s / (s + f + 0.4)`. Replay is offered at
confidence 0.8 and above (REPLAY_THRESHOLD; terraphim offers replay above 0.8), so one success is not proof:
a procedure seen succeeding once scores 0.71 and needs a second success (0.83) or `learn promote`; ten
successes score 0.96. It never reaches 1, and every failure costs more than a success earns while evidence
is thin (two successes and one failure: 0.59).

Health is the success rate over the last HEALTH_WINDOW real executions since the procedure was captured or last
promoted (a promotion opens a fresh evidence window; earlier executions are kept, not counted). It needs evidence:
`new` until the procedure has run, and `degraded` or `broken` only once MIN_EVIDENCE executions count; with fewer,
a procedure is `healthy`, whatever they show. `replay_refusal` is the one gate: matching, replay and promote ask it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from .models import CapturedProcedure, Execution, HealthStatus, ProcedureHealthReport

SHRINK = 0.4
REPLAY_THRESHOLD = 0.8
HEALTH_WINDOW = 10
HEALTHY_ABOVE = 0.8
BROKEN_BELOW = 0.5
#: Three is the fewest executions in which a rate under 0.5 takes two failures: one flaky run (a network blip, a busy
#: disk) neither pulls a procedure from replay nor marks it degraded; from three on, the window's rate decides.
MIN_EVIDENCE = 3
#: Statuses that take a procedure out of replay.
PULLED: tuple[HealthStatus, ...] = ("broken", "needs-relearning")


def confidence(success_count: int, failure_count: int) -> float:
    total = success_count + failure_count
    if total <= 0:
        return 0.0
    return round(success_count / (total + SHRINK), 4)


def health_status(rate: float | None, needs_relearning: bool = False, counted: int | None = None) -> HealthStatus:
    """New when nothing counts yet; healthy > 0.8, degraded 0.5–0.8, broken < 0.5 once `counted` reaches MIN_EVIDENCE
    (healthy before; `counted` None: enough); marked for re-capture (by the heartbeat, once broken) is needs-relearning
    until a new version or a promotion."""
    if needs_relearning:
        return "needs-relearning"
    if rate is None or counted == 0:
        return "new"
    if counted is not None and counted < MIN_EVIDENCE:
        return "healthy"
    if rate < BROKEN_BELOW:
        return "broken"
    return "healthy" if rate > HEALTHY_ABOVE else "degraded"


_VOLATILE = re.compile(r"\b\d+(\.\d+)?\b|0x[0-9a-f]+|/tmp/\S+|\b[0-9a-f]{7,40}\b", re.IGNORECASE)


def failure_pattern(reasons: Sequence[str]) -> str | None:
    """The reason most recent failures share, with numbers, hashes and temp paths folded so they compare."""
    if not reasons:
        return None
    folded = Counter(_VOLATILE.sub("#", r.strip().splitlines()[0] if r.strip() else "")[:200] for r in reasons)
    pattern, count = folded.most_common(1)[0]
    return pattern if pattern and (count >= 2 or len(reasons) == 1) else None


def health_report(
    procedure_id: str,
    executions: Sequence[Execution],
    needs_relearning: bool = False,
    window: int = HEALTH_WINDOW,
    evidence_since: float | None = None,
) -> ProcedureHealthReport:
    """From the executions in the procedure's evidence window (since capture or its last promotion), newest first;
    dry runs and branches (an exception handled another way) are excluded. The one place a status is computed: the
    CLI, the heartbeat and the browser view read it."""
    real = [e for e in executions if e.outcome not in ("dry-run", "branch")]
    recent = real[:window]
    rate = sum(e.outcome == "success" for e in recent) / len(recent) if recent else None
    failures = [e for e in recent if e.outcome != "success"]
    last_failure = max((e.ended for e in real if e.outcome != "success"), default=None)
    return ProcedureHealthReport(
        procedure_id=procedure_id,
        status=health_status(rate, needs_relearning, len(recent)),
        rolling_success_rate=None if rate is None else round(rate, 4),
        total_executions=len(real),
        counted_executions=len(recent),
        min_evidence=MIN_EVIDENCE,
        evidence_since=evidence_since,
        last_failure=last_failure,
        failure_pattern=failure_pattern([e.reason or "" for e in failures]),
        window=window,
    )


def replay_refusal(
    proc: CapturedProcedure, health: ProcedureHealthReport | None, threshold: float = REPLAY_THRESHOLD
) -> str | None:
    """Why `proc` may not be replayed now, or None when it may: the gate matching, replay and `learn promote` share,
    so none of them can say yes where another says no. `health` None skips the health check."""
    if proc.status == "rejected":
        return "rejected: a person said no, so it is never replayed (`learn promote` takes it back)"
    if health is not None and health.status in PULLED:
        return (
            f"{health.status} (rolling success {health.rolling_success_rate} over "
            f"{health.counted_executions} executions; `learn promote` starts a fresh evidence window)"
        )
    if proc.confidence < threshold:
        return (
            f"confidence {proc.confidence:.2f} < {threshold:.2f}: not yet proven "
            "(a second success or `learn promote` makes it replayable)"
        )
    return None
