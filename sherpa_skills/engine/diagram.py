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
    lines += machine_lines(machine)
    return "\n".join(lines) + "\n"


def machine_lines(machine: CompiledMachine, prefix: str = "", indent: str = "    ") -> list[str]:
    """The states and transitions of one machine;
    `prefix` keeps ids apart when several machines share a diagram (a team).

    A final state ends the run, so no transition is drawn out of it (a `source: "*"` one included).
    """
    spec = machine.spec
    lines: list[str] = []
    finals: set[str] = set()

    def sid(path: str) -> str:
        return _id(prefix + path)

    def block(states: dict[str, StateSpec], parent: str, initial: str | None, pad: str) -> None:
        if initial is not None:
            lines.append(f"{pad}[*] --> {sid(_join(parent, initial))}")
        for name, state in states.items():
            path = _join(parent, name)
            tag = " (waiting)" if state.waiting else ""
            lines.append(f'{pad}state "{_label(name + tag)}" as {sid(path)}')
            if state.states:
                lines.append(f"{pad}state {sid(path)} {{")
                block(state.states, path, state.initial, pad + "    ")
                lines.append(f"{pad}}}")
            if state.final:
                finals.add(path)
                lines.append(f"{pad}{sid(path)} --> [*]")

    block(spec.states, "", spec.initial, indent)
    seen: set[tuple[str, str, str]] = set()

    def edge(source: str, dest: str, trigger: str) -> None:
        if source in finals or (source, dest, trigger) in seen:
            return
        seen.add((source, dest, trigger))
        lines.append(f"{indent}{sid(source)} --> {sid(dest)} : {trigger}")

    for edges in machine.edges:
        for e in edges:
            if e.dest is None:
                continue
            if e.source == "*":
                # A transition from anywhere: drawn from each top-level state that can still move.
                for top in spec.states:
                    if top != e.dest:
                        edge(top, e.dest, e.trigger)
                continue
            edge(e.source, e.dest, e.trigger)
    return lines


def _join(parent: str, name: str) -> str:
    return f"{parent}{PATH_SEP}{name}" if parent else name
