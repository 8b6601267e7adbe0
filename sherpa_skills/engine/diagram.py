"""Draw a workflow as Mermaid `stateDiagram-v2`, nested states as nested blocks."""

from __future__ import annotations

from .compiler import CompiledMachine
from .spec import PATH_SEP, StateSpec


def _id(path: str) -> str:
    return path.replace(PATH_SEP, "__").replace("-", "_")


def _label(text: str) -> str:
    return text.replace('"', "'").replace(":", " ").replace("\n", " ")


def to_mermaid(machine: CompiledMachine) -> str:
    spec = machine.spec
    lines = ["stateDiagram-v2"]
    if spec.description:
        lines.append(f"    %% {_label(spec.description)}")

    def block(states: dict[str, StateSpec], parent: str, initial: str | None, indent: str) -> None:
        if initial is not None:
            lines.append(f"{indent}[*] --> {_id(_join(parent, initial))}")
        for name, state in states.items():
            path = _join(parent, name)
            tag = " (waiting)" if state.waiting else ""
            lines.append(f'{indent}state "{_label(name + tag)}" as {_id(path)}')
            if state.states:
                lines.append(f"{indent}state {_id(path)} {{")
                block(state.states, path, state.initial, indent + "    ")
                lines.append(f"{indent}}}")
            if state.final:
                lines.append(f"{indent}{_id(path)} --> [*]")

    block(spec.states, "", spec.initial, "    ")
    seen: set[tuple[str, str, str]] = set()
    for edges in machine.edges:
        for e in edges:
            if e.dest is None:
                continue
            source = "[*]" if e.source == "*" else _id(e.source)
            if source == "[*]":
                # A transition from anywhere: drawn from each top-level state.
                for top in spec.states:
                    key = (_id(top), _id(e.dest), e.trigger)
                    if key not in seen and top != e.dest:
                        seen.add(key)
                        lines.append(f"    {key[0]} --> {key[1]} : {e.trigger}")
                continue
            key = (source, _id(e.dest), e.trigger)
            if key not in seen:
                seen.add(key)
                lines.append(f"    {source} --> {key[1]} : {e.trigger}")
    return "\n".join(lines) + "\n"


def _join(parent: str, name: str) -> str:
    return f"{parent}{PATH_SEP}{name}" if parent else name
