"""Built-in actions `memory_write` and `memory_search`: shared memory from YAML, always as the acting agent.

The agent is the one running the action (`ActionContext.agent`: the team member, the configured name, or the
workflow bound to its file); no argument can name another agent, and a workflow's own `name:` is not its identity,
so a workflow can neither write as someone else nor read someone else's private notes.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..engine.registry import ActionContext, ActionResult, default_registry
from ..errors import UsageError
from ..memory._models import MAX_LIMIT
from ..memory._search import shared_memory
from ..memory._store import write_id
from ..redact import redact


def _agent(ctx: ActionContext, action: str) -> str:
    if not ctx.agent:
        raise UsageError(
            f"{action}: the acting agent has no name, so shared memory cannot tell whose note this is; "
            f"run the action inside an Agent (Agent(name=...), or `run --agent NAME`)"
        )
    return ctx.agent


class MemoryWriteArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str
    scope: Literal["private", "shared"] = Field(
        "private", description="private: only this agent reads it; shared: every agent"
    )
    kind: str | None = None
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    confidence: float | None = Field(
        None, ge=0.0, le=1.0, description="how sure the writer is (default 0.8); doubt decays faster"
    )
    abstraction: Literal["episode", "pattern", "principle"] = Field(
        "episode", description="episode: what happened; pattern: what tends to hold; principle: a rule (never decays)"
    )
    category: str | None = None
    supersedes: str | None = Field(None, description="the id of an artifact this one corrects; it stays as history")
    on_near: Literal["flag", "link", "merge"] = Field("flag", description="what a near-duplicate write does")
    tension_model: str | None = Field(
        None, description="a litellm model also asked about related facts no rule flagged"
    )


@default_registry.action("memory_write", side_effects=True)
def memory_write(args: MemoryWriteArgs, ctx: ActionContext) -> ActionResult:
    """Write a note (private, the default) or an artifact (shared) to shared memory; secrets are redacted first."""
    agent = _agent(ctx, "memory_write")
    memory = shared_memory(ctx.home)
    # Stable per run, tick, state and content: a resumed run that repeats this write stores nothing twice.
    aid = write_id(ctx.run_id, ctx.tick, ctx.state, redact(args.text), args.scope, args.kind)
    written = memory.remember(
        args.text,
        agent=agent,
        scope=args.scope,
        kind=args.kind,
        tags=args.tags,
        metadata=args.metadata,
        run_id=ctx.run_id,
        id=aid,
        confidence=args.confidence,
        abstraction=args.abstraction,
        category=args.category,
        supersedes=args.supersedes,
        on_near=args.on_near,
        tension_model=args.tension_model,
        model_dir=ctx.workdir,
    )
    a = written.artifact
    return ActionResult(
        outputs={
            "id": a.id,
            "agent": a.agent,
            "scope": a.scope,
            "kind": a.kind,
            "tags": a.tags,
            "created": a.created,
            "seen": a.seen,
            "duplicate": written.duplicate,
            "merged_into": written.merged_into,
            "supersedes": a.supersedes,
            "near_duplicates": [{"id": i, "similarity": round(x, 4)} for i, x in written.near],
            "tensions": written.tensions,
            "checks_skipped": written.skipped,
            "indexed": memory.companion_problem is None,
            "companion_problem": memory.companion_problem,
        }
    )


class MemorySearchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str
    limit: int = Field(5, ge=1, le=MAX_LIMIT)
    scope: Literal["all", "private", "shared"] = Field(
        "all", description="all: shared artifacts and this agent's private notes"
    )
    kind: str | None = None
    author: str | None = Field(None, description="only artifacts written by this agent")
    metadata: dict[str, Any] = Field(default_factory=dict, description="exact matches on top-level metadata keys")
    mode: Literal["hybrid", "lexical"] = "hybrid"
    history: bool = Field(False, description="also return superseded artifacts (each names its successor)")


@default_registry.action("memory_search")
def memory_search(args: MemorySearchArgs, ctx: ActionContext) -> ActionResult:
    """Search shared memory by words and meaning, as this agent; `save_as` keeps the hits in the context."""
    agent = _agent(ctx, "memory_search")
    result = shared_memory(ctx.home).search(
        args.query,
        agent=agent,
        scope=args.scope,
        author=args.author,
        kind=args.kind,
        metadata=args.metadata,
        limit=args.limit,
        mode=args.mode,
        history=args.history,
    )
    return ActionResult(outputs=result.to_dict())
