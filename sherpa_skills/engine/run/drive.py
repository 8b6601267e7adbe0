"""The drivers: a tick flow is a generator of requests (an action to run, a decision to make); the sync and the async
driver pump the same flow, so the two faces of a run cannot drift apart."""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ...errors import UsageError
from ..compiler import BoundAction
from ..registry import ActionContext

if TYPE_CHECKING:
    from ..agent import Agent


class Act:
    """A request, from the tick flow to its driver, to run one action."""

    __slots__ = ("bound", "args", "ctx")

    def __init__(self, bound: BoundAction, args: BaseModel, ctx: ActionContext):
        self.bound, self.args, self.ctx = bound, args, ctx


def drive(agent: Agent, flow: Generator[Any, Any, None]) -> None:
    """Pump `flow` to its end: run each action it asks for, ask `agent.decider` each decision."""
    request = next(flow, None)
    while request is not None:
        try:
            if isinstance(request, Act):
                fn = request.bound.definition.fn
                if request.bound.definition.is_async:
                    answer = _run_coroutine(fn(request.args, request.ctx), request.bound.name)
                else:
                    answer = fn(request.args, request.ctx)
            else:
                answer = agent.decider.decide(request)
        except BaseException as exc:  # handed back into the flow, which logs and re-raises
            request = _throw(flow, exc)
            continue
        request = _send(flow, answer)


async def adrive(agent: Agent, flow: Generator[Any, Any, None]) -> None:
    """The async twin of `drive`: async actions awaited, sync ones with side effects in a thread."""
    request = next(flow, None)
    while request is not None:
        try:
            if isinstance(request, Act):
                definition = request.bound.definition
                if definition.is_async:
                    answer = await definition.fn(request.args, request.ctx)
                elif definition.side_effects:
                    answer = await asyncio.to_thread(definition.fn, request.args, request.ctx)
                else:
                    answer = definition.fn(request.args, request.ctx)
            else:
                answer = await agent.decider.adecide(request)
        except BaseException as exc:
            request = _throw(flow, exc)
            continue
        request = _send(flow, answer)


def _send(flow: Generator[Any, Any, None], value: Any) -> Any:
    try:
        return flow.send(value)
    except StopIteration:
        return None


def _throw(flow: Generator[Any, Any, None], exc: BaseException) -> Any:
    try:
        return flow.throw(exc)
    except StopIteration:
        return None


def _run_coroutine(coro: Any, name: str) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    coro.close()
    raise UsageError(f"action '{name}' is async and the agent runs inside an event loop: use `await agent.arun()`")
