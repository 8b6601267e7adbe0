"""A layered (Sugiyama) layout of a machine's chart, nested states inside their compound's box, top to bottom.

Each compound state is laid out on its own, from the inside out: its children are placed, its box is sized to hold
them, and at its parent's level it is one node. Per level: cycles broken by turning a depth-first search's back edges
round, longest-path layering with every transition two layers long (its label gets a slot of its own in the middle
layer, so no label lies on a state or on another label), barycenter ordering sweeps keeping the order with the
fewest crossings, and x positions as close to their neighbours' as the order allows (a weighted isotonic regression,
exact). A transition between nested states is drawn between their absolute positions through its level's slots.

Why our own: the charts are small (tens of states), the nesting is what matters, and grandalf (the one pure-Python
Sugiyama on PyPI) lays out flat graphs only, needs pyparsing, and is GPL/EPL licensed; see README "Diagrams".
"""

from __future__ import annotations

import unicodedata
from bisect import bisect_right, insort
from dataclasses import dataclass, field

from .statechart import ROOT, Chart

NODE_FONT = 14  # px at the drawing's natural size
LABEL_FONT = 12
TITLE_FONT = 13
CHAR = 0.62  # a monospace glyph's advance, in ems (DejaVu Sans Mono 0.60, Menlo 0.60, Consolas 0.55)
NODE_H = 32
NODE_PAD = 14
PSEUDO = 14  # the start and end circles
LABEL_H = 18
TITLE_H = 26
FRAME_PAD = 14
GAP = 28  # between states side by side
SLOT_GAP = 10  # between label slots / bends side by side
RANK_GAP = 10  # between layers
LOOP = 22  # a self-transition's loop, out of the state's right side
MARGIN = 8
SWEEPS = 12


def text_width(text: str, size: float) -> float:
    wide = sum(1 for c in text if unicodedata.east_asian_width(c) in "WF")
    return (len(text) + wide) * size * CHAR


@dataclass
class Box:
    x: float
    y: float
    w: float
    h: float

    @property
    def cx(self) -> float:
        return self.x + self.w / 2

    @property
    def cy(self) -> float:
        return self.y + self.h / 2


@dataclass
class Route:
    transition: int  # index into the chart's transitions
    points: list[tuple[float, float]]
    label: tuple[float, float] | None  # the label's centre
    loop: bool = False


@dataclass
class Layout:
    width: float
    height: float
    boxes: dict[str, Box] = field(default_factory=dict)
    routes: list[Route] = field(default_factory=list)


@dataclass
class _Level:
    """One compound's children placed relative to its inner origin, and its transitions' slots."""

    width: float
    height: float
    centres: dict[str, tuple[float, float]]
    slots: dict[int, list[tuple[float, float]]]  # transition -> its bends, source to dest
    labels: dict[int, tuple[float, float]]


def layout(chart: Chart) -> Layout:
    placed: dict[str, tuple[float, float]] = {}  # a compound's inner size
    levels: dict[str, _Level] = {}
    per_level: dict[str, list[tuple[int, str, str]]] = {}
    loops: dict[str, list[int]] = {}
    frames: list[int] = []  # a transition between a compound and a state inside it
    for i, t in enumerate(chart.transitions):
        a = [*chart.ancestors(t.source), t.source]
        b = [*chart.ancestors(t.dest), t.dest]
        k = 0
        while k < min(len(a), len(b)) and a[k] == b[k]:
            k += 1
        if k == len(a) and k == len(b):
            loops.setdefault(t.source, []).append(i)
        elif k == len(a) or k == len(b):
            frames.append(i)
        else:
            per_level.setdefault(a[k - 1], []).append((i, a[k], b[k]))

    def size(sid: str) -> tuple[float, float]:
        state = chart.states[sid]
        if state.kind != "state":
            return (PSEUDO, PSEUDO)
        if state.compound and chart.children(sid):
            w, h = placed[sid]
            return (max(w, text_width(state.label, TITLE_FONT)) + 2 * FRAME_PAD, h + TITLE_H + FRAME_PAD)
        return (max(text_width(state.label, NODE_FONT) + 2 * NODE_PAD, 48), NODE_H)

    def right(sid: str) -> float:
        labels = [chart.transitions[i].label for i in loops.get(sid, [])]
        return LOOP + 6 + text_width(", ".join(x for x in labels if x), LABEL_FONT) if labels else 0.0

    # Inside out: a compound's size is known once its children are placed.
    order: list[str] = []
    todo = [ROOT]
    while todo:
        at = todo.pop()
        order.append(at)
        todo += [c for c in chart.children(at) if chart.states[c].compound]
    for container in reversed(order):
        kids = chart.children(container)
        level = _place(
            kids, {k: size(k) for k in kids}, {k: right(k) for k in kids}, per_level.get(container, []), chart
        )
        levels[container] = level
        placed[container] = (level.width, level.height)

    out = Layout(levels[ROOT].width + 2 * MARGIN, levels[ROOT].height + 2 * MARGIN)
    origins = {ROOT: (float(MARGIN), float(MARGIN))}
    for container in order:
        ox, oy = origins[container]
        level = levels[container]
        for sid, (cx, cy) in level.centres.items():
            w, h = size(sid)
            box = out.boxes[sid] = Box(ox + cx - w / 2, oy + cy - h / 2, w, h)
            if sid in levels:
                inner = levels[sid]
                origins[sid] = (box.x + (w - inner.width) / 2, box.y + TITLE_H)
    for container in order:
        ox, oy = origins[container]
        level = levels[container]
        for i, bends in level.slots.items():
            t = chart.transitions[i]
            points = [(ox + x, oy + y) for x, y in bends]
            label = level.labels.get(i)
            start = _port(out.boxes[t.source], points[0])
            end = _port(out.boxes[t.dest], points[-1])
            out.routes.append(Route(i, [start, *points, end], (ox + label[0], oy + label[1]) if label else None))
    for sid, indices in loops.items():
        box = out.boxes[sid]
        x, top, bottom = box.x + box.w, box.cy - 7, box.cy + 7
        loop = [(x, top), (x + LOOP, top - 4), (x + LOOP, bottom + 4), (x, bottom)]
        labels = [chart.transitions[i].label for i in indices if chart.transitions[i].label]
        where = (x + LOOP + 4 + text_width(", ".join(labels), LABEL_FONT) / 2, box.cy) if labels else None
        for n, i in enumerate(indices):
            out.routes.append(Route(i, loop, where if n == 0 else None, loop=True))
    for i in frames:
        t = chart.transitions[i]
        outside, within = (t.source, t.dest) if t.source in chart.ancestors(t.dest) else (t.dest, t.source)
        frame, state = out.boxes[outside], out.boxes[within]
        # From the frame's nearer side straight to the state: the transition enters (or leaves) it from its compound.
        edge_x = frame.x + 2 if state.cx < frame.cx else frame.x + frame.w - 2
        side = (state.x if state.cx < frame.cx else state.x + state.w, state.cy)
        points = [(edge_x, state.cy), side] if outside == t.source else [side, (edge_x, state.cy)]
        mid = ((edge_x + side[0]) / 2, state.cy - LABEL_H / 2 - 2)
        out.routes.append(Route(i, points, mid if t.label else None))
    return out


def _port(box: Box, toward: tuple[float, float]) -> tuple[float, float]:
    """Where a line to `toward` leaves `box`: its bottom or top, straight under or over the point where it can be."""
    x, y = toward
    inset = min(8.0, box.w / 2)
    clamped = min(max(x, box.x + inset), box.x + box.w - inset)
    if y >= box.y + box.h:
        return (clamped, box.y + box.h)
    if y <= box.y:
        return (clamped, box.y)
    return (box.x + box.w if x > box.cx else box.x, min(max(y, box.y), box.y + box.h))


def _place(
    kids: list[str],
    sizes: dict[str, tuple[float, float]],
    right: dict[str, float],
    edges: list[tuple[int, str, str]],
    chart: Chart,
) -> _Level:
    # 1. Cycles: a depth-first search from the start marker, then in the order written; back edges are turned round.
    succ: dict[str, list[tuple[int, str]]] = {k: [] for k in kids}
    for i, u, v in edges:
        succ[u].append((i, v))
    starts = [k for k in kids if chart.states[k].kind == "start"] + [k for k in kids if chart.states[k].kind != "start"]
    mark: dict[str, int] = {}
    found: list[str] = []
    turned: set[int] = set()
    for root in starts:
        if root in mark:
            continue
        mark[root] = 1
        found.append(root)
        stack = [(root, iter(succ[root]))]
        while stack:
            node, it = stack[-1]
            for i, v in it:
                if mark.get(v) == 1:
                    turned.add(i)
                elif v not in mark:
                    mark[v] = 1
                    found.append(v)
                    stack.append((v, iter(succ[v])))
                    break
            else:
                mark[node] = 2
                stack.pop()
    dag = [(i, v, u) if i in turned else (i, u, v) for i, u, v in edges]

    # 2. Layers: longest path, each transition two layers long; a state nothing leads to sits just over its first.
    into: dict[str, list[str]] = {k: [] for k in kids}
    out_of: dict[str, list[str]] = {k: [] for k in kids}
    for _, a, b in dag:
        into[b].append(a)
        out_of[a].append(b)
    rank: dict[str, int] = {}
    waiting = {k: len(into[k]) for k in kids}
    ready = [k for k in found if waiting[k] == 0]
    while ready:
        node = ready.pop(0)
        rank[node] = max((rank[p] + 2 for p in into[node]), default=0)
        for b in out_of[node]:
            waiting[b] -= 1
            if waiting[b] == 0:
                ready.append(b)
    for k in found:
        if not into[k] and out_of[k] and chart.states[k].kind != "start":
            rank[k] = min(rank[b] for b in out_of[k]) - 2
    low = min(rank.values(), default=0)
    rank = {k: r - low for k, r in rank.items()}

    # 3. Slots: a transition longer than one layer passes through one per layer; its label takes the middle one.
    width: dict[str, float] = {k: sizes[k][0] + right[k] for k in kids}
    height: dict[str, float] = {k: sizes[k][1] for k in kids}
    shift: dict[str, float] = {k: right[k] / 2 for k in kids}  # a loop widens a state on its right only
    vrank = dict(rank)
    seq: dict[str, float] = {k: float(n) for n, k in enumerate(found)}
    chains: dict[int, list[str]] = {}
    label_slot: dict[int, str] = {}
    links: list[tuple[str, str]] = []
    for i, a, b in dag:
        chain = [a]
        label = chart.transitions[i].label
        middle = rank[a] + 1 + 2 * ((rank[b] - rank[a] - 2) // 4)
        for r in range(rank[a] + 1, rank[b]):
            d = f"\0{i}:{r}"
            vrank[d] = r
            seq[d] = seq[a] + 0.5
            shown = label if r == middle else ""
            width[d] = text_width(shown, LABEL_FONT) + 8 if shown else 2.0
            height[d] = LABEL_H if shown else 0.0
            shift[d] = 0.0
            if shown:
                label_slot[i] = d
            chain.append(d)
        chain.append(b)
        links += list(zip(chain, chain[1:], strict=False))
        chains[i] = chain
    layers: dict[int, list[str]] = {}
    for v in sorted(vrank, key=lambda v: seq[v]):
        layers.setdefault(vrank[v], []).append(v)
    ranks = sorted(layers)
    up: dict[str, list[str]] = {v: [] for v in vrank}
    down: dict[str, list[str]] = {v: [] for v in vrank}
    for a, b in links:
        down[a].append(b)
        up[b].append(a)

    # 4. Order: barycenter sweeps, down then up, keeping the order with the fewest crossings.
    def crossings() -> int:
        total = 0
        for r in ranks[:-1]:
            pos = {v: n for n, v in enumerate(layers.get(r + 1, []))}
            pairs = sorted((n, pos[b]) for n, a in enumerate(layers[r]) for b in down[a] if b in pos)
            seen: list[int] = []
            for _, q in pairs:
                total += len(seen) - bisect_right(seen, q)
                insort(seen, q)
        return total

    best, best_layers = crossings(), {r: list(vs) for r, vs in layers.items()}
    for sweep in range(SWEEPS):
        if best == 0:
            break
        going_down = sweep % 2 == 0
        for r in ranks[1:] if going_down else ranks[-2::-1]:
            other = layers.get(r - 1 if going_down else r + 1, [])
            pos = {v: n for n, v in enumerate(other)}
            near = up if going_down else down
            keyed: dict[str, float] = {}
            for n, v in enumerate(layers[r]):
                found_at = [pos[w] for w in near[v] if w in pos]
                keyed[v] = (
                    sum(found_at) / len(found_at) if found_at else float(n)
                )  # nothing to follow: it keeps its place
            layers[r] = sorted(layers[r], key=keyed.__getitem__)
        now = crossings()
        if now < best:
            best, best_layers = now, {r: list(vs) for r, vs in layers.items()}
    layers = best_layers

    # 5. x: each state as near its neighbours as the order and the gaps allow.
    def gap(a: str, b: str) -> float:
        real = a in sizes and b in sizes
        return width[a] / 2 + width[b] / 2 + (GAP if real else SLOT_GAP)

    x: dict[str, float] = {}
    for r in ranks:
        at = 0.0
        for n, v in enumerate(layers[r]):
            if n:
                at += gap(layers[r][n - 1], v)
            x[v] = at
    for sweep in range(8):
        for r in ranks if sweep % 2 == 0 else ranks[::-1]:
            near = up if sweep % 2 == 0 else down
            if sweep >= 6:
                near = {v: up[v] + down[v] for v in layers[r]}
            vs = layers[r]
            wanted = []
            for v in vs:
                got = [x[other] for other in near[v]]
                wanted.append(sum(got) / len(got) if got else x[v])
            weights = [2.0 if v not in sizes else 1.0 for v in vs]
            gaps = [gap(vs[n - 1], vs[n]) for n in range(1, len(vs))]
            for v, value in zip(vs, _isotonic(wanted, weights, gaps), strict=True):
                x[v] = value
    left = min((x[v] - width[v] / 2 for v in x), default=0.0)
    far = max((x[v] + width[v] / 2 for v in x), default=0.0)

    # 6. y: each layer as tall as its tallest member.
    y: dict[str, float] = {}
    span: dict[int, tuple[float, float]] = {}
    top = 0.0
    for r in ranks:
        tall = max((height[v] for v in layers[r]), default=0.0)
        span[r] = (top, top + tall)
        for v in layers[r]:
            y[v] = top + tall / 2
        top += tall + RANK_GAP
    total_h = max(top - RANK_GAP, 0.0)

    def bends_of(d: str) -> list[tuple[float, float]]:
        # Beside a tall state (a compound's frame) a transition runs the layer's whole height, not across its corner.
        over, under = span[vrank[d]]
        if height[d] or under - over <= LABEL_H:
            return [(x[d] - left, y[d])]
        return [(x[d] - left, over), (x[d] - left, under)]

    centres = {k: (x[k] - left - shift[k], y[k]) for k in kids}
    slots: dict[int, list[tuple[float, float]]] = {}
    labels: dict[int, tuple[float, float]] = {}
    for i, _, _ in edges:
        bends = [p for d in chains[i][1:-1] for p in bends_of(d)]
        slots[i] = bends[::-1] if i in turned else bends
        if i in label_slot:
            d = label_slot[i]
            labels[i] = (x[d] - left, y[d])
    return _Level(far - left, total_h, centres, slots, labels)


def _isotonic(wanted: list[float], weights: list[float], gaps: list[float]) -> list[float]:
    """The positions nearest `wanted` (weighted least squares) that keep the order, each at least its gap from the
    one before: pool adjacent violators on positions less their cumulative gaps."""
    offsets = [0.0]
    for g in gaps:
        offsets.append(offsets[-1] + g)
    blocks: list[list[float]] = []  # [weighted sum, weight, count]
    for target, weight, offset in zip(wanted, weights, offsets, strict=True):
        blocks.append([(target - offset) * weight, weight, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, w, c = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += w
            blocks[-1][2] += c
    out: list[float] = []
    for s, w, c in blocks:
        out += [s / w] * int(c)
    return [value + offset for value, offset in zip(out, offsets, strict=True)]
