"""Find the shipped data folders (statemachines/, policies/) in an installed wheel or in a checkout."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from .errors import UsageError

_PACKAGE = Path(__file__).resolve().parent


@cache
def data_dir(name: str) -> Path:
    """`statemachines` or `policies`: inside the wheel under `_data/`, else beside the package in a checkout."""
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise UsageError(
        f"data folder '{name}' not found in {_PACKAGE / '_data'} or {_PACKAGE.parent}; is the package installed whole?"
    )


def data_file(folder: str, relative: str) -> Path:
    path = data_dir(folder) / relative
    if not path.is_file():
        available = sorted(
            p.relative_to(data_dir(folder)).as_posix() for p in data_dir(folder).rglob("*") if p.is_file()
        )
        raise UsageError(f"no '{relative}' in {folder}/; available: {', '.join(available) or 'none'}")
    return path


@cache
def package_version() -> str:
    """The installed distribution's version (pyproject.toml is the one source); read on demand, it costs ~50 ms."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sherpa-skills")
    except PackageNotFoundError:  # a source tree on sys.path without an install
        return "0+unknown"
