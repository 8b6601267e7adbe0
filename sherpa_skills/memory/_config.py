"""Where shared memory's companion lives: the home's `companion` folder, or a `chroma run` server named in config.

HOME/config.yaml::

    memory:
      chroma: 127.0.0.1:8000      # or http://host:port; absent = embedded chromadb in HOME/companion

One file per home, beside store.db: every process that opens the home (CLI, agents, heartbeat) finds the same
index, and nothing depends on the environment a process happened to start with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..home import resolve_home

if TYPE_CHECKING:
    from ..semantic.companion import Companion
    from ..semantic.embeddings import Embedder

CONFIG_FILE = "config.yaml"
_TARGET = re.compile(r"^(?:http://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(?P<port>\d{1,5})/?$")


@dataclass(frozen=True)
class ChromaServer:
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def parse_target(value: object, where: str = "memory.chroma") -> ChromaServer:
    match = _TARGET.match(value.strip()) if isinstance(value, str) else None
    if match is None or not 0 < int(match["port"]) < 65536:
        raise UsageError(
            f"{where}: {value!r} is not a chroma server address; write HOST:PORT, e.g. 127.0.0.1:8000 "
            f"(start one with `chroma run --path DIR --host 127.0.0.1 --port 8000`)"
        )
    return ChromaServer(match["host"].strip("[]"), int(match["port"]))


def chroma_server(home: str | Path | None = None) -> ChromaServer | None:
    """The server configured for this home's shared memory, or None for the embedded folder."""
    path = resolve_home(home) / CONFIG_FILE
    if not path.is_file():
        return None
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise UsageError(f"{path}: cannot read it as YAML: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: expected a mapping of sections (memory: ...), got {type(data).__name__}")
    section = data.get("memory")
    if section is None:
        return None
    if not isinstance(section, dict):
        raise UsageError(f"{path}: `memory` must be a mapping, e.g. `memory: {{chroma: 127.0.0.1:8000}}`")
    unknown = sorted(set(section) - {"chroma"})
    if unknown:
        raise UsageError(f"{path}: unknown key(s) under `memory`: {', '.join(map(str, unknown))}; known: chroma")
    value = section.get("chroma")
    return None if value in (None, "") else parse_target(value, f"{path}: memory.chroma")


def open_companion(home: str | Path | None = None, *, embedder: Embedder | None = None) -> Companion:
    """The Companion for this home's shared memory (nothing is opened until it is first used)."""
    from ..semantic.companion import Companion

    server = chroma_server(home)
    if server is not None:
        return Companion(host=server.host, port=server.port, embedder=embedder)
    return Companion(resolve_home(home) / "companion", embedder=embedder)
