"""Diagrams drawn on the server (ui/statechart.py, ui/layered.py, ui/svg.py): the SVG is well-formed, every text in it
is inert whatever a name holds, nested states sit inside their compound's frame, nothing overlaps, the run's marks
land on the right states, a tampered drawing still draws, and a large machine draws fast."""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from sherpa_skills.engine.diagram import to_mermaid
from sherpa_skills.engine.workflow import load_workflow
from sherpa_skills.ui.diagram import highlight
from sherpa_skills.ui.layered import LABEL_FONT, Box, layout, text_width
from sherpa_skills.ui.statechart import parse
from sherpa_skills.ui.svg import statechart_svg

ROOT = Path(__file__).resolve().parents[2]
SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = "</text><script>alert(1)</script><text>"


def _tree(text: str) -> ET.Element:
    return ET.fromstring(str(statechart_svg(text)))


def _marked(root: ET.Element, mark: str) -> list[str]:
    return [g.get("data-state", "") for g in root.iter(f"{SVG}g") if mark in (g.get("class") or "").split()[1:]]


def _overlap(a: Box, b: Box) -> bool:
    return a.x < b.x + b.w and b.x < a.x + a.w and a.y < b.y + b.h and b.y < a.y + a.h


def _inside(inner: Box, outer: Box) -> bool:
    return (
        outer.x <= inner.x
        and outer.y <= inner.y
        and inner.x + inner.w <= outer.x + outer.w
        and inner.y + inner.h <= outer.y + outer.h
    )


def _triage() -> Any:
    return load_workflow(ROOT / "examples" / "support_triage" / "workflow.yaml").machine


def test_hostile_names_come_out_as_text() -> None:
    """A state, a compound, a trigger and an id holding markup (a team's event or topic names are free text, and a
    kept drawing can be tampered with) are text in a well-formed SVG: no element but the drawing's own."""
    text = (
        "stateDiagram-v2\n"
        f'    state "{HOSTILE}" as a\n'
        f'    state "{HOSTILE} & co" as box\n'
        "    state box {\n"
        "        [*] --> inner\n"
        '        state "<img src=x onerror=alert(2)>" as inner\n'
        "    }\n"
        f"    a --> box : {HOSTILE}\n"
        '    a --> b"onload="alert(3) : x\n'
        "    class a current\n"
    )
    root = _tree(text)
    tags = {e.tag.removeprefix(SVG) for e in root.iter()}
    assert tags <= {"svg", "defs", "marker", "path", "g", "rect", "text", "circle", "title"}, tags
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert HOSTILE in texts and f"{HOSTILE} & co" in texts and "<img src=x onerror=alert(2)>" in texts
    assert all(not k.startswith("on") for e in root.iter() for k in e.attrib), "an event handler attribute"
    assert 'b"onload="alert(3)' in {g.get("data-state") for g in root.iter(f"{SVG}g")}
    assert _marked(root, "current") == ["a"]


def test_the_runs_marks_land_on_its_states_and_nothing_else_is_a_class() -> None:
    machine = _triage()
    drawn = highlight(to_mermaid(machine), machine.leaves, ["intake", "triage/assess"], "respond/approval")
    root = _tree(drawn + "    class intake evil\n    class sent visited onload\n")
    assert _marked(root, "current") == ["respond__approval"]
    assert set(_marked(root, "visited")) == {"intake", "triage__assess"}  # "evil" is no mark: not a class
    failed = _tree(highlight(to_mermaid(machine), machine.leaves, ["intake"], "triage/billing", failed=True))
    assert _marked(failed, "failed") == ["triage__billing"] and _marked(failed, "current") == []


def test_nested_states_sit_in_their_frames_and_nothing_overlaps() -> None:
    """Each compound's frame holds its children; no two states (frames of siblings included) overlap; each label
    lies on no state; every transition is drawn, ending on its destination's border."""
    chart = parse(to_mermaid(_triage()))
    laid = layout(chart)
    for state in chart.states.values():
        if state.parent:
            assert _inside(laid.boxes[state.id], laid.boxes[state.parent]), state.id
    for parent in {s.parent for s in chart.states.values()}:
        kids = chart.children(parent)
        for n, a in enumerate(kids):
            for b in kids[n + 1 :]:
                assert not _overlap(laid.boxes[a], laid.boxes[b]), (a, b)
    leaves = [s.id for s in chart.states.values() if not s.compound]
    for route in laid.routes:
        t = chart.transitions[route.transition]
        if route.label and t.label:
            half = text_width(t.label, LABEL_FONT) / 2
            label = Box(route.label[0] - half, route.label[1] - 8, 2 * half, 16)
            assert not any(_overlap(label, laid.boxes[s]) for s in leaves), t
        end, dest = route.points[-1], laid.boxes[t.dest]
        on_border = (abs(end[1] - dest.y) < 0.5 or abs(end[1] - dest.y - dest.h) < 0.5) and (
            dest.x <= end[0] <= dest.x + dest.w
        )
        on_side = abs(end[0] - dest.x) < 0.5 or abs(end[0] - dest.x - dest.w) < 0.5
        assert on_border or on_side, (t, end, dest)
    assert sorted(r.transition for r in laid.routes) == list(range(len(chart.transitions)))
    root = _tree(to_mermaid(_triage()))
    assert len([p for p in root.iter(f"{SVG}path") if p.get("class") == "transition"]) == len(chart.transitions)
    assert {g.get("data-state") for g in root.iter(f"{SVG}g") if g.get("class") == "cluster"} == {"triage", "respond"}


def test_every_text_is_readable_at_its_natural_size() -> None:
    root = _tree(to_mermaid(_triage()))
    sizes = [float(e.get("font-size", 0)) for e in root.iter() if e.get("font-size")]
    assert sizes and min(sizes) >= 11
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"


def test_self_loops_and_transitions_into_a_compounds_own_state_are_drawn() -> None:
    text = (
        'stateDiagram-v2\n    [*] --> a\n    state "a" as a\n    state "box" as box\n    state box {\n'
        '        [*] --> box__one\n        state "one" as box__one\n    }\n'
        "    a --> a : retry\n    a --> a : again\n    box --> box__one : reset\n    box__one --> box : up\n"
        "    a --> box : go\n"
    )
    chart = parse(text)
    laid = layout(chart)
    assert sorted(r.transition for r in laid.routes) == list(range(len(chart.transitions)))
    drawn = str(statechart_svg(text))
    assert "retry, again" in drawn and ">reset<" in drawn and ">up<" in drawn


def test_a_tampered_drawing_still_draws() -> None:
    """Unbalanced braces, a block inside itself, unknown lines, an edge to nowhere: drawn, never a traceback."""
    for text in (
        "stateDiagram-v2\n    state a {\n        state a {\n    }\n    }\n    }\n    a --> a\n",
        'garbage\n    x --> y : z\n    state "only a label" as q\n    state q {\n    state r {\n',
        "stateDiagram-v2\n    [*] --> [*]\n    class , current\n",
        "",
    ):
        ET.fromstring(str(statechart_svg(text)) or "<svg/>")


def _big_workflow(tmp_path: Path, groups: int = 8, per_group: int = 6) -> Path:
    """About fifty states: compound groups of states in a chain, a retry back to the start of each group, and a
    cancel from every group to the end."""
    lines = ["name: big", "initial: g0", "states:"]
    transitions = []
    for g in range(groups):
        lines += [f"  g{g}:", "    initial: s0", "    states:"]
        lines += [f"      s{s}: {{}}" for s in range(per_group)]
        for s in range(per_group - 1):
            transitions.append(f"  - {{trigger: next_{g}_{s}, source: g{g}/s{s}, dest: g{g}/s{s + 1}}}")
        transitions.append(f"  - {{trigger: retry_{g}, source: g{g}/s{per_group - 1}, dest: g{g}/s0}}")
        dest = f"g{g + 1}" if g + 1 < groups else "done"
        transitions.append(f"  - {{trigger: finish_{g}, source: g{g}/s{per_group - 1}, dest: {dest}}}")
        transitions.append(f"  - {{trigger: cancel, source: g{g}, dest: cancelled}}")
    lines += ["  done: {final: true}", "  cancelled: {final: true}", "transitions:", *transitions]
    path = tmp_path / "big.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_machine_of_fifty_nested_states_draws_fast_and_clean(tmp_path: Path) -> None:
    machine = load_workflow(_big_workflow(tmp_path)).machine
    text = to_mermaid(machine)
    chart = parse(text)
    assert len([s for s in chart.states.values() if s.kind == "state"]) >= 50
    started = time.perf_counter()
    laid = layout(chart)
    took = time.perf_counter() - started
    assert took < 2.0, took  # measured ~0.1 s; the page caches it per machine (bench/RESULTS.md has the figure)
    for parent in {s.parent for s in chart.states.values()}:
        kids = chart.children(parent)
        for n, a in enumerate(kids):
            for b in kids[n + 1 :]:
                assert not _overlap(laid.boxes[a], laid.boxes[b]), (a, b)
    visited = [leaf for leaf in machine.leaves][:30] * 100  # a run of 3,000 steps: marks only, the layout is kept
    drawn = highlight(text, machine.leaves, visited, machine.leaves[31])
    started = time.perf_counter()
    svg = str(statechart_svg(drawn))
    assert time.perf_counter() - started < 1.0
    assert len(re.findall(r'class="node visited"', svg)) == 30 and svg.count('class="node current"') == 1
