"""The optional second opinion on a borderline match: one short structured LLM call, never the planning prompt.

Off unless a model is named (`Matcher(verify=Verifier(model))`, `learn replay --verify [MODEL]`, or
SHERPA_SKILLS_VERIFY_MODEL). It is asked only about the best candidate whose relevance lies in the band
[VERIFY_FLOOR, match floor): above the band the matcher is sure enough alone, below it a model's yes is not
worth the risk. The question is the procedure's description, a summary of its steps and its declared parameters
against the task; the answer is `{same_task, params}`. Anything but a clean yes is a no-match: a no, an answer
that is not that JSON or names an undeclared parameter or a value the task does not state (asked once more, then
refused), a failed call. Every call and token is counted in the decision.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import structlog
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ...errors import ModelError
from ...llm.retry import Retry
from ..store.models import CapturedProcedure
from .relevance import default_model

log = structlog.get_logger(__name__)

__all__ = ["MODEL_ENV", "VERIFY_FLOOR", "Verdict", "Verifier", "verifier_from_env"]

MODEL_ENV = "SHERPA_SKILLS_VERIFY_MODEL"
#: Lower edge of the band the verifier is asked about (relevance, as the match floor); calibrated with the model.
VERIFY_FLOOR = default_model().verify_floor
MAX_STEPS = 5
MAX_STEP_CHARS = 160
MAX_TOKENS = 120

SYSTEM = (
    "You check whether a stored shell procedure does exactly what a task asks, not merely something similar. "
    "Answer with JSON only."
)
QUESTION = """Task: {query}

Procedure: {description}
Steps:
{steps}
Parameters: {params}

Is this procedure the task (same_task)? If it is, which values does the task give for the parameters (params; only
the names listed, values as written in the task)? Answer: {{"same_task": true or false, "params": {{...}}}}"""


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    same_task: bool
    params: dict[str, str | int | float] = Field(default_factory=dict)


class Verdict(BaseModel):
    """What the verifier said about one candidate, and what asking cost."""

    same_task: bool = False
    params: dict[str, str] = Field(default_factory=dict)
    reason: str | None = Field(default=None, description="why the candidate is refused; None when the answer is yes")
    calls: int = 0
    tokens: int = 0
    model: str = ""


def _steps(proc: CapturedProcedure) -> str:
    shown = [
        s.command if len(s.command) <= MAX_STEP_CHARS else s.command[:MAX_STEP_CHARS] + " …"
        for s in proc.steps[:MAX_STEPS]
    ]
    more = len(proc.steps) - len(shown)
    lines = [f"{i}. {c}" for i, c in enumerate(shown, 1)] or ["(a recorded workflow run: no shell steps)"]
    return "\n".join(lines + ([f"… and {more} more"] if more > 0 else []))


def response_format(declared: list[str]) -> dict[str, Any]:
    """json_schema naming the declared parameters only, so a server that enforces schemas cannot invent one."""
    params = {"type": "object", "properties": {n: {"type": "string"} for n in declared}, "additionalProperties": False}
    schema = {
        "type": "object",
        "properties": {"same_task": {"type": "boolean"}, "params": params},
        "required": ["same_task", "params"],
        "additionalProperties": False,
    }
    return {"type": "json_schema", "json_schema": {"name": "procedure_check", "schema": schema}}


def _parse(text: str, declared: list[str], query: str) -> tuple[_Answer | None, str | None]:
    """The answer, or why it cannot be used (not the JSON asked for, an undeclared name, a value not in the task)."""
    raw = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", raw, re.DOTALL)  # small models wrap JSON in a fence
    try:
        answer = _Answer.model_validate(json.loads(fenced.group(1) if fenced else raw))
    except (ValueError, ValidationError) as exc:
        return None, f"the answer is not {{same_task, params}} JSON ({str(exc).splitlines()[0][:120]})"
    undeclared = sorted(set(answer.params) - set(declared))
    if undeclared:
        return (
            None,
            f"the answer names undeclared parameters: {', '.join(undeclared)} (declared: "
            f"{', '.join(declared) or 'none'})",
        )
    lowered = query.lower()
    unstated = sorted(k for k, v in answer.params.items() if str(v).strip().lower() not in lowered)
    if answer.same_task and unstated:
        return None, f"the answer gives values the task does not state for: {', '.join(unstated)}"
    return answer, None


class Verifier:
    """Asks `model` whether a procedure is the task; `lower` is the band's lower edge (see VERIFY_FLOOR)."""

    def __init__(
        self,
        model: str,
        *,
        lower: float | None = None,
        max_tokens: int = MAX_TOKENS,
        base_dir: str | None = None,
        retry: Retry | None = None,
    ):
        if not model or not model.strip():
            raise ModelError(
                f"the verifier needs a model name (a litellm model string, or scripted/PATH.yaml; {MODEL_ENV})"
            )
        self.model = model.strip()
        self.lower = float(VERIFY_FLOOR if lower is None else lower)
        self.max_tokens = max_tokens
        self.base_dir = base_dir
        self.retry = retry  # None: the default (3 attempts for a rate limit, server error or timeout)
        self._schema_refused = False  # the server refused json_schema once: ask in the form it took from then on

    def messages(self, query: str, proc: CapturedProcedure, declared: list[str]) -> list[dict[str, str]]:
        prompt = QUESTION.format(
            query=query.strip()[:500],
            description=(proc.description or proc.task_type)[:300],
            steps=_steps(proc),
            params=", ".join(declared) or "none",
        )
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}]

    def verify(self, query: str, proc: CapturedProcedure, declared: list[str]) -> Verdict:
        """One call (two when the first answer is unusable); a failed call is a refusal with the reason."""
        from ...llm.call import complete

        verdict = Verdict(model=self.model)
        messages = self.messages(query, proc, declared)
        fmt = response_format(declared)
        for attempt in (1, 2):
            try:
                answer = complete(
                    messages,
                    self.model,
                    response_format=fmt,
                    max_tokens=self.max_tokens,
                    base_dir=self.base_dir,
                    schema_in_prompt=self._schema_refused,
                    retry=self.retry,
                )
            except ModelError as exc:
                verdict.calls += max(1, getattr(exc, "requests", 1) or 0)  # an attempt counts even if nothing left
                verdict.reason = f"the verifier failed: {exc}"
                log.warning("verifier_failed", procedure=proc.id, reason=str(exc))
                return verdict
            verdict.calls += answer.requests
            verdict.tokens += answer.tokens
            self._schema_refused = self._schema_refused or answer.format_refused
            parsed, problem = _parse(answer.text, declared, query)
            if parsed is not None:
                verdict.same_task = parsed.same_task
                verdict.params = {k: str(v) for k, v in parsed.params.items()} if parsed.same_task else {}
                verdict.reason = None if parsed.same_task else f"the verifier ({self.model}) says it is not this task"
                return verdict
            verdict.reason = f"the verifier's answer was unusable twice: {problem}" if attempt == 2 else problem
            messages = [
                *messages,
                {"role": "assistant", "content": answer.text[:400]},
                {"role": "user", "content": f"That answer cannot be used: {problem}. Answer again with the JSON only."},
            ]
        return verdict


def verifier_from_env() -> Verifier | None:
    """The verifier SHERPA_SKILLS_VERIFY_MODEL names, or None (off) when it is unset."""
    model = os.environ.get(MODEL_ENV, "").strip()
    return Verifier(model) if model else None
