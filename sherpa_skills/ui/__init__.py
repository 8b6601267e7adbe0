"""The local browser view: runs, machines, procedures, the heartbeat and teams, served over the home folder.

Needs the `ui` extra (starlette, uvicorn); `sherpa-skills ui` says so when it is missing.
"""

from __future__ import annotations

from typing import Any

__all__ = ["create_app"]


def create_app(*args: Any, **kwargs: Any) -> Any:
    from .app import create_app as build

    return build(*args, **kwargs)
