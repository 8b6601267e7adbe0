"""Built-in `llm` action: one templated prompt to the configured model, through litellm."""

from __future__ import annotations

import json

from pydantic import BaseModel

from ..engine.registry import ActionContext, ActionResult, default_registry


class LLMArgs(BaseModel):
    prompt: str
    system: str | None = None
    model: str | None = None
    json_output: bool = False
    temperature: float = 0.0
    max_tokens: int | None = None


@default_registry.action("llm", side_effects=True)
def call_llm(args: LLMArgs, ctx: ActionContext) -> ActionResult:
    """Ask the model; with json_output the answer must parse as JSON or the action reports status failed."""
    from ..llm.call import complete, resolve_model
    from ..llm.retry import Retry

    messages = ([{"role": "system", "content": args.system}] if args.system else []) + [
        {"role": "user", "content": args.prompt}
    ]
    answer = complete(
        messages,
        resolve_model(args.model, ctx.model),
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        base_dir=ctx.workdir,
        retry=Retry.of(ctx.llm.retries, ctx.llm.retry_max_wait) if ctx.llm is not None else None,
    )
    outputs: dict[str, object] = {"text": answer.text, "model": answer.model}
    if answer.estimated:
        outputs["tokens_estimated"] = True
    status = "ok"
    if args.json_output:
        try:
            outputs["json"] = json.loads(answer.text)
        except ValueError:
            outputs["json"], status = None, "failed"
    return ActionResult(
        outputs=outputs, status=status, tokens=answer.tokens, cost=answer.cost, llm_calls=answer.requests
    )
