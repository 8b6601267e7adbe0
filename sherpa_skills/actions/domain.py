"""A domain from inside a run: the start/end hook that gives an agent its domain, and the actions `domain_status`,
`domain_log` and `domain_propose`. Decisions have no action: they are a person's (or the main agent's) to set.

The domain is the one the workflow (or its team entry) declares, acted on as the running agent's identity; no
argument names another domain or agent.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from ..engine.hooks import HookReport, HookRequest, RunHook
from ..engine.registry import ActionContext, ActionResult, default_registry
from ..errors import UsageError
from ..home import per_home
from ..memory.domains import Domains, briefing

if TYPE_CHECKING:
    from ..engine.agent import RunResult
    from ..engine.events import Event
    from ..engine.run.view import RunView

#: The context key a run finds its domain under.
CONTEXT_KEY = "domain"


def _open_domains(home: Path) -> Domains:
    return Domains(home=home)


def domains(home: Path | None) -> Domains:
    """One Domains per home and thread."""
    return per_home(_open_domains, home)


def _declared(run: RunView) -> str | None:
    return getattr(run.machine.spec, "domain", None)


class DomainHook(RunHook):
    """Run start: claim the domain for this agent and hand it decisions, status, recent changes and a briefing.
    Run end (final or error): one changelog line with the outcome, and the domain's liveness."""

    def on_start(self, *, run: RunView, inputs: dict[str, Any], event: Event | None) -> dict[str, Any] | None:
        name = _declared(run)
        if name is None:
            return None
        store = domains(run.home)
        store.claim(name, run.agent)
        return {CONTEXT_KEY: store.start_context(name, run.agent, briefing(run.home, run.agent))}

    def on_stop(self, *, run: RunView, result: RunResult) -> HookReport | None:
        name = _declared(run)
        if name is None or result.status not in ("final", "error"):
            return None
        entry = {
            "run_id": result.run_id,
            "outcome": result.status,
            "state": result.state,
            "steps": result.counters.get("steps", 0),
        }
        if result.error:
            entry["error"] = result.error[:300]
        domains(run.home).run_ended(name, run.agent, result.run_id, result.status, entry)
        return None


def domain_hook(request: HookRequest) -> DomainHook | None:
    """The hook maker `sherpa_skills.load_workflow` gives every workflow: a domain hook when the workflow (or its team
    entry) declares a domain."""
    return DomainHook() if request.workflow.spec.domain else None


def _domain(ctx: ActionContext, action: str) -> tuple[Domains, str, str]:
    view = ctx.view.get(CONTEXT_KEY) if ctx.view is not None else None
    name = view.get("name") if isinstance(view, dict) else None
    if not ctx.agent or not name:
        raise UsageError(f"{action}: this workflow declares no domain; add `domain: NAME` to it (or to its team entry)")
    return domains(ctx.home), str(name), ctx.agent


class StatusArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: Any = Field(description="where the agent stands now (text or a mapping); replaces the previous status")


@default_registry.action("domain_status", side_effects=True)
def domain_status(args: StatusArgs, ctx: ActionContext) -> ActionResult:
    """Replace the domain's status: what the next run starts from."""
    store, name, agent = _domain(ctx, "domain_status")
    store.set_status(name, agent, args.status)
    return ActionResult(outputs={"domain": name, "status": args.status})


class LogArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    entry: Any = Field(description="what was done (text or a mapping), appended to the changelog")


@default_registry.action("domain_log", side_effects=True)
def domain_log(args: LogArgs, ctx: ActionContext) -> ActionResult:
    """Append an entry to the domain's changelog (append-only; rotated past its size)."""
    store, name, agent = _domain(ctx, "domain_log")
    store.append(name, args.entry, kind="note", agent=agent)
    return ActionResult(outputs={"domain": name})


class ProposeArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str = Field(description="the decision to change (or add)")
    value: Any
    reason: str | None = None


@default_registry.action("domain_propose", side_effects=True)
def domain_propose(args: ProposeArgs, ctx: ActionContext) -> ActionResult:
    """Ask for a decision to change; a person accepts it (`sherpa-skills domains accept ID`),
    the heartbeat surfaces it."""
    store, name, agent = _domain(ctx, "domain_propose")
    pid = store.propose(name, agent, args.key, args.value, args.reason, ctx.run_id)
    return ActionResult(outputs={"domain": name, "proposal": pid, "key": args.key})
