"""LLM policy: a jinja2 prompt of the state, the available transitions and recent belief; a validated JSON answer."""

from __future__ import annotations

import json
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog
from pydantic import BaseModel, Field, ValidationError

from ..data import data_dir
from ..engine.compiler import Edge, check_arguments
from ..errors import ModelError, PolicyError
from .base import Decision, DecisionContext

if TYPE_CHECKING:
    from jinja2 import Environment

    from ..llm.call import Completion

log = structlog.get_logger(__name__)

_CONTEXT_CHARS = 4000
_OUTPUT_CHARS = 300
#: A decision is one small JSON object; without a cap a small local model may ramble until its context is full.
DECISION_MAX_TOKENS = 512
#: How much of a rejected answer is said back to the model, and kept in the run log.
_ECHO_CHARS = 400


class LLMAnswer(BaseModel):
    trigger: str
    args: dict[str, Any] = Field(default_factory=dict)
    reason: str = ""


class PolicyFailure(PolicyError):
    """No valid answer after every retry; carries what the attempts cost and what was rejected."""

    def __init__(
        self,
        message: str,
        llm_calls: int,
        tokens: int,
        cost: float,
        rejected: list[dict[str, str]] | None = None,
        tokens_estimated: bool = False,
    ):
        super().__init__(message)
        self.llm_calls, self.tokens, self.cost = llm_calls, tokens, cost
        self.rejected, self.tokens_estimated = rejected or [], tokens_estimated


def _template_env(folder: Path) -> Environment:
    from jinja2 import FileSystemLoader, StrictUndefined
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    return ImmutableSandboxedEnvironment(
        loader=FileSystemLoader([str(folder), str(data_dir("policies") / "prompts")]),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
    )


def _option_view(edge: Edge) -> dict[str, Any]:
    return {
        "trigger": edge.trigger,
        "dest": edge.dest,
        "description": edge.description,
        "arguments": {n: a.model_dump(exclude_defaults=True) | {"type": a.type} for n, a in edge.arguments.items()},
    }


def _template_line(exc: BaseException, name: str) -> int | None:
    """The prompt line a render error came from: jinja2 puts the template's own frames in the traceback."""
    import traceback

    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename.endswith(name)]
    return lines[-1] if lines else None


def _clip(value: object, limit: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} chars cut]"


def _arguments_schema(edge: Edge) -> dict[str, Any]:
    """The JSON schema of one transition's own arguments: declared names only, required ones required."""
    properties: dict[str, Any] = {}
    for name, a in edge.arguments.items():
        prop: dict[str, Any] = {"type": a.type}
        if a.description:
            prop["description"] = a.description
        if a.enum:
            prop["enum"] = list(a.enum)
        properties[name] = prop
    required = [n for n, a in edge.arguments.items() if a.required and a.default is None]
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def response_schema(options: list[Edge]) -> dict[str, Any]:
    """One object schema per available trigger (a union discriminated by `trigger`),
    each with only its own arguments."""
    choices = [
        {
            "type": "object",
            "properties": {
                "trigger": {"type": "string", "enum": [o.trigger]},
                "args": _arguments_schema(o),
                "reason": {"type": "string"},
            },
            "required": ["trigger", "args"],
            "additionalProperties": False,
        }
        for o in options
    ]
    return {"type": "json_schema", "json_schema": {"name": "transition_choice", "schema": {"anyOf": choices}}}


def parse_answer(text: str, ctx: DecisionContext) -> tuple[Decision | None, str]:
    """A decision, or the reason the answer is unusable (said back to the model on retry)."""
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`")
        body = body[body.find("{") :] if "{" in body else body
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end < start:
        return None, "the answer is not a JSON object"
    try:
        answer = LLMAnswer.model_validate_json(body[start : end + 1])
    except ValidationError as exc:
        first = exc.errors()[0]
        return None, f"the answer is not valid: {first['msg']} at {'.'.join(map(str, first['loc'])) or 'top level'}"
    edge = ctx.option(answer.trigger)
    if edge is None:
        return None, f"'{answer.trigger}' is not an available transition; choose one of {', '.join(ctx.triggers())}"
    try:
        args = check_arguments(edge, answer.args)
    except ValueError as exc:
        return None, str(exc)
    return Decision(answer.trigger, args, decided_by="llm", reason=answer.reason), ""


class LLMPolicy:
    """Asks a model through litellm; a garbage answer is re-asked with the error, then becomes a PolicyError."""

    def __init__(
        self,
        model: str | None = None,
        *,
        prompt: str = "choose_transition",
        max_retries: int = 2,
        recent: int = 8,
        temperature: float = 0.0,
        max_tokens: int | str | None = None,
        structured_output: bool = True,
        base_dir: Path | None = None,
        relevant_options: int | None = None,
        task_key: str = "task",
        retries: int | None = None,
        retry_max_wait: float | None = None,
    ):
        from ..llm.retry import Retry

        self.model, self.prompt, self.max_retries, self.recent = model, prompt, max_retries, recent
        self.retry = Retry.of(retries, retry_max_wait)  # resending after a busy server, unlike max_retries (re-asking)
        self.temperature, self.max_tokens, self.structured_output = temperature, max_tokens, structured_output
        self.base_dir = Path(base_dir) if base_dir else Path.cwd()
        self.relevant_options, self.task_key = relevant_options, task_key
        self._env: Environment | None = None
        self._indexes: dict[tuple[str, ...], Any] = {}
        self._format_refused: set[str] = set()  # models whose server refused response_format

    def shown_options(self, ctx: DecisionContext) -> list[Edge]:
        """All available transitions, or with `relevant_options`, the few the tool index ranks highest for the task."""
        limit = self.relevant_options
        if not limit or len(ctx.options) <= limit:
            return ctx.options
        from ..semantic.tool_index import ToolIndex, ToolSpec

        key = tuple(o.trigger for o in ctx.options)
        index = self._indexes.get(key)
        if index is None:
            index = self._indexes[key] = ToolIndex(
                ToolSpec(name=o.trigger, description=o.description) for o in ctx.options
            )
        ranked = [r.tool.name for r in index.relevant(str(ctx.view.get(self.task_key) or ""), limit=limit)]
        chosen = [o for o in ctx.options if o.trigger in ranked]
        # Fill up in declaration order when the task names fewer than `limit`.
        return chosen + [o for o in ctx.options if o.trigger not in ranked][: limit - len(chosen)]

    def messages(self, ctx: DecisionContext) -> list[dict[str, str]]:
        if self._env is None:
            self._env = _template_env(self.base_dir)
        view = ctx.view
        values = {
            "machine": ctx.machine,
            "state": ctx.state,
            "state_description": ctx.state_description,
            "options": [_option_view(o) for o in self.shown_options(ctx)],
            "triggers": [o.trigger for o in self.shown_options(ctx)],
            "context": _clip(dict(view.context.items()), _CONTEXT_CHARS),
            "vars": view.context,
            "trajectory": view.trajectory.recent(self.recent),
            "actions": [
                {
                    "action": e.action,
                    "status": e.status,
                    "outputs": _clip(e.outputs, _OUTPUT_CHARS) if e.outputs else "",
                }
                for e in view.log.recent(self.recent)
            ],
            "replay": ctx.divergence,
        }
        return [
            {"role": "system", "content": self._render(f"{self.prompt}.system.j2", values, ctx)},
            {"role": "user", "content": self._render(f"{self.prompt}.user.j2", values, ctx)},
        ]

    def _render(self, name: str, values: dict[str, Any], ctx: DecisionContext) -> str:
        """A prompt that cannot be rendered (missing file, undefined name, syntax)
        is a policy error naming it, never a traceback."""
        from jinja2 import TemplateError

        if self._env is None:
            self._env = _template_env(self.base_dir)
        try:
            return self._env.get_template(name).render(values)
        except TemplateError as exc:
            line = getattr(exc, "lineno", None) or _template_line(exc, name)
            where = f" line {line}" if line else ""
            raise PolicyError(
                f"LLM policy in state '{ctx.state}': prompt '{name}'{where} cannot be rendered: "
                f"{exc.message or type(exc).__name__}"
            ) from None

    def _model(self, ctx: DecisionContext) -> str:
        """A model pinned on this policy, else the run's (`--model`, else the workflow's llm.model),
        else the environment's."""
        from ..llm.call import resolve_model

        return resolve_model(self.model, ctx.model)

    def _dialogue(
        self, ctx: DecisionContext
    ) -> Generator[tuple[list[dict[str, str]], str, dict[str, Any]], Completion, Decision]:
        """The whole ask/validate/re-ask exchange, written once; `decide` and `adecide` only do the I/O."""
        model, messages = self._model(ctx), self.messages(ctx)
        options = {
            "response_format": response_schema(self.shown_options(ctx)) if self.structured_output else None,
            "temperature": self.temperature,
            "max_tokens": self._max_tokens(ctx),
            "base_dir": self.base_dir,
            "schema_in_prompt": model in self._format_refused,
            "retry": self.retry,
        }
        calls = tokens = 0
        cost = 0.0
        estimated = False
        error = ""
        rejected: list[dict[str, str]] = []
        for _ in range(self.max_retries + 1):
            try:
                answer = yield messages, model, options
            except ModelError as exc:
                calls += exc.requests
                raise PolicyFailure(
                    f"LLM policy in state '{ctx.state}': {exc}", calls, tokens, cost, rejected, estimated
                ) from exc
            calls, tokens, cost = calls + answer.requests, tokens + answer.tokens, cost + answer.cost
            estimated = estimated or answer.estimated
            if answer.format_refused and not options["schema_in_prompt"]:
                # Remembered for this policy's later decisions, so each does not pay a refused request first.
                self._format_refused.add(model)
                options = {**options, "schema_in_prompt": True}
            decision, error = parse_answer(answer.text, ctx)
            if decision is not None:
                decision.llm_calls, decision.tokens, decision.cost = calls, tokens, cost
                decision.tokens_estimated, decision.rejected = estimated, rejected
                return decision
            echo = _clip(answer.text, _ECHO_CHARS)
            rejected.append({"answer": echo, "error": error})
            log.warning("llm_answer_rejected", state=ctx.state, error=error, answer=echo)
            # Only a cut echo goes back: a rambling answer resent whole can overflow a small model's context.
            messages = [
                *messages,
                {"role": "assistant", "content": echo},
                {"role": "user", "content": f"That answer was rejected: {error}. Answer again with one JSON object."},
            ]
        raise PolicyFailure(
            f"LLM policy gave no valid choice in state '{ctx.state}' after {calls} attempt(s): {error}; "
            f"available: {', '.join(ctx.triggers())}",
            calls,
            tokens,
            cost,
            rejected,
            estimated,
        )

    def _max_tokens(self, ctx: DecisionContext) -> int:
        """The cap on one answer: set on the policy (llm.max_tokens, or a context key), else DECISION_MAX_TOKENS."""
        value = self.max_tokens
        if isinstance(value, str):
            value = ctx.view.get(value)
        if value is None:
            return DECISION_MAX_TOKENS
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise PolicyError(
                f"LLM policy in state '{ctx.state}': max_tokens must be a positive integer, got {value!r}"
            )
        return value

    def decide(self, ctx: DecisionContext) -> Decision | None:
        from ..llm.call import complete

        dialogue = self._dialogue(ctx)
        request = next(dialogue)
        while True:
            messages, model, options = request
            try:
                answer = complete(messages, model, **options)
            except ModelError as exc:
                request = dialogue.throw(exc)
                continue
            try:
                request = dialogue.send(answer)
            except StopIteration as done:
                decision: Decision | None = done.value
                return decision

    async def adecide(self, ctx: DecisionContext) -> Decision | None:
        from ..llm.call import acomplete

        dialogue = self._dialogue(ctx)
        request = next(dialogue)
        while True:
            messages, model, options = request
            try:
                answer = await acomplete(messages, model, **options)
            except ModelError as exc:
                request = dialogue.throw(exc)
                continue
            try:
                request = dialogue.send(answer)
            except StopIteration as done:
                decision: Decision | None = done.value
                return decision
