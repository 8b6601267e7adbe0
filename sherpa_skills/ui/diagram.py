"""A run's machine as Mermaid, with the states it visited and the one it is in marked: the JSON API answers this
text, and the pages draw it on the server as SVG (ui/svg.py).

The drawing itself is `engine.diagram.to_mermaid` (what `sherpa-skills graph` prints); this only adds Mermaid classes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# The id to_mermaid gives a state path; reused so the classes land on the nodes it drew.
from ..engine.diagram import _id as mermaid_id
from ..engine.diagram import to_mermaid

CLASSES = (
    "    classDef visited fill:#dbeafe,stroke:#2563eb,color:#1e3a8a\n"
    "    classDef current fill:#f59e0b,stroke:#92400e,stroke-width:3px,color:#111827,font-weight:bold\n"
    "    classDef failed fill:#fecaca,stroke:#b91c1c,stroke-width:3px,color:#7f1d1d,font-weight:bold\n"
)


def highlighted_mermaid(machine: Any, visited: Iterable[str], current: str, *, failed: bool = False) -> str:
    """`to_mermaid(machine)` plus `visited` and `current` classes on the leaf states of the trajectory."""
    return highlight(to_mermaid(machine), machine.leaves, visited, current, failed=failed)


def highlight(
    mermaid: str, leaves: Iterable[str], visited: Iterable[str], current: str, *, failed: bool = False
) -> str:
    """A drawn machine (kept with the run, or drawn now) with the states visited marked, and the one it is in marked
    current, or failed when the run stopped there in error."""
    known = set(leaves)
    seen = [s for s in dict.fromkeys(visited) if s in known and s != current]
    lines = [mermaid.rstrip("\n"), CLASSES.rstrip("\n")]
    if seen:
        lines.append(f"    class {','.join(mermaid_id(s) for s in seen)} visited")
    if current in known:
        lines.append(f"    class {mermaid_id(current)} {'failed' if failed else 'current'}")
    return "\n".join(lines) + "\n"
