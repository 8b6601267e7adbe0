"""Draw a team file as one Mermaid `stateDiagram-v2`:
each agent's machine as a block, topics, who hears and who emits what."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..engine.diagram import _id, _label, machine_lines
from ..engine.spec import PATH_SEP, ActionCall, StateSpec, TransitionSpec, WorkflowSpec

if TYPE_CHECKING:  # a team keeps its own drawing when it runs: team imports this module
    from .team import Team


def team_to_mermaid(team: Team) -> str:
    spec = team.spec
    lines = [
        "stateDiagram-v2",
        f"    %% team {_label(spec.name)}" + (f"  {_label(spec.description)}" if spec.description else ""),
    ]
    topics = sorted(
        {t for m in team.members.values() for t in m.subscribe}
        | {e.topic for e in spec.initial_events() if e.topic}
        | {target for m in team.members.values() for kind, target, _ in emitted(m.workflow.spec) if kind == "topic"}
    )
    for topic in topics:
        lines.append(f'    state "topic {_label(topic)}" as {_topic(topic)}')
    for event in spec.initial_events():
        target = _topic(event.topic) if event.topic else _id(event.recipient or "")
        lines.append(f"    [*] --> {target} : {_label(event.name)}")
    for name, member in team.members.items():
        workflow = member.workflow.spec.name
        lines.append(f'    state "{_label(name if workflow == name else f"{name} ({workflow})")}" as {_id(name)}')
        lines.append(f"    state {_id(name)} {{")
        lines += machine_lines(member.workflow.machine, prefix=f"{name}{PATH_SEP}", indent="        ")
        lines.append("    }")
    for name, member in team.members.items():
        for topic in member.subscribe:
            lines.append(f"    {_topic(topic)} --> {_id(name)} : heard by")
        for kind, target, event_name in emitted(member.workflow.spec):
            dest = _topic(target) if kind == "topic" else _id(target)
            lines.append(f"    {_id(name)} --> {dest} : emits {_label(event_name)}")
    return "\n".join(lines) + "\n"


def emitted(spec: WorkflowSpec) -> list[tuple[str, str, str]]:
    """(topic|recipient, where, event name) for each `emit` action with literal names, in the order they appear."""
    found: list[tuple[str, str, str]] = []
    for call in _calls(spec.states, spec.transitions):
        if call.name != "emit":
            continue
        name = str(call.args.get("name", "?"))
        for kind in ("topic", "recipient"):
            target = call.args.get(kind)
            if isinstance(target, str) and (kind, target, name) not in found:
                found.append((kind, target, name))
    return found


def _calls(states: dict[str, StateSpec], transitions: list[TransitionSpec]) -> Iterator[ActionCall]:
    for t in transitions:
        yield from (*t.before, *t.after)
    for state in states.values():
        yield from (*state.on_enter, *state.on_exit)
        yield from _calls(state.states, state.transitions)


def _topic(name: str) -> str:
    return "topic__" + "".join(c if c.isalnum() else "_" for c in name)
