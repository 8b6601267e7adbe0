"""Where a run was started, and so where its log file is: runs shared through PostgreSQL are listed on every machine,
their logs stay in the home folder of the machine that ran them."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from ..logs import log_path


def this_host() -> str:
    return socket.gethostname()


def log_place(host: str | None, home: str | None, run_id: str) -> dict[str, Any] | None:
    """{"host", "path", "here", "text"} for a run's log: `here` when it was run on this machine (then `path` can be
    opened); None for a run recorded before its origin was kept, on a database shared by machines."""
    if home is None:
        return None
    here = host is None or host == this_host()
    path = str(log_path(Path(home), run_id))
    return {"host": host, "path": path, "here": here, "text": path if here else f"log on {host} in {path}"}
