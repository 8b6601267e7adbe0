"""A run as its hooks see it: read-only windows onto the agent (its id, state, belief, counters), never the agent."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..belief import BeliefView

if TYPE_CHECKING:
    from ..agent import Agent
    from ..compiler import CompiledMachine
    from ..registry import Registry


class RunView:
    """What a hook reads of the run it is given: live (the state and counters as they are when read), and unwritable —
    a hook adds to the run by what it returns (`RunHook.on_stop`, `RunHook.spent`)."""

    __slots__ = ("_agent", "_counters")
    _agent: Agent
    _counters: Mapping[str, Any]

    def __init__(self, agent: Agent):
        object.__setattr__(self, "_agent", agent)
        object.__setattr__(self, "_counters", MappingProxyType(agent.counters))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a run view is read-only: '{name}' cannot be set (return what the hook adds)")

    __delattr__ = __setattr__  # type: ignore[assignment]

    @property
    def run_id(self) -> str:
        return self._agent.run_id

    @property
    def workflow(self) -> str:
        """The workflow's name (its spec's `name:`)."""
        return self._agent.machine.name

    @property
    def machine(self) -> CompiledMachine:
        """The compiled workflow the run executes (its states, transitions and spec)."""
        return self._agent.machine

    @property
    def state(self) -> str:
        return self._agent.state

    @property
    def belief(self) -> BeliefView:
        """Trajectory, log and context, through read-only windows."""
        return self._agent.view

    @property
    def counters(self) -> Mapping[str, Any]:
        return self._counters

    @property
    def agent(self) -> str:
        """Who the run is to shared memory and domains (the agent's name), not the Agent object."""
        return self._agent.name

    @property
    def model(self) -> str | None:
        return self._agent.model

    @property
    def base_dir(self) -> Path:
        return self._agent.base_dir

    @property
    def home(self) -> Path | None:
        return self._agent.home

    @property
    def registry(self) -> Registry:
        return self._agent.registry
