"""The one path to an LLM (litellm, imported on first use) and the scripted stand-in model for tests and the demo."""

from __future__ import annotations

from typing import Any

# What `sherpa_skills.llm` offered when it was a module; resolved on first use so this package stays cheap.
_CALL_NAMES = frozenset({"MODEL_ENV", "SCRIPTED_PREFIX", "Completion", "acomplete", "complete", "resolve_model"})


def __getattr__(name: str) -> Any:
    if name in _CALL_NAMES:
        from . import call

        return getattr(call, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
