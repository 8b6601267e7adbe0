"""Where sherpa-skills keeps its state: `--home`, else SHERPA_SKILLS_HOME, else ~/.sherpa-skills."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import StoreFileError


def resolve_home(home: str | os.PathLike[str] | None = None) -> Path:
    """The state folder, created when missing; a path that cannot be one is refused with the reason."""
    chosen = home or os.environ.get("SHERPA_SKILLS_HOME") or Path.home() / ".sherpa-skills"
    path = Path(chosen).expanduser()
    if path.exists() and not path.is_dir():
        raise StoreFileError(f"home '{path}' is a file, not a folder; pass --home a folder (it is created if missing)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreFileError(f"home '{path}' cannot be created: {exc.strerror or exc}") from None
    return path


def store_path(home: str | os.PathLike[str] | None = None) -> Path:
    return resolve_home(home) / "store.db"
