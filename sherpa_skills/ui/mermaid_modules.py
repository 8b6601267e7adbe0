"""The Mermaid modules a state diagram needs, for the pages to preload all at once (`<link rel="modulepreload">`).

Imported one by one, the module build's chunks arrive as a waterfall (each module's imports are found only once it has
arrived); named up front, they come in parallel. Found from the vendored files' own static imports, from the entry and
the two chunks drawing a state diagram takes (its diagram and its layout).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

VENDOR = Path(__file__).parent / "static" / "vendor" / "mermaid"
ENTRY = "mermaid.esm.min.mjs"
DRAWING = ("stateDiagram-v2-", "dagre-")  # what our diagrams load besides the core
_STATIC = re.compile(r'(?:from|import)\s*"(\./[^"]+\.mjs)"')
_DYNAMIC = re.compile(r'import\("(\./[^"]+\.mjs)"\)')


@lru_cache(maxsize=1)
def preload() -> tuple[str, ...]:
    """URLs under /static of every module a state diagram loads, the entry first (empty if the files are missing)."""
    if not (VENDOR / ENTRY).is_file():
        return ()
    seen: dict[Path, None] = {}
    todo = [VENDOR / ENTRY]
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file():
            continue
        seen[path] = None
        text = path.read_text(encoding="utf-8")
        found = _STATIC.findall(text) + [d for d in _DYNAMIC.findall(text) if Path(d).name.startswith(DRAWING)]
        todo += [(path.parent / name).resolve() for name in found]
    root = VENDOR.parent.parent
    return tuple("/static/" + p.relative_to(root.resolve()).as_posix() for p in seen)
