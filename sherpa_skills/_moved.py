"""Module paths from before the package was grouped by job keep importing, with a DeprecationWarning, for one release.

A finder on `sys.meta_path` answers only for the names below, so it costs nothing for any other import.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from types import ModuleType

#: old module path → where it lives now (see CHANGELOG.md).
MOVED: dict[str, str] = {
    f"sherpa_skills.{old}": f"sherpa_skills.{new}"
    for old, new in {
        "agent": "engine.agent",
        "belief": "engine.belief",
        "compiler": "engine.compiler",
        "spec": "engine.spec",
        "runstore": "engine.runstore",
        "registry": "engine.registry",
        "guards": "engine.guards",
        "workflow": "engine.workflow",
        "mermaid": "engine.diagram",
        "events": "engine.events",
        "bus": "agents.bus",
        "redis_bus": "agents.redis_bus",
        "multiagent": "agents.team",
        "agent_service": "agents.service",
        "embeddings": "semantic.embeddings",
        "companion": "semantic.companion",
        "tools": "semantic.tool_index",
        "builtins": "actions",
        "demo": "cli.demo",
        "cli_events": "cli.events",
        "cli_heartbeat": "cli.heartbeat",
        "cli_learn": "cli.learn",
        "cli_memory": "cli.memory",
        "sessions.cli": "cli.sessions",
    }.items()
}


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        return importlib.util.spec_from_loader(fullname, self) if fullname in MOVED else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        new = MOVED[module.__name__]
        warnings.warn(
            f"{module.__name__} moved to {new}; the old path goes away in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        # The import system hands back whatever sits in sys.modules under the old name: the real module.
        sys.modules[module.__name__] = importlib.import_module(new)


def install() -> None:
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
