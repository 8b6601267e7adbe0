"""sherpa-skills: a hierarchical state-machine agent runtime that learns procedures.

The public surface is `__all__`; names load on first use so `import sherpa_skills` stays fast.
"""

from __future__ import annotations

from importlib import import_module as _import_module
from typing import TYPE_CHECKING, Any

# Importing the package changes no environment variable: litellm's offline settings are made where litellm is
# imported (llm/_litellm.py), onnxruntime's where onnxruntime is (semantic/embeddings.py).

_EXPORTS: dict[str, str] = {
    "Agent": "engine.agent",
    "RunResult": "engine.agent",
    "Belief": "engine.belief",
    "BeliefView": "engine.belief",
    "LogEntry": "engine.belief",
    "TrajectoryEntry": "engine.belief",
    "Workflow": "engine.workflow",
    "load_workflow": "engine.workflow",
    "load_workflow_text": "engine.workflow",
    "WorkflowSpec": "engine.spec",
    "CompiledMachine": "engine.compiler",
    "RunStore": "engine.runstore",
    "Registry": "engine.registry",
    "default_registry": "engine.registry",
    "action": "engine.registry",
    "guard": "engine.registry",
    "function": "engine.registry",
    "ActionContext": "engine.registry",
    "ActionResult": "engine.registry",
    "Internal": "engine.registry",
    "Policy": "policy.base",
    "Decision": "policy.base",
    "DecisionContext": "policy.base",
    "ChainPolicy": "policy.base",
    "NoPolicy": "policy.base",
    "RulePolicy": "policy.rule",
    "LLMPolicy": "policy.llm",
    "SherpaError": "errors",
    "WorkflowError": "errors",
    "UsageError": "errors",
    "RegistryError": "errors",
    "RunError": "errors",
    "ActionError": "errors",
    "PolicyError": "errors",
    "NoTransitionError": "errors",
    "ReadOnlyBeliefError": "errors",
    "StoreError": "errors",
    "ModelError": "errors",
    "Problem": "errors",
    "to_mermaid": "engine.diagram",
    "Event": "engine.events",
    "EventError": "engine.events",
    "InProcessBus": "agents.bus",
    "RedisBus": "agents.redis_bus",
    "SkillStore": "skills.api",
    "MatchDecision": "skills.match.matcher",
    "CaptureResult": "skills.api",
    "Team": "agents.team",
    "TeamRunner": "agents.team",
    "TeamResult": "agents.team",
    "load_team": "agents.team",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name == "__version__":  # from the installed metadata, read on first use
        return _import_module(".data", __name__).package_version()
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sherpa_skills' has no attribute '{name}'")
    value = getattr(_import_module(f".{module}", __name__), name)
    if module in ("engine.agent", "engine.workflow", "engine.registry"):
        _import_module(".engine.registry", __name__).load_builtins()  # built-ins exist before any workflow loads
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])


if TYPE_CHECKING:  # pragma: no cover
    from .agents.bus import InProcessBus
    from .agents.redis_bus import RedisBus
    from .agents.team import Team, TeamResult, TeamRunner, load_team
    from .engine.agent import Agent, RunResult
    from .engine.belief import Belief, BeliefView, LogEntry, TrajectoryEntry
    from .engine.compiler import CompiledMachine
    from .engine.diagram import to_mermaid
    from .engine.events import Event, EventError
    from .engine.registry import (
        ActionContext,
        ActionResult,
        Internal,
        Registry,
        action,
        default_registry,
        function,
        guard,
    )
    from .engine.runstore import RunStore
    from .engine.spec import WorkflowSpec
    from .engine.workflow import Workflow, load_workflow, load_workflow_text
    from .errors import (
        ActionError,
        ModelError,
        NoTransitionError,
        PolicyError,
        Problem,
        ReadOnlyBeliefError,
        RegistryError,
        RunError,
        SherpaError,
        StoreError,
        UsageError,
        WorkflowError,
    )
    from .policy.base import ChainPolicy, Decision, DecisionContext, NoPolicy, Policy
    from .policy.llm import LLMPolicy
    from .policy.rule import RulePolicy
    from .skills.api import CaptureResult, SkillStore
    from .skills.match.matcher import MatchDecision
