"""Test doubles that ship with the library: the scripted model, answering in-process or through litellm like a real one.

Model strings `scripted/PATH.yaml` select a script; see `sherpa_skills.llm.scripted` for the format. It answers
without importing litellm unless `SHERPA_SKILLS_SCRIPTED_VIA=litellm` (see `sherpa_skills.llm.call`).
"""

from .llm.scripted import (
    PROVIDER,
    Script,
    ScriptedAnswer,
    ScriptError,
    estimate_tokens,
    load_script,
    make_scripted_model,
    reset_scripts,
    script_answer,
    scripted_model,
)

__all__ = [
    "PROVIDER",
    "ScriptedAnswer",
    "Script",
    "ScriptError",
    "estimate_tokens",
    "load_script",
    "make_scripted_model",
    "reset_scripts",
    "script_answer",
    "scripted_model",
]


def __getattr__(name: str) -> object:
    from .llm import scripted

    return getattr(scripted, name)
