"""Built-in actions `memory_write` and `memory_search`: shared memory from YAML, always as the acting agent.

The agent is the one running the action (`ActionContext.agent`: the team member, the configured name, or the
workflow bound to its file); no argument can name another agent, and a workflow's own `name:` is not its identity,
so a workflow can neither write as someone else nor read someone else's private notes.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import UsageError
from ..redact import redact
from ..engine.registry import ActionContext, ActionResult, default_registry
from ..memory._models import MAX_LIMIT
from ..memory._search import shared_memory
from ..memory._store import write_id


def _agent(ctx: ActionContext, action: str) -> str:
    if not ctx.agent:
        raise UsageError(f"{action}: the acting agent has no name, so shared memory cannot tell whose note this is; "
                         f"run the action inside an Agent (Agent(name=...), or `run --agent NAME`)")
    return ctx.agent


class MemoryWriteArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str
    scope: Literal["private", "shared"] = Field("private", description="private: only this agent reads it; shared: every agent")
    kind: str | None = None
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


@default_registry.action("memory_write", side_effects=True)
def memory_write(args: MemoryWriteArgs, ctx: ActionContext) -> ActionResult:
    """Write a note (private, the default) or an artifact (shared) to shared memory; secrets are redacted first."""
    agent = _agent(ctx, "memory_write")
    memory = shared_memory(ctx.home)
    # Stable per run, tick, state and content: a resumed run that repeats this write stores nothing twice.
    aid = write_id(ctx.run_id, ctx.tick, ctx.state, redact(args.text), args.scope, args.kind)
    artifact = memory.write(args.text, agent=agent, scope=args.scope, kind=args.kind, tags=args.tags,
                            metadata=args.metadata, run_id=ctx.run_id, id=aid)
    return ActionResult(outputs={"id": artifact.id, "agent": artifact.agent, "scope": artifact.scope, "kind": artifact.kind,
                                 "tags": artifact.tags, "created": artifact.created, "indexed": memory.companion_problem is None,
                                 "companion_problem": memory.companion_problem})


class MemorySearchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str
    limit: int = Field(5, ge=1, le=MAX_LIMIT)
    scope: Literal["all", "private", "shared"] = Field("all", description="all: shared artifacts and this agent's private notes")
    kind: str | None = None
    author: str | None = Field(None, description="only artifacts written by this agent")
    metadata: dict[str, Any] = Field(default_factory=dict, description="exact matches on top-level metadata keys")
    mode: Literal["hybrid", "lexical"] = "hybrid"


@default_registry.action("memory_search")
def memory_search(args: MemorySearchArgs, ctx: ActionContext) -> ActionResult:
    """Search shared memory by words and meaning, as this agent; `save_as` keeps the hits in the context."""
    agent = _agent(ctx, "memory_search")
    result = shared_memory(ctx.home).search(args.query, agent=agent, scope=args.scope, author=args.author, kind=args.kind,
                                            metadata=args.metadata, limit=args.limit, mode=args.mode)
    return ActionResult(outputs=result.to_dict())
