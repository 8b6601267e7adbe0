"""The skill store's data model, as pydantic models: rows in SQLite, objects in JSON exports."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

Source = Literal["session", "run", "manual"]
#: branch: the run left the routine where an exception made it (a guard, a check) and succeeded another way — an
#: exception handled, kept as the procedure's branch, neither a success nor a failure of the routine.
Outcome = Literal["success", "diverged", "error", "dry-run", "branch"]
#: new: not run since captured or promoted (no evidence yet); see skills/store/scoring.py for the rule.
HealthStatus = Literal["new", "healthy", "degraded", "broken", "needs-relearning"]
#: Who claims a count this store did not observe (docs: "Evidence has a source"): an agent over MCP, a session log or
#: live hook, an imported file or skill folder. Claims are stored and shown, never counted toward replay.
ClaimSource = Literal["agent", "session", "import"]
#: shell: commands replayed by the replay machine; trajectory: a workflow's decisions, replayed by the replay policy.
ProcedureKind = Literal["shell", "trajectory"]


#: Who decided, in a trajectory, for the decisions a replay counts as its own position (fast-forwards and the
# start are not decisions).
POLICY_DECIDERS = ("rule", "llm", "replay", "policy")

#: The most characters one step's command may hold (capture, import, MCP): a shell step is a command, not a payload.
MAX_COMMAND_CHARS = 100_000
#: The validation context of a row read back from the store: stored before the limit, it stays readable.
STORED = {"stored": True}


class ActionOutcome(BaseModel):
    """What one action call did in the recorded run: what a replay expects to see again."""

    model_config = ConfigDict(extra="forbid")

    action: str
    status: str = "ok"
    exit_code: int | None = None


class RecordedCheck(BaseModel):
    """The features an action's declared check observed when the recorded run called it: a replay expects them again."""

    model_config = ConfigDict(extra="forbid")

    action: str
    features: Any = None


class RecordedDecision(BaseModel):
    """One decision of a successful run: where, which trigger,
    its arguments ({{ input }} where they came from the inputs),
    who took it then, and the action outcomes observed before it (checked before it is replayed)."""

    model_config = ConfigDict(extra="forbid")

    state: str
    trigger: str
    args: dict[str, Any] = Field(default_factory=dict)
    decided_by: str = "llm"
    #: The action outcomes observed since the decision before (the first: since the run started). Only those, not all
    #: so far: a run's record then grows with the run, not with its square.
    outcomes: list[ActionOutcome] = Field(default_factory=list)
    #: Every outcome observed before it, as procedures captured before `outcomes` were stored (read, never written).
    outcomes_before: list[ActionOutcome] = Field(default_factory=list)
    #: Checks of the actions this decision led to (up to the next one): called before it is followed again.
    checks: list[RecordedCheck] = Field(default_factory=list)


class ProcedureStep(BaseModel):
    """One replayable command and how to tell that it went as recorded."""

    model_config = ConfigDict(extra="forbid")

    command: str = Field(min_length=1)
    expected_exit_code: int = 0
    expected_output_pattern: str | None = None
    timeout_secs: float = Field(default=60.0, gt=0, allow_inf_nan=False)  # every step has a timeout: .inf is none
    env_vars: list[str] = Field(default_factory=list, description="names only; values are never stored")
    cwd: str | None = None

    @field_validator("command")
    @classmethod
    def _bounded(cls, value: str, info: ValidationInfo) -> str:
        if len(value) > MAX_COMMAND_CHARS and not (info.context or {}).get("stored"):
            raise ValueError(
                f"{len(value):,} characters, over the {MAX_COMMAND_CHARS:,} a step's command may hold: "
                "put the data in a file and have the step read it"
            )
        return value

    @field_validator("expected_output_pattern")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            import re

            try:
                re.compile(value)
            except re.error as exc:  # pydantic turns only ValueError into a validation problem
                raise ValueError(
                    f"expected_output_pattern {value!r} is not a valid regular expression: {exc}"
                ) from None
        return value

    @field_validator("env_vars")
    @classmethod
    def _names_only(cls, value: list[str]) -> list[str]:
        for name in value:
            if "=" in name or not name.replace("_", "").isalnum():
                raise ValueError(f"env_vars holds variable names only, not '{name}'")
        return value


def step_problem(number: int, exc: ValidationError) -> str:
    """What is wrong with step `number` (1-based), in words: the field and why, without pydantic's boilerplate."""
    first = exc.errors()[0]
    field = ".".join(str(p) for p in first["loc"])
    return f"step {number}{f' {field}' if field else ''}: {first['msg'].removeprefix('Value error, ')}"


class CapturedProcedure(BaseModel):
    id: str
    task_type: str
    description: str = ""
    steps: list[ProcedureStep]
    kind: ProcedureKind = "shell"
    decisions: list[RecordedDecision] = Field(default_factory=list, description="a trajectory's decisions, in order")
    preconditions: list[str] = Field(default_factory=list, description="shell checks that must exit 0 before replay")
    postconditions: list[str] = Field(default_factory=list, description="shell checks that must exit 0 after replay")
    source: Source = "run"
    context: dict[str, Any] = Field(default_factory=dict)
    #: What this store counted (a person's capture, a replay it executed and validated, a learning run, a promotion):
    #: the only counts confidence, health and replay read.
    success_count: int = 0
    failure_count: int = 0
    confidence: float = 0.0
    #: Claimed, not counted: successes and failures reported by an agent, seen in session logs, or carried by an import.
    claimed_successes: int = 0
    claimed_failures: int = 0
    #: Of the counted ones, those stored before counts kept their source (a home upgraded to sources: still counted).
    legacy_successes: int = 0
    legacy_failures: int = 0
    #: This version's counted confidence reached the replay threshold once, or a person promoted it: from then on its
    #: health alone decides whether it replays (skills/store/scoring.py).
    proven: bool = False
    tags: list[str] = Field(default_factory=list)
    version: int = 1
    #: candidate: mined, waiting for review; rejected: a person said no (never proposed again, never replayed).
    status: Literal["active", "candidate", "rejected"] = "active"
    needs_relearning: bool = False
    planned_tokens: int = 0
    planned_llm_calls: int = 0
    created: float = 0.0
    updated: float = 0.0


class Execution(BaseModel):
    id: int | None = None
    procedure_id: str
    version: int
    started: float
    ended: float
    outcome: Outcome
    diverged_step: int | None = None
    reason: str | None = None
    tokens: int = 0
    llm_calls: int = 0
    run_id: str | None = None


class Claim(BaseModel):
    """Evidence this store did not observe: who said what about a procedure's version. Shown, never counted."""

    id: int | None = None
    procedure_id: str
    version: int
    source: ClaimSource
    claimed_by: str
    successes: int = 0
    failures: int = 0
    note: str | None = None
    created: float = 0.0


class ProcedureHealthReport(BaseModel):
    procedure_id: str
    status: HealthStatus
    rolling_success_rate: float | None
    total_executions: int  # every real execution of this version, those before a promotion included
    counted_executions: int = 0  # those the rate is over: in the window, since capture or the last promotion
    min_evidence: int = 3  # counted executions needed before degraded or broken (scoring.MIN_EVIDENCE)
    evidence_since: float | None = None  # when the last promotion opened the evidence window; None: since capture
    last_failure: float | None = None
    failure_pattern: str | None = None
    window: int = 10
    failing_streak: int = 0  # counted executions that failed in a row, newest first (MIN_EVIDENCE of them: broken)


class CapturedLearning(BaseModel):
    """A command that failed, kept so planning can avoid it next time (a defensive learning)."""

    id: int | None = None
    task_type: str | None = None
    procedure_id: str | None = None
    command: str
    error: str = ""
    exit_code: int | None = None
    source: str = "run"
    # What the command was for: the agent's own description, the task, the folder it ran in. Found by meaning with it.
    about: str = ""
    created: float = 0.0
    seen: int = 1  # the same lesson (task, command, error) learned again counts here, not as a copy
    last_seen: float | None = None


class StepsFile(BaseModel):
    """What `learn capture-success --steps-file` accepts when the file is an object rather than a list."""

    model_config = ConfigDict(extra="forbid")

    description: str = ""
    tags: list[str] = Field(default_factory=list)
    preconditions: list[str] = Field(default_factory=list)
    postconditions: list[str] = Field(default_factory=list)
    steps: list[ProcedureStep]
