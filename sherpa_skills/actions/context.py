"""Built-in actions that change the context: set values, count loops."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from ..engine.registry import ActionContext, ActionResult, default_registry


class SetArgs(BaseModel):
    """Every argument becomes a context key; values may be templates or `from_context` references."""

    model_config = ConfigDict(extra="allow")


@default_registry.action("set")
def set_values(args: SetArgs, ctx: ActionContext) -> ActionResult:
    """Write each argument into the context under its own name."""
    values = dict(args.model_extra or {})
    return ActionResult(outputs=values, context=values)


class IncrementArgs(BaseModel):
    key: str
    by: float = 1


@default_registry.action("increment")
def increment(args: IncrementArgs, ctx: ActionContext) -> ActionResult:
    """Add `by` to the number at `key` (0 when missing): loop counters for guards like context_lt."""
    current: Any = ctx.view.get(args.key, 0) if ctx.view is not None else 0
    value = (current or 0) + args.by
    if (
        isinstance(value, float)
        and value.is_integer()
        and isinstance(args.by, (int, float))
        and float(args.by).is_integer()
    ):
        value = int(value)
    return ActionResult(outputs={"key": args.key, "value": value}, context={args.key: value})
