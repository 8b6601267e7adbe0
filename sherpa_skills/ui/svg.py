"""A machine's chart drawn on the server as inline SVG: states as boxes, compound states as frames around their
children, transitions as arrows with their trigger names, and the run's marks (visited, current, failed) as classes
the stylesheet colours. The page needs no script to show it, and every text in it is escaped.
"""

from __future__ import annotations

import html
import re
from functools import lru_cache

from markupsafe import Markup

from .layered import LABEL_FONT, NODE_FONT, TITLE_FONT, TITLE_H, Layout, layout, text_width
from .statechart import Chart, parse, structure

FONT = "ui-monospace, SFMono-Regular, Menlo, Consolas, 'DejaVu Sans Mono', monospace"
MARKS = ("visited", "current", "failed")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _text(value: str) -> str:
    """Escaped for an attribute or a text node; control characters (not allowed in XML) dropped."""
    return html.escape(_CONTROL.sub("", value), quote=True)


def _n(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


@lru_cache(maxsize=64)
def _laid_out(shape: str) -> tuple[Chart, Layout]:
    # The layout depends on the machine only: a run's page, each of its steps and each live update reuse it.
    chart = parse(shape)
    return chart, layout(chart)


def _name(chart: Chart, sid: str) -> str:
    """How a transition's tooltip names a state: as drawn (the start and end markers by what they are)."""
    state = chart.states[sid]
    return state.kind if state.kind != "state" else state.label


def _path(points: list[tuple[float, float]]) -> str:
    """Through the bends, rounded: straight to the middle of each segment, a curve round each bend."""
    (x0, y0), rest = points[0], points[1:]
    parts = [f"M{_n(x0)},{_n(y0)}"]
    for n, (x, y) in enumerate(rest[:-1]):
        nx, ny = rest[n + 1]
        parts.append(f"Q{_n(x)},{_n(y)} {_n((x + nx) / 2)},{_n((y + ny) / 2)}")
    x, y = rest[-1]
    parts.append(f"L{_n(x)},{_n(y)}")
    return " ".join(parts)


def statechart_svg(text: str | None, title: str = "state diagram") -> Markup:
    """The chart of `text` (the engine's Mermaid stateDiagram-v2, with `class` lines for the marks) as an <svg>."""
    if not text:
        return Markup("")
    chart, laid = _laid_out(structure(text))
    written = parse("\n".join(line for line in text.splitlines() if line.strip().startswith("class "))).classes
    # Only our marks become classes, the last written winning (highlight writes current/failed after visited).
    marks = {sid: next((c for c in reversed(cs) if c in MARKS), "") for sid, cs in written.items()}
    w, h = laid.width, laid.height
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="statechart" viewBox="0 0 {_n(w)} {_n(h)}" '
        f'width="{_n(w)}" height="{_n(h)}" font-family="{_text(FONT)}" font-size="{NODE_FONT}" role="img" '
        f'aria-label="{_text(title)}">',
        '<defs><marker id="statechart-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z"/></marker></defs>',
    ]
    # Frames first, outermost first, so inner frames, arrows and states are drawn over them.
    frames = sorted(
        (s for s in chart.states.values() if s.compound and chart.children(s.id)),
        key=lambda s: len(chart.ancestors(s.id)),
    )
    for state in frames:
        b = laid.boxes[state.id]
        mark = marks.get(state.id)
        out.append(
            f'<g class="cluster{" " + mark if mark else ""}" data-state="{_text(state.id)}">'
            f'<rect x="{_n(b.x)}" y="{_n(b.y)}" width="{_n(b.w)}" height="{_n(b.h)}" rx="8"/>'
            f'<text x="{_n(b.x + 10)}" y="{_n(b.y + TITLE_H / 2 + 4)}" font-size="{TITLE_FONT}">'
            f"{_text(state.label)}</text></g>"
        )
    labels = []
    for route in laid.routes:
        t = chart.transitions[route.transition]
        out.append(
            f'<path class="transition" d="{_path(route.points)}" marker-end="url(#statechart-arrow)">'
            f"<title>{_text(_name(chart, t.source))} → {_text(_name(chart, t.dest))}"
            f"{': ' + _text(t.label) if t.label else ''}</title></path>"
        )
        if route.label and t.label:
            shown = (
                ", ".join(
                    chart.transitions[r.transition].label
                    for r in laid.routes
                    if r.loop and r.points == route.points and chart.transitions[r.transition].label
                )
                if route.loop
                else t.label
            )
            x, y = route.label
            half = text_width(shown, LABEL_FONT) / 2 + 3
            labels.append(
                f'<g class="transition-label"><rect x="{_n(x - half)}" y="{_n(y - 9)}" width="{_n(2 * half)}" '
                f'height="18" rx="3"/><text x="{_n(x)}" y="{_n(y + 4)}" font-size="{LABEL_FONT}" '
                f'text-anchor="middle">{_text(shown)}</text></g>'
            )
    for state in chart.states.values():
        if state.compound and chart.children(state.id):
            continue
        b = laid.boxes[state.id]
        if state.kind == "start":
            out.append(f'<circle class="start" cx="{_n(b.cx)}" cy="{_n(b.cy)}" r="7"/>')
            continue
        if state.kind == "end":
            out.append(
                f'<g class="end"><circle cx="{_n(b.cx)}" cy="{_n(b.cy)}" r="7"/>'
                f'<circle class="end-dot" cx="{_n(b.cx)}" cy="{_n(b.cy)}" r="4"/></g>'
            )
            continue
        mark = marks.get(state.id)
        out.append(
            f'<g class="node{" " + mark if mark else ""}" data-state="{_text(state.id)}">'
            f'<rect x="{_n(b.x)}" y="{_n(b.y)}" width="{_n(b.w)}" height="{_n(b.h)}" rx="6"/>'
            f'<text x="{_n(b.cx)}" y="{_n(b.cy + 5)}" text-anchor="middle">{_text(state.label)}</text></g>'
        )
    out += labels
    out.append("</svg>")
    return Markup("".join(out))
