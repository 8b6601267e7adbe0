"""A drawn machine read back: the states, nesting, transitions and classes of the Mermaid `stateDiagram-v2` text the
engine writes (`engine.diagram.to_mermaid`, `agents.diagram.team_to_mermaid`, plus `ui.diagram.highlight`'s classes).

Runs and team tasks keep that text as their drawing, old ones included, so the view draws from it rather than from a
second record. Only the subset those writers produce is read; any other line is skipped, never an error (a record
can be old or tampered with).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ROOT = ""
PSEUDO = "[*]"  # Mermaid's start/end marker; real ids never hold brackets

_LABEL = re.compile(r'state "(.*)" as (\S+)')
_BLOCK = re.compile(r"state (\S+) \{")
_EDGE = re.compile(r"(\S+) --> (\S+)(?: : (.*))?")
_CLASS = re.compile(r"class (\S+) (\w+)")


@dataclass
class State:
    id: str
    label: str
    parent: str  # the compound state it is drawn in (ROOT: the diagram itself)
    kind: str = "state"  # "state", "start" or "end"
    compound: bool = False


@dataclass
class Transition:
    source: str
    dest: str
    label: str


@dataclass
class Chart:
    states: dict[str, State] = field(default_factory=dict)
    transitions: list[Transition] = field(default_factory=list)
    classes: dict[str, list[str]] = field(default_factory=dict)  # state id -> its classes, in the order written

    def children(self, parent: str) -> list[str]:
        return [s.id for s in self.states.values() if s.parent == parent]

    def ancestors(self, state: str) -> list[str]:
        """The compound states around `state`, outermost first (ROOT first)."""
        chain = []
        at = self.states[state].parent
        while at != ROOT and at in self.states and at not in chain:
            chain.append(at)
            at = self.states[at].parent
        return [ROOT, *reversed(chain)]


def start_id(parent: str) -> str:
    return f"{PSEUDO}start:{parent}"


def end_id(parent: str) -> str:
    return f"{PSEUDO}end:{parent}"


def structure(text: str) -> str:
    """The text without its class lines: what the layout depends on (a run's marks change, its machine does not)."""
    return "\n".join(line for line in text.splitlines() if not _is_style(line.strip()))


def _is_style(line: str) -> bool:
    return line.startswith("classDef ") or _CLASS.fullmatch(line) is not None


def parse(text: str) -> Chart:
    chart = Chart()
    stack = [ROOT]
    edges: list[tuple[str, str, str, str]] = []  # source, dest, label, the block it was written in

    def declare(sid: str, label: str | None = None) -> State:
        state = chart.states.get(sid)
        if state is None:
            state = chart.states[sid] = State(sid, sid if label is None else label, stack[-1])
        elif label is not None:
            state.label = label
        return state

    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("%%") or line == "stateDiagram-v2" or line.startswith("classDef "):
            continue
        if line == "}":
            if len(stack) > 1:
                stack.pop()
        elif m := _LABEL.fullmatch(line):
            declare(m[2], m[1])
        elif m := _BLOCK.fullmatch(line):
            state = declare(m[1])
            if state.id not in stack:  # a block naming itself inside itself would nest forever
                state.compound = True
                stack.append(state.id)
        elif m := _EDGE.fullmatch(line):
            edges.append((m[1], m[2], (m[3] or "").strip(), stack[-1]))
        elif m := _CLASS.fullmatch(line):
            for sid in m[1].split(","):
                chart.classes.setdefault(sid, []).append(m[2])
    for source, dest, label, block in edges:
        if source == PSEUDO and dest == PSEUDO:
            continue
        if source == PSEUDO:
            source = start_id(block)
            chart.states.setdefault(source, State(source, "", block, kind="start"))
        if dest == PSEUDO:
            dest = end_id(block)
            chart.states.setdefault(dest, State(dest, "", block, kind="end"))
        for sid in (source, dest):
            chart.states.setdefault(sid, State(sid, sid, ROOT))
        chart.transitions.append(Transition(source, dest, label))
    _break_parent_cycles(chart)
    return chart


def _break_parent_cycles(chart: Chart) -> None:
    """A state whose parents lead back to itself (only a tampered text does this) is moved to the top."""
    for state in chart.states.values():
        seen = {state.id}
        at = state.parent
        while at != ROOT:
            if at in seen or at not in chart.states:
                state.parent = ROOT
                break
            seen.add(at)
            at = chart.states[at].parent
