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

    name: str = Field(description="a registered guard (built in, or `@sherpa_skills.guard` in a module of `imports`)")
    args: dict[str, Any] = Field(
        default_factory=dict, description="the guard's arguments, checked against what it takes"
    )

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return _normalise_call(value, "guard")


class ActionCall(_Strict):
    """An action named in YAML; `save_as` stores its outputs in the context under that key."""

    name: str = Field(description="a registered action (built in, or `@sherpa_skills.action` in a module of `imports`)")
    args: dict[str, Any] = Field(
        default_factory=dict,
        description="the action's arguments: literals, {from_context: key}, {from_arg: name} or jinja2 templates",
    )
    save_as: str | None = Field(default=None, description="the context key the action's outputs are stored under")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return _normalise_call(value, "action")


class ArgumentSpec(_Strict):
    """An external argument a policy (or the user) must supply when choosing a transition."""

    type: Literal["string", "integer", "number", "boolean", "object", "array"] = Field(
        default="string", description="the JSON type the value must have"
    )
    description: str = Field(default="", description="what the value means, shown to the LLM")
    enum: list[Any] | None = Field(default=None, description="the only values allowed")
    required: bool = Field(default=True, description="whether the transition needs it")
    default: Any = Field(default=None, description="the value when an optional argument is not given")


class TransitionSpec(_Strict):
    """A transition: a named trigger from source states to a destination, with guards and actions."""

    trigger: str = Field(description="the transition's name, what a policy or `resume --trigger` fires")
    source: str | list[str] | None = Field(
        default=None,
        description="a state path like `triage/assess`, a list of them, or `*` for every state; a parent covers its "
        "descendants (default: the state it is declared in)",
    )
    dest: str | None = Field(
        default=None, description="the state entered; omitted, an internal transition that changes no state"
    )
    description: str = Field(default="", description="what the transition does, shown to the LLM")
    conditions: list[GuardCall] = Field(default_factory=list, description="guards that must all pass")
    unless: list[GuardCall] = Field(default_factory=list, description="guards that must all fail")
    before: list[ActionCall] = Field(default_factory=list, description="actions run before any state is left")
    after: list[ActionCall] = Field(default_factory=list, description="actions run once the destination is entered")
    arguments: dict[str, ArgumentSpec] = Field(
        default_factory=dict,
        description="what a policy must supply to fire it; no other key reaches the transition's actions",
    )

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
    """A state: a leaf, or a compound state holding states of its own."""

    description: str = Field(default="", description="what the state is for, shown to the LLM")
    initial: str | None = Field(default=None, description="a compound state's child entered first")
    states: dict[str, StateSpec] = Field(default_factory=dict, description="child states, nested to any depth")
    waiting: bool = Field(default=False, description="a leaf where the run stops until `resume` gives it input")
    final: bool = Field(default=False, description="a leaf where the run ends")
    on_enter: list[ActionCall] = Field(default_factory=list, description="actions run as the state is entered")
    on_exit: list[ActionCall] = Field(default_factory=list, description="actions run as the state is left")
    transitions: list[TransitionSpec] = Field(
        default_factory=list, description="transitions declared here; their `source` defaults to this state"
    )

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

    description: str = Field(default="", description="what the input is")
    required: bool = Field(default=False, description="a new run without it (and without a default) is refused")
    default: Any = Field(default=None, description="the value when the input is not given")
    type: Literal["string", "integer", "number", "boolean", "object", "array"] | None = Field(
        default=None, description="converts and checks values given as text (`--input n=3` is the integer 3)"
    )
    minimum: float | None = Field(default=None, description="the least value an integer or number input takes")

    @model_validator(mode="after")
    def _minimum_is_for_numbers(self) -> InputSpec:
        if self.minimum is not None and self.type not in ("integer", "number"):
            raise ValueError("`minimum` applies to inputs of type integer or number")
        return self


class RuleSpec(_Strict):
    """One rule of a rule policy: in states matching `state`, when every guard passes, fire `trigger`."""

    state: str = Field(default="*", description="a glob over state paths: `*` every state, `triage/*` its substates")
    when: list[GuardCall] = Field(default_factory=list, description="guards that must all pass")
    unless: list[GuardCall] = Field(default_factory=list, description="guards that must all fail")
    trigger: str = Field(description="the transition fired; a rule whose trigger is not available is skipped")
    args: dict[str, Any] = Field(default_factory=dict, description="the transition's arguments")

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

    type: Literal["rule", "llm", "chain", "none"] = Field(
        default="none",
        description="rule: rules only; llm: the model only; chain: rules first, the model where none decides; "
        "none: only a transition that is the one possible, or one fired from outside (`resume --trigger`)",
    )
    rules: str | list[RuleSpec] | None = Field(
        default=None,
        description="the rules, inline, or a rules file beside the workflow or in policies/ (see Rules file)",
    )
    prompt: str = Field(
        default="choose_transition", description="the prompt templates' name: NAME.system.j2 and NAME.user.j2"
    )
    max_retries: int = Field(
        default=2, ge=0, le=10, description="how often the model is asked again after an answer that is not valid"
    )
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

    from_context: str = Field(description="the context key (dotted keys reach into nested values)")


class LLMSpec(_Strict):
    """The model the LLM policy and the `llm` action ask, and how."""

    model: str | None = Field(
        default=None,
        description="a litellm model string (`openai/gpt-4o-mini`, `ollama/llama3.1`) or `scripted/FILE` (offline); "
        "`--model` and $SHERPA_SKILLS_MODEL stand in when it is not set",
    )
    temperature: float = Field(default=0.0, description="the sampling temperature")
    max_tokens: Annotated[int, Field(ge=1)] | ContextRef | None = Field(
        default=None,
        description="cap on each answer's length; {from_context: key} reads it from the run (e.g. an input)",
    )
    structured_output: bool = Field(
        default=True, description="send a JSON schema of the available triggers and their arguments"
    )
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

    name: str = Field(description="the workflow's name")
    description: str = Field(default="", description="one line, shown in prompts and graphs")
    imports: list[str] = Field(default_factory=list, description="Python modules that register actions/guards")
    inputs: dict[str, InputSpec] = Field(
        default_factory=dict, description="the run's inputs, copied into the context at start (one not given is null)"
    )
    context: dict[str, Any] = Field(default_factory=dict, description="initial context values")
    initial: str = Field(description="the state entered first (a compound state enters its `initial` child)")
    states: dict[str, StateSpec] = Field(description="the states, nested to any depth")
    transitions: list[TransitionSpec] = Field(
        default_factory=list, description="transitions (they may also be declared inside a state)"
    )
    policy: PolicySpec = Field(default_factory=PolicySpec, description="who picks the next transition")
    llm: LLMSpec = Field(default_factory=LLMSpec, description="the model's settings")
    max_steps: int = Field(default=1000, ge=1, description="stop with an error after this many steps")
    domain: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$",
        description="the agent's domain: decisions and status across runs (sherpa_skills.memory.domains)",
    )
