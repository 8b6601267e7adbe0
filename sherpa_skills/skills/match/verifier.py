"""The judge at hand when a match needs confirmation and no person or caller answers: the model's multiple choice.

One short structured question, never the planning prompt: the task, then at most five numbered candidates (each one's
description, first steps and declared parameters); the answer is `{choice, params}`, `choice` being the number of
the procedure that is the task or 0 for none of them. It is the same mechanism wherever a model judges: `learn replay
--verify [MODEL]` (or SHERPA_SKILLS_VERIFY_MODEL), `SkillStore.match(task, verify=MODEL)`, and the workflow's own
model in a learning run (`judge`). Anything but a clean choice is a no: 0, a number or id that was not offered, an
answer that is not that JSON or names an undeclared parameter or a value the task does not state (asked once more,
then refused), a failed call. Every call and token is counted in the verdict.
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

log = structlog.get_logger(__name__)

__all__ = ["MODEL_ENV", "JudgeChoice", "Verifier", "judge", "verifier_from_env"]

MODEL_ENV = "SHERPA_SKILLS_VERIFY_MODEL"
MAX_STEPS = 3
MAX_STEP_CHARS = 120
MAX_TOKENS = 120
MAX_OFFERED = 5

SYSTEM = (
    "You check which stored shell procedure does exactly what a task asks, not merely something similar. "
    "Answer with JSON only."
)
QUESTION = """Task: {query}

{options}

Which procedure is exactly this task (choice: its number, or 0 if none is)? If one is, which values does the task give
for its parameters (params; only the names it lists, values as written in the task)?
Answer: {{"choice": number, "params": {{...}}}}"""


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    choice: int | str
    params: dict[str, str | int | float] = Field(default_factory=dict)


class JudgeChoice(BaseModel):
    """What the judge chose among the offered candidates, and what asking cost."""

    procedure_id: str | None = Field(default=None, description="the chosen procedure; None for none of them")
    same_task: bool = Field(default=False, description="a procedure was chosen")
    params: dict[str, str] = Field(default_factory=dict)
    reason: str | None = Field(default=None, description="why nothing was chosen; None when one was")
    offered: list[str] = Field(default_factory=list, description="the procedure ids asked about, in order")
    answered: bool = Field(default=False, description="the judge gave a usable answer (a choice, or none)")
    calls: int = 0
    tokens: int = 0
    model: str = ""


def _steps(proc: CapturedProcedure) -> str:
    shown = [
        s.command if len(s.command) <= MAX_STEP_CHARS else s.command[:MAX_STEP_CHARS] + " …"
        for s in proc.steps[:MAX_STEPS]
    ]
    more = len(proc.steps) - len(shown)
    text = "; ".join(shown) or "(a recorded workflow run: no shell steps)"
    return text + (f"; … and {more} more" if more > 0 else "")


def response_format(declared: list[str]) -> dict[str, Any]:
    """json_schema naming the offered procedures' parameters only, so a server that enforces schemas cannot invent
    one."""
    params = {"type": "object", "properties": {n: {"type": "string"} for n in declared}, "additionalProperties": False}
    schema = {
        "type": "object",
        "properties": {"choice": {"type": "integer"}, "params": params},
        "required": ["choice", "params"],
        "additionalProperties": False,
    }
    return {"type": "json_schema", "json_schema": {"name": "procedure_choice", "schema": schema}}


Offer = tuple[CapturedProcedure, list[str]]  # a candidate and its declared parameters


def _chosen(choice: int | str, offered: list[Offer]) -> tuple[int | None, str | None]:
    """The 1-based index chosen (0: none), or why the choice names nothing that was offered."""
    if isinstance(choice, str):
        text = choice.strip()
        ids = [p.id for p, _ in offered]
        if text in ids:
            return ids.index(text) + 1, None
        if not text.isdigit():
            return None, f"the answer names {text[:60]!r}, which was not offered"
        choice = int(text)
    if 0 <= choice <= len(offered):
        return choice, None
    return None, f"the answer chooses {choice}, but only 1 to {len(offered)} (or 0 for none) were offered"


def _parse(text: str, offered: list[Offer], query: str) -> tuple[tuple[int, dict[str, str]] | None, str | None]:
    """(the choice, its parameter values), or why the answer cannot be used."""
    raw = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", raw, re.DOTALL)  # small models wrap JSON in a fence
    try:
        answer = _Answer.model_validate(json.loads(fenced.group(1) if fenced else raw))
    except (ValueError, ValidationError) as exc:
        return None, f"the answer is not {{choice, params}} JSON ({str(exc).splitlines()[0][:120]})"
    index, problem = _chosen(answer.choice, offered)
    if index is None:
        return None, problem
    if index == 0:
        return (0, {}), None
    declared = offered[index - 1][1]
    undeclared = sorted(set(answer.params) - set(declared))
    if undeclared:
        return (
            None,
            f"the answer names undeclared parameters: {', '.join(undeclared)} (declared: "
            f"{', '.join(declared) or 'none'})",
        )
    lowered = query.lower()
    unstated = sorted(k for k, v in answer.params.items() if str(v).strip().lower() not in lowered)
    if unstated:
        return None, f"the answer gives values the task does not state for: {', '.join(unstated)}"
    return (index, {k: str(v) for k, v in answer.params.items()}), None


class Verifier:
    """The model judge: asks `model` which offered procedure, if any, is the task (see the module's docstring)."""

    def __init__(
        self,
        model: str,
        *,
        max_tokens: int = MAX_TOKENS,
        base_dir: str | None = None,
        retry: Retry | None = None,
    ):
        if not model or not model.strip():
            raise ModelError(
                f"the judge needs a model name (a litellm model string, or scripted/PATH.yaml; {MODEL_ENV})"
            )
        self.model = model.strip()
        self.max_tokens = max_tokens
        self.base_dir = base_dir
        self.retry = retry  # None: the default (3 attempts for a rate limit, server error or timeout)
        self._schema_refused = False  # the server refused json_schema once: ask in the form it took from then on

    def messages(self, query: str, offered: list[Offer]) -> list[dict[str, str]]:
        options = "\n".join(
            f"{i}. {(p.description or p.task_type)[:200]} — steps: {_steps(p)} — parameters: "
            f"{', '.join(declared) or 'none'}"
            for i, (p, declared) in enumerate(offered, 1)
        )
        prompt = QUESTION.format(query=query.strip()[:500], options=options)
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}]

    def choose(self, query: str, offered: list[Offer]) -> JudgeChoice:
        """One call (two when the first answer is unusable); a failed call is a refusal with the reason."""
        from ...llm.call import complete

        offered = offered[:MAX_OFFERED]
        verdict = JudgeChoice(model=self.model, offered=[p.id for p, _ in offered])
        if not offered:
            verdict.reason = "nothing was offered to choose from"
            return verdict
        messages = self.messages(query, offered)
        fmt = response_format(sorted({n for _, declared in offered for n in declared}))
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
                verdict.reason = f"the judge failed: {exc}"
                log.warning("judge_failed", offered=verdict.offered, reason=str(exc))
                return verdict
            verdict.calls += answer.requests
            verdict.tokens += answer.tokens
            self._schema_refused = self._schema_refused or answer.format_refused
            parsed, problem = _parse(answer.text, offered, query)
            if parsed is not None:
                index, params = parsed
                verdict.answered = True
                if index == 0:
                    verdict.reason = f"the judge ({self.model}) says none of the candidates is this task"
                    return verdict
                verdict.procedure_id, verdict.same_task, verdict.params = offered[index - 1][0].id, True, params
                return verdict
            verdict.reason = f"the judge's answer was unusable twice: {problem}" if attempt == 2 else problem
            messages = [
                *messages,
                {"role": "assistant", "content": answer.text[:400]},
                {"role": "user", "content": f"That answer cannot be used: {problem}. Answer again with the JSON only."},
            ]
        return verdict

    def verify(self, query: str, proc: CapturedProcedure, declared: list[str]) -> JudgeChoice:
        """The one-candidate question: is this procedure the task?"""
        return self.choose(query, [(proc, declared)])


def judge(
    query: str,
    offered: list[CapturedProcedure],
    model: str,
    *,
    declared: dict[str, list[str]] | None = None,
    base_dir: str | None = None,
) -> JudgeChoice:
    """The workflow's own model as the judge of a `needs-confirmation`: `verdict.procedure_id` is its choice among
    `offered` (None for none, garbage or a procedure not offered), with the calls and tokens it cost. `declared`
    gives each procedure's parameter names (by id)."""
    names = declared or {}
    return Verifier(model, base_dir=base_dir).choose(query, [(p, names.get(p.id, [])) for p in offered])


def verifier_from_env() -> Verifier | None:
    """The judge SHERPA_SKILLS_VERIFY_MODEL names, or None (off) when it is unset."""
    model = os.environ.get(MODEL_ENV, "").strip()
    return Verifier(model) if model else None
