"""Session import: real agent and shell session logs turned into normalised, redacted command records.

Reads Claude Code transcripts, Codex CLI rollouts, bash and zsh histories; stores one row per command
(outcome success / failure / rejected / unknown, exit code, cwd, redacted output excerpt) in the
home's store.db, where mining picks them up by id (`SessionStore.commands_since(watermark)`).

Names load on first use, so the CLI can build its parser without importing pydantic.
"""

from __future__ import annotations

from importlib import import_module as _import_module
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "FORMATS": "_detect",
    "sniff": "_detect",
    "SETTLE_SECONDS": "_importer",
    "import_paths": "_importer",
    "FileResult": "_models",
    "ImportSummary": "_models",
    "ImportedFile": "_models",
    "SessionCommand": "_models",
    "SessionStore": "_store",
    "COMMAND_LIMIT": "_records",
    "is_truncated": "_records",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sherpa_skills.sessions' has no attribute '{name}'")
    value = getattr(_import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])


# For type checkers and IDEs; `X as X` marks a re-export (the names load through __getattr__ at run time).
if TYPE_CHECKING:  # pragma: no cover
    from ._detect import FORMATS as FORMATS
    from ._detect import sniff as sniff
    from ._importer import SETTLE_SECONDS as SETTLE_SECONDS
    from ._importer import import_paths as import_paths
    from ._models import FileResult as FileResult
    from ._models import ImportedFile as ImportedFile
    from ._models import ImportSummary as ImportSummary
    from ._models import SessionCommand as SessionCommand
    from ._records import COMMAND_LIMIT as COMMAND_LIMIT
    from ._records import is_truncated as is_truncated
    from ._store import SessionStore as SessionStore
