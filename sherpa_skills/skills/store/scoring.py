"""The replay gate: one rule decides a procedure's health and whether it may replay (docs: "The replay rule").

Evidence has a source. Only what this store observed counts: a person's capture (one success each) or promotion, a
replay it executed and validated, a learning run it recorded. What an agent reports, what session logs and live hooks
show, and what an import carries are claims (`Claim`): stored and shown, never counted.

1. A candidate (mined, captured by an agent, imported) or a rejected procedure never replays, whatever its counts.
2. Health is read from the counted executions of the current version since its capture or last promotion, the newest
   HEALTH_WINDOW of them: `new` until MIN_EVIDENCE (3) count — whatever they show, nothing is healthy without evidence —
   then `healthy` above 0.8, `degraded` from 0.5 to 0.8, `broken` under 0.5 or when the last MIN_EVIDENCE all failed
   (a procedure that keeps failing is pulled by its fourth replay, whatever its past). `needs-relearning` is broken and
   marked by the heartbeat for re-capture. Broken and needs-relearning never replay; `learn promote` opens a fresh
   evidence window.
3. It must be proven. Confidence is the counted success rate shrunk by 0.4 of an observation, `s / (s + f + 0.4)`:
   one success scores 0.71, two 0.83, ten 0.96. A version is proven once its confidence reaches 0.8 (REPLAY_THRESHOLD:
   a second success, another capture or a validated replay) or a person promotes it; from then on its health alone
   decides, so one failure (a missing folder) does not end replay — fix the cause and it replays again — while three
   in a row pull it (rule 2). Confidence gates only the proof: it is shown, and ranks.
   A caller may ask for a floor of its own (`--min-confidence`, `min_confidence`): then confidence must reach it,
   proven or not (0 accepts any procedure the other rules let through).

`replay_refusal` is that rule in code: matching, every replay door (CLI, Python, MCP, the view), promote and export ask
it, and each refusal says the real reason and what lifts it.
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
#: "Confidence has reached the threshold" in SQL over a row's counts (s / (s + f + SHRINK) >= REPLAY_THRESHOLD, the
#: division multiplied out): what marks a version proven as its counts change.
PROVEN_SQL = f"success_count >= {REPLAY_THRESHOLD / (1 - REPLAY_THRESHOLD):g} * (failure_count + {SHRINK})"
#: Statuses that take a procedure out of replay.
PULLED: tuple[HealthStatus, ...] = ("broken", "needs-relearning")

#: The rule as people read it: `learn health --help` prints it and docs/concepts/learning.md ("The replay rule") repeats
#: it (a test holds them to this text, and this text to the constants above).
RULE = f"""\
The replay rule (one rule decides health and replay):
  evidence   only what this store observed counts: a person's capture or
             promotion, a replay it executed and validated, a learning run
             it recorded; an agent's reports, session logs, live hooks and
             imports are claims, shown and never counted
  candidate  mined, captured by an agent, or imported: never replays,
             whatever its claims, until a person runs `learn promote ID`;
             rejected: never replays
  new        fewer than {MIN_EVIDENCE} counted executions since capture or the last
             promotion (nothing is healthy without evidence)
  healthy    rolling success over the last {HEALTH_WINDOW} counted executions > {HEALTHY_ABOVE:.0%}
  degraded   {BROKEN_BELOW:.0%} to {HEALTHY_ABOVE:.0%}: still replays, reported
  broken     under {BROKEN_BELOW:.0%}, or the last {MIN_EVIDENCE} failed in a row: pulled from
             replay until `learn promote ID` opens a fresh evidence window
  needs-relearning
             broken and marked by the heartbeat for re-capture: pulled
  proven     a version is proven once its confidence s / (s + f + {SHRINK})
             reaches {REPLAY_THRESHOLD} (a second success) or a person promotes it;
             unproven, it does not replay; proven, its health alone
             decides: one failure does not end its replay, {MIN_EVIDENCE} in a row
             do; --min-confidence sets a floor of your own
"""


def confidence(success_count: int, failure_count: int) -> float:
    total = success_count + failure_count
    if total <= 0:
        return 0.0
    return round(success_count / (total + SHRINK), 4)


def health_status(
    rate: float | None, needs_relearning: bool = False, counted: int | None = None, failing_streak: int = 0
) -> HealthStatus:
    """Rule 2 of the module's docstring: new below MIN_EVIDENCE counted executions (`counted` None: enough); then
    healthy > 0.8, degraded 0.5–0.8, broken < 0.5 or after MIN_EVIDENCE failures in a row; marked for re-capture (by
    the heartbeat, once broken) is needs-relearning until a new version or a promotion."""
    if needs_relearning:
        return "needs-relearning"
    if rate is None or counted == 0 or (counted is not None and counted < MIN_EVIDENCE):
        return "new"
    if rate < BROKEN_BELOW or failing_streak >= MIN_EVIDENCE:
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
    streak = next((i for i, e in enumerate(recent) if e.outcome == "success"), len(recent))
    last_failure = max((e.ended for e in real if e.outcome != "success"), default=None)
    return ProcedureHealthReport(
        procedure_id=procedure_id,
        status=health_status(rate, needs_relearning, len(recent), streak),
        rolling_success_rate=None if rate is None else round(rate, 4),
        total_executions=len(real),
        counted_executions=len(recent),
        min_evidence=MIN_EVIDENCE,
        evidence_since=evidence_since,
        last_failure=last_failure,
        failure_pattern=failure_pattern([e.reason or "" for e in failures]),
        window=window,
        failing_streak=streak,
    )


def replay_refusal(
    proc: CapturedProcedure, health: ProcedureHealthReport | None, threshold: float | None = None
) -> str | None:
    """Why `proc` may not be replayed now, or None when it may: the module's rule, which matching, replay, `learn
    promote` and export share, so none of them can say yes where another says no. `threshold` None is the rule's own
    (REPLAY_THRESHOLD until proven); a number is the caller's floor. `health` None skips the health check."""
    if proc.status == "candidate":
        claimed = (
            f" (its {proc.claimed_successes} claimed success{'es' if proc.claimed_successes != 1 else ''} do not count)"
            if proc.claimed_successes
            else ""
        )
        return (
            f"a candidate awaiting review{claimed}: what an agent captured, session logs showed or an import brought "
            "never runs until a person reads its steps (`learn candidates`) and promotes it (`learn promote ID`)"
        )
    if proc.status == "rejected":
        return "rejected: a person said no, so it is never replayed (`learn promote` takes it back)"
    if health is not None and health.status in PULLED:
        streak = f", the last {health.failing_streak} failed" if health.failing_streak >= MIN_EVIDENCE else ""
        rate = "-" if health.rolling_success_rate is None else f"{health.rolling_success_rate:.0%}"
        return (
            f"{health.status} (rolling success {rate} over {health.counted_executions} "
            f"executions{streak}{'; ' + health.failure_pattern if health.failure_pattern else ''}): fix the cause, "
            "then `learn promote ID` starts a fresh evidence window"
        )
    if threshold is None:
        if proc.proven:
            return None  # proven once (two successes, or a person's promotion): health alone decides
        threshold = REPLAY_THRESHOLD
    if proc.confidence < threshold:
        seen = f"{proc.success_count} success{'es' if proc.success_count != 1 else ''}"
        if proc.failure_count:
            seen += f" and {proc.failure_count} failure{'s' if proc.failure_count != 1 else ''}"
        lift = (
            "a second success (another capture or a validated replay) or `learn promote ID` makes it replayable"
            if proc.failure_count == 0 and proc.success_count <= 1
            else "`learn promote ID` vouches for it (its health then decides), or ask for a lower --min-confidence"
        )
        return (
            f"not yet proven: confidence {proc.confidence:.2f} < {threshold:.2f} from {seen} this store counted: {lift}"
        )
    return None
