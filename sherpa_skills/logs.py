"""structlog set-up: quiet by default for embedders, a JSON file per run and readable stderr for the CLI."""

from __future__ import annotations

import hashlib
import logging
import re
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any, TextIO, cast

import structlog

_configured = False
_verbosity = 0  # the CLI's -v count: 1 shows info on stderr, 2 debug, whatever level a command asks for


def set_verbosity(verbose: int) -> None:
    """Set by the CLI's -v/-vv before a command configures its logs; 0 leaves each command's own terminal level."""
    global _verbosity
    _verbosity = verbose or 0


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_MAX_STEM = 96


def log_file(home: Path, name: str) -> Path:
    """HOME/logs/NAME.jsonl for a run id, agent or team name; a name that is not plain is encoded, never used as a path.

    Plain names (letters, digits, '.', '_', '-', not starting with '.') are kept; anything else is replaced by '_'
    and a hash of the whole name is appended, so different names never share a file and no name leaves the folder.
    """
    path = log_path(home, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def log_path(home: Path, name: str) -> Path:
    """Where log_file puts NAME's log, creating nothing: a run's log may be in another machine's home."""
    stem = _UNSAFE.sub("_", name)[:_MAX_STEM]
    if stem != name or not stem or stem.startswith("."):
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        stem = f"{stem.lstrip('.')}~{digest}" if stem.lstrip(".") else f"~{digest}"
    return Path(home) / "logs" / f"{stem}.jsonl"


def ensure_configured() -> None:
    """If nobody configured structlog, send warnings and errors to stderr (structlog's default prints
    everything to stdout)."""
    global _configured
    if _configured or structlog.is_configured():
        _configured = True
        return
    configure(level="warning")


def configure(level: str = "warning", json_file: Path | None = None, stream: TextIO | None = None) -> None:
    """Console lines on stderr at `level` (lower with -v);
    with `json_file`, every event at info and above as JSON lines too."""
    global _configured
    threshold = getattr(logging, level.upper(), logging.WARNING)
    if _verbosity:
        threshold = min(threshold, logging.DEBUG if _verbosity > 1 else logging.INFO)
    console = structlog.dev.ConsoleRenderer(colors=False)
    json_renderer = structlog.processors.JSONRenderer()
    out = stream or sys.stderr
    handle = json_file.open("a", encoding="utf-8") if json_file else None

    def emit(logger: Any, method: str, event: MutableMapping[str, Any]) -> str:
        if handle is not None:
            handle.write(cast(str, json_renderer(logger, method, dict(event))) + "\n")  # json.dumps: text
            handle.flush()
        if logging.getLevelName(method.upper()) >= threshold:
            out.write(console(logger, method, dict(event)) + "\n")
        raise structlog.DropEvent

    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            emit,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(min(logging.INFO, threshold) if handle else threshold),
        cache_logger_on_first_use=False,
    )
    _configured = True
