"""Pydantic models for what a workflow file declares: the boundary between YAML and the engine."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")
PATH_SEP = "/"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _normalise_call(value: Any, kind: str) -> Any:
    """Accept `name`, `{name: {args}}` and `{<kind>: name, args: {...}}` for one guard or action."""
    if isinstance(value, str):
        return {"name": value}
    if isinstance(value, dict):
        if kind in value:
            out = dict(value)
            out["name"] = out.pop(kind)
            return out
        if "name" in value:
            return value
        named = [k for k in value if k not in ("args", "save_as")]
        if len(named) == 1:
            name, args = named[0], value[named[0]]
            rest = {k: v for k, v in value.items() if k != name}
            if args is None:
                args = {}
            if not isinstance(args, dict):
                raise ValueError(f"arguments of {kind} '{name}' must be a mapping, got {type(args).__name__}")
            return {"name": name, "args": args, **rest}
    return value


class GuardCall(_Strict):
    """A guard named in YAML, with literal arguments validated at load."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return _normalise_call(value, "guard")


class ActionCall(_Strict):
    """An action named in YAML; `save_as` stores its outputs in the context under that key."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    save_as: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return _normalise_call(value, "action")


class ArgumentSpec(_Strict):
    """An external argument a policy (or the user) must supply when choosing a transition."""

    type: Literal["string", "integer", "number", "boolean", "object", "array"] = "string"
    description: str = ""
    enum: list[Any] | None = None
    required: bool = True
    default: Any = None


class TransitionSpec(_Strict):
    trigger: str
    source: str | list[str] | None = None
    dest: str | None = None
    description: str = ""
    conditions: list[GuardCall] = Field(default_factory=list)
    unless: list[GuardCall] = Field(default_factory=list)
    before: list[ActionCall] = Field(default_factory=list)
    after: list[ActionCall] = Field(default_factory=list)
    arguments: dict[str, ArgumentSpec] = Field(default_factory=dict)

    @field_validator("trigger")
    @classmethod
    def _trigger_name(cls, value: str) -> str:
        if not NAME_RE.match(value):
            raise ValueError(f"trigger '{value}' must be a name (letters, digits, _ and -)")
        return value

    @field_validator("conditions", "unless", "before", "after", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, (str, dict)) else value

    def sources(self) -> list[str]:
        if self.source is None:
            return []
        return [self.source] if isinstance(self.source, str) else list(self.source)


class StateSpec(_Strict):
    description: str = ""
    initial: str | None = None
    states: dict[str, StateSpec] = Field(default_factory=dict)
    waiting: bool = False
    final: bool = False
    on_enter: list[ActionCall] = Field(default_factory=list)
    on_exit: list[ActionCall] = Field(default_factory=list)
    transitions: list[TransitionSpec] = Field(default_factory=list)

    @field_validator("on_enter", "on_exit", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, (str, dict)) else value

    @model_validator(mode="before")
    @classmethod
    def _empty_state(cls, value: Any) -> Any:
        return {} if value is None else value


class InputSpec(_Strict):
    """A run input: copied into the context under its name before the first tick (or at a resume, the input waited for).

    With a `type`, values are converted and checked (engine.inputs); without one, any value is taken as given.
    """

    description: str = ""
    required: bool = False
    default: Any = None
    type: Literal["string", "integer", "number", "boolean", "object", "array"] | None = None
    minimum: float | None = Field(default=None, description="the least value an integer or number input takes")

    @model_validator(mode="after")
    def _minimum_is_for_numbers(self) -> InputSpec:
        if self.minimum is not None and self.type not in ("integer", "number"):
            raise ValueError("`minimum` applies to inputs of type integer or number")
        return self


class RuleSpec(_Strict):
    """One rule of a rule policy: in states matching `state`, when every guard passes, fire `trigger`."""

    state: str = "*"
    when: list[GuardCall] = Field(default_factory=list)
    unless: list[GuardCall] = Field(default_factory=list)
    trigger: str
    args: dict[str, Any] = Field(default_factory=dict)

    @field_validator("when", "unless", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, (str, dict)) else value


class LearnSpec(_Strict):
    """`learn: {error_bound: δ}`: learn, with the decision memory answering only where its calibrated error holds δ
    (the share of the workflow's decisions it may answer wrongly; skills/decide/head.py)."""

    error_bound: float | None = Field(
        default=None,
        gt=0,
        le=0.2,
        description="the share of the workflow's decisions the decision memory may answer wrongly "
        "(default: the decision memory's setting, 0.0025 — about 0.5 % wrong requests in a two-decision workflow)",
    )


class PolicySpec(_Strict):
    """Which policy picks transitions: rules, an LLM, or rules first and the LLM when no rule decides."""

    type: Literal["rule", "llm", "chain", "none"] = "none"
    rules: str | list[RuleSpec] | None = None
    prompt: str = "choose_transition"
    max_retries: int = Field(default=2, ge=0, le=10)
    recent: int = Field(default=8, ge=0, description="how many recent trajectory/log entries the prompt shows")
    relevant_options: int | None = Field(
        default=None, ge=1, description="show the LLM only this many transitions, the most relevant to the task"
    )
    task_key: str = Field(default="task", description="the context key holding the task text, for relevant_options")
    # A mapping is the settings, anything else the flag: a wrong bound is told as that, never as "not a boolean" too.
    learn: Annotated[
        Annotated[bool, Tag("flag")] | Annotated[LearnSpec, Tag("settings")],
        Discriminator(lambda v: "settings" if isinstance(v, (dict, LearnSpec)) else "flag"),
    ] = Field(
        default=False,
        description="replay the procedure a run's task matches (the LLM takes over where it "
        "diverges) and capture runs that succeed, in the home's skill store",
    )


class ContextRef(_Strict):
    """`{from_context: key}`: a setting read from the run's context when it is used (e.g. from an input)."""

    from_context: str


class LLMSpec(_Strict):
    model: str | None = None
    temperature: float = 0.0
    max_tokens: Annotated[int, Field(ge=1)] | ContextRef | None = Field(
        default=None,
        description="cap on each answer's length; {from_context: key} reads it from the run (e.g. an input)",
    )
    structured_output: bool = True
    retries: int | None = Field(
        default=None,
        ge=0,
        le=10,
        description="attempts after the first when the server answers a rate "
        "limit, a server error or a timeout (default 2: 3 in all); refusals are never retried",
    )
    retry_max_wait: float | None = Field(
        default=None,
        ge=0,
        le=600,
        description="cap in seconds on one wait before a retry, Retry-After included (default 30)",
    )


class WorkflowSpec(_Strict):
    """A whole workflow file: one machine, its policy, its inputs and its LLM settings."""

    name: str
    description: str = ""
    imports: list[str] = Field(default_factory=list, description="Python modules that register actions/guards")
    inputs: dict[str, InputSpec] = Field(default_factory=dict)
    context: dict[str, Any] = Field(default_factory=dict)
    initial: str
    states: dict[str, StateSpec]
    transitions: list[TransitionSpec] = Field(default_factory=list)
    policy: PolicySpec = Field(default_factory=PolicySpec)
    llm: LLMSpec = Field(default_factory=LLMSpec)
    max_steps: int = Field(default=1000, ge=1)
    domain: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$",
        description="the agent's domain: decisions and status across runs (sherpa_skills.memory.domains)",
    )
