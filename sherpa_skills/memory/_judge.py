"""The optional LLM check for tensions: two facts on a shared subject that no rule flagged are asked about, through
litellm like every model call (`scripted/PATH.yaml` in tests). Off unless a model is named."""

from __future__ import annotations

import json
from collections.abc import Callable

from pydantic import BaseModel, ValidationError

from ..errors import ModelError

PROMPT = """Two notes from an agent's memory, about the same subject. Do they contradict each other — can both be true
at the same time? Answer with JSON only: {{"contradicts": true or false, "reason": "one short sentence"}}.

Older note: {old}
Newer note: {new}"""


class TensionVerdict(BaseModel):
    """The tension check's answer about two notes: whether they contradict, and why."""

    contradicts: bool
    reason: str = ""


Judge = Callable[[str, str], "str | None"]


def llm_judge(model: str, problems: list[str], base_dir: str | None = None) -> Judge:
    """A judge asking `model`; an unusable answer or a failed call is noted in `problems` and counts as no tension."""
    from ..llm.call import complete

    def judge(new: str, old: str) -> str | None:
        try:
            answer = complete(
                [{"role": "user", "content": PROMPT.format(old=old[:2000], new=new[:2000])}],
                model,
                response_format={"type": "json_object"},
                max_tokens=120,
                base_dir=base_dir,
            )
            verdict = TensionVerdict.model_validate(json.loads(answer.text))
        except ModelError as exc:
            problems.append(f"tension check by {model}: {exc}")
            return None
        except (ValueError, ValidationError) as exc:
            problems.append(
                f"tension check by {model}: the answer is not {{contradicts, reason}} JSON ({str(exc).splitlines()[0]})"
            )
            return None
        return f"{model}: {verdict.reason or 'contradicts'}" if verdict.contradicts else None

    return judge
