"""Built-in actions that talk to the rest of the system: emit an event, call a registered Python function."""

from __future__ import annotations

import time
import uuid
from typing import Any

from pydantic import BaseModel, Field

from ..engine.registry import ActionContext, ActionResult, default_registry
from ..errors import ActionError


class EmitArgs(BaseModel):
    name: str
    topic: str | None = None
    recipient: str | None = None
    payload: dict[str, Any] = Field(default_factory=dict)
    correlation_id: str | None = None


@default_registry.action("emit", side_effects=True)
def emit_event(args: EmitArgs, ctx: ActionContext) -> ActionResult:
    """Put an event on the agent's outbox (and its bus, when it has one); the event id is stable per run and tick."""
    event = {
        "id": f"{ctx.run_id}:{ctx.tick}:{args.name}" if ctx.run_id else uuid.uuid4().hex,
        "name": args.name,
        "topic": args.topic,
        "recipient": args.recipient,
        "payload": args.payload,
        "sender": ctx.run_id,
        "timestamp": time.time(),
        "correlation_id": args.correlation_id,
    }
    if ctx.emit is not None:
        ctx.emit(event)
    return ActionResult(outputs=event)


class CallArgs(BaseModel):  # type: ignore[no-redef]  # pydantic's mypy plugin: field `kwargs` meets __init__(**kwargs)
    function: str
    kwargs: dict[str, Any] = Field(default_factory=dict)


@default_registry.action("call", side_effects=True)
def call_function(args: CallArgs, ctx: ActionContext) -> ActionResult:
    """Call a function registered with `@sherpa_skills.function`; its return value is the action's output."""
    if ctx.registry is None:
        raise ActionError("call", "no registry available to look the function up")
    fn = ctx.registry.get_function(args.function)
    return ActionResult(outputs=fn(**args.kwargs))
