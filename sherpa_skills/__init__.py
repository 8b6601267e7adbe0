"""sherpa-skills: a hierarchical state-machine agent runtime that learns procedures.

The public surface is `__all__`; names load on first use so `import sherpa_skills` stays fast.
"""

from __future__ import annotations

import os as _os
from importlib import import_module as _import_module
from typing import TYPE_CHECKING, Any

# litellm fetches a model cost map at import unless told not to; nothing here reaches the internet.
_os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
_os.environ.setdefault("HF_HUB_OFFLINE", "1")

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "Agent": "agent", "RunResult": "agent",
    "Belief": "belief", "BeliefView": "belief", "LogEntry": "belief", "TrajectoryEntry": "belief",
    "Workflow": "workflow", "load_workflow": "workflow", "load_workflow_text": "workflow",
    "WorkflowSpec": "spec", "CompiledMachine": "compiler",
    "RunStore": "runstore",
    "Registry": "registry", "default_registry": "registry", "action": "registry", "guard": "registry", "function": "registry",
    "ActionContext": "registry", "ActionResult": "registry", "Internal": "registry",
    "Policy": "policy.base", "Decision": "policy.base", "DecisionContext": "policy.base", "ChainPolicy": "policy.base", "NoPolicy": "policy.base",
    "RulePolicy": "policy.rule", "LLMPolicy": "policy.llm",
    "SherpaError": "errors", "WorkflowError": "errors", "UsageError": "errors", "RegistryError": "errors", "RunError": "errors",
    "ActionError": "errors", "PolicyError": "errors", "NoTransitionError": "errors", "ReadOnlyBeliefError": "errors",
    "StoreError": "errors", "ModelError": "errors", "Problem": "errors",
    "to_mermaid": "mermaid",
    "Event": "events", "EventError": "events", "InProcessBus": "bus", "RedisBus": "redis_bus",
    "Team": "multiagent", "TeamRunner": "multiagent", "TeamResult": "multiagent", "load_team": "multiagent",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sherpa_skills' has no attribute '{name}'")
    value = getattr(_import_module(f".{module}", __name__), name)
    if module in ("agent", "workflow", "registry"):
        _import_module(".builtins", __name__)  # built-in actions and guards exist before any workflow loads
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])


if TYPE_CHECKING:  # pragma: no cover
    from .agent import Agent, RunResult
    from .belief import Belief, BeliefView, LogEntry, TrajectoryEntry
    from .compiler import CompiledMachine
    from .errors import (ActionError, ModelError, NoTransitionError, PolicyError, Problem, ReadOnlyBeliefError, RegistryError,
                         RunError, SherpaError, StoreError, UsageError, WorkflowError)
    from .bus import InProcessBus
    from .events import Event, EventError
    from .mermaid import to_mermaid
    from .multiagent import Team, TeamResult, TeamRunner, load_team
    from .redis_bus import RedisBus
    from .policy.base import ChainPolicy, Decision, DecisionContext, NoPolicy, Policy
    from .policy.llm import LLMPolicy
    from .policy.rule import RulePolicy
    from .registry import ActionContext, ActionResult, Internal, Registry, action, default_registry, function, guard
    from .runstore import RunStore
    from .spec import WorkflowSpec
    from .workflow import Workflow, load_workflow, load_workflow_text
