"""Run hooks: what a higher layer does when a run starts and when it stops, without the engine importing it.

A hook's `start` returns context keys for a new run (before its initial state is entered); `end` sees the result of
every `run()` that stops final or in error. Domains (`sherpa_skills.memory.domains`) are the hook the library ships;
a hook that fails is logged and counted on the result, never fails the run.
"""

from __future__ import annotations

from typing import Any, Protocol


class RunHook(Protocol):
    def start(self, agent: Any) -> dict[str, Any] | None: ...

    def end(self, agent: Any, result: Any) -> None: ...


_hooks: dict[str, RunHook] = {}


def register_run_hook(name: str, hook: RunHook) -> None:
    """Add (or replace) the hook called `name`; hooks run in the order they were first registered."""
    _hooks[name] = hook


def run_hooks() -> list[RunHook]:
    return list(_hooks.values())
