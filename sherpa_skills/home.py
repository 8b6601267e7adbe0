"""Where sherpa-skills keeps its state: `--home`, else SHERPA_SKILLS_HOME, else ~/.sherpa-skills."""

from __future__ import annotations

import os
from pathlib import Path


def resolve_home(home: str | os.PathLike[str] | None = None) -> Path:
    chosen = home or os.environ.get("SHERPA_SKILLS_HOME") or Path.home() / ".sherpa-skills"
    path = Path(chosen).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


def store_path(home: str | os.PathLike[str] | None = None) -> Path:
    return resolve_home(home) / "store.db"
