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
    "load_workflow": "runtime",
    "load_workflow_text": "runtime",
    "WorkflowSpec": "engine.spec",
    "CompiledMachine": "engine.compiler",
    "RunStore": "engine.runstore",
    "RunHook": "engine.hooks",
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
    "Learner": "skills.capture.learning",
    "MatchDecision": "skills.match.models",
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


# For type checkers and IDEs; `X as X` marks a re-export (the names load through __getattr__ at run time).
if TYPE_CHECKING:  # pragma: no cover
    from .agents.bus import InProcessBus as InProcessBus
    from .agents.redis_bus import RedisBus as RedisBus
    from .agents.team import Team as Team
    from .agents.team import TeamResult as TeamResult
    from .agents.team import TeamRunner as TeamRunner
    from .agents.team import load_team as load_team
    from .engine.agent import Agent as Agent
    from .engine.agent import RunResult as RunResult
    from .engine.belief import Belief as Belief
    from .engine.belief import BeliefView as BeliefView
    from .engine.belief import LogEntry as LogEntry
    from .engine.belief import TrajectoryEntry as TrajectoryEntry
    from .engine.compiler import CompiledMachine as CompiledMachine
    from .engine.diagram import to_mermaid as to_mermaid
    from .engine.events import Event as Event
    from .engine.events import EventError as EventError
    from .engine.hooks import RunHook as RunHook
    from .engine.registry import ActionContext as ActionContext
    from .engine.registry import ActionResult as ActionResult
    from .engine.registry import Internal as Internal
    from .engine.registry import Registry as Registry
    from .engine.registry import action as action
    from .engine.registry import default_registry as default_registry
    from .engine.registry import function as function
    from .engine.registry import guard as guard
    from .engine.runstore import RunStore as RunStore
    from .engine.spec import WorkflowSpec as WorkflowSpec
    from .engine.workflow import Workflow as Workflow
    from .errors import ActionError as ActionError
    from .errors import ModelError as ModelError
    from .errors import NoTransitionError as NoTransitionError
    from .errors import PolicyError as PolicyError
    from .errors import Problem as Problem
    from .errors import ReadOnlyBeliefError as ReadOnlyBeliefError
    from .errors import RegistryError as RegistryError
    from .errors import RunError as RunError
    from .errors import SherpaError as SherpaError
    from .errors import StoreError as StoreError
    from .errors import UsageError as UsageError
    from .errors import WorkflowError as WorkflowError
    from .policy.base import ChainPolicy as ChainPolicy
    from .policy.base import Decision as Decision
    from .policy.base import DecisionContext as DecisionContext
    from .policy.base import NoPolicy as NoPolicy
    from .policy.base import Policy as Policy
    from .policy.llm import LLMPolicy as LLMPolicy
    from .policy.rule import RulePolicy as RulePolicy
    from .runtime import load_workflow as load_workflow
    from .runtime import load_workflow_text as load_workflow_text
    from .skills.api import CaptureResult as CaptureResult
    from .skills.api import SkillStore as SkillStore
    from .skills.capture.learning import Learner as Learner
    from .skills.match.models import MatchDecision as MatchDecision
