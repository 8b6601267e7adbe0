"""A machine written the way the `transitions` library writes it, rewritten into our form before validation.

`states: [a, {name: b, children: [...]}]` becomes `states: {a: {}, b: {states: {...}}}`, and a transition list
`[trigger, source, dest]` becomes a mapping. Lines move with the values, so problems still name FILE:LINE; what
fits neither form is reported showing the expected one.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..errors import Problem
from ..yaml_source import Loc, Located

#: The positional form of a transition, as `Machine.add_transition` takes it.
LIST_FIELDS = ("trigger", "source", "dest", "conditions", "unless", "before", "after")
_LIST_FORM = "[trigger, source, dest] (then conditions, unless, before, after)"


def normalise(source: Located) -> tuple[Located, list[Problem]]:
    """The same file in our form; `source` itself is returned when it is in our form already."""
    form = _Rewriter(source)
    data = form.value(source.data, (), (), machine=True)
    if not form.changed:
        return source, form.problems
    # `replace` keeps what a Located subclass adds (a team file's overlay sends some problems to the team file).
    return dataclasses.replace(source, data=data, lines=form.lines), form.problems


class _Rewriter:
    def __init__(self, source: Located):
        self.source = source
        self.lines: dict[Loc, int] = {}
        self.problems: list[Problem] = []
        self.changed = False

    def moved(self, old: Loc, new: Loc, line_of: Loc | None = None) -> None:
        self.lines[new] = self.source.line(line_of if line_of is not None else old)

    def value(self, data: Any, old: Loc, new: Loc, machine: bool = False, children: bool = False) -> Any:
        """Copy `data`. In the workflow itself and in state bodies (`machine`), a `states` list and transitions in list
        form are rewritten (a context value that happens to be called `transitions` is left alone); in a state written
        as a list entry (`children`), `children` is its `states`."""
        self.moved(old, new)
        if isinstance(data, dict):
            out: dict[str, Any] = {}
            for key, item in data.items():
                at, name = (*old, key), ("states" if children and key == "children" else key)
                to = (*new, name)
                if not machine:
                    out[name] = self.value(item, at, to)
                elif name == "states" and isinstance(item, list):
                    out[name] = self.states(item, at, to)
                elif name == "states" and isinstance(item, dict):
                    self.moved(at, to)
                    out[name] = {
                        child: self.value(body, (*at, child), (*to, child), machine=True)
                        for child, body in item.items()
                    }
                elif name == "transitions" and isinstance(item, list):
                    self.moved(at, to)
                    kept: list[Any] = []  # a transition that fits no form is reported and left out, so checking goes on
                    for i, t in enumerate(item):
                        converted = self.transition(t, (*at, i), (*to, len(kept)))
                        if converted is not None:
                            kept.append(converted)
                    out[name] = kept
                else:
                    out[name] = self.value(item, at, to)
            return out
        if isinstance(data, list):
            return [self.value(item, (*old, i), (*new, i)) for i, item in enumerate(data)]
        return data

    def states(self, items: list[Any], old: Loc, new: Loc) -> dict[str, Any]:
        self.changed = True
        self.moved(old, new)
        out: dict[str, Any] = {}
        for i, item in enumerate(items):
            where = (*old, i)
            if isinstance(item, str):
                out[item] = {}
                self.moved(where, (*new, item))
            elif isinstance(item, dict) and isinstance(item.get("name"), str):
                name = item["name"]
                body = {k: v for k, v in item.items() if k != "name"}
                out[name] = self.value(body, where, (*new, name), machine=True, children=True)
            else:
                self.problems.append(
                    self.source.problem(
                        where,
                        "a state in a list is a name or a mapping with 'name' "
                        "(and 'children', 'final', 'on_enter'...): - {name: b, children: [c, d]}",
                    )
                )
        return out

    def transition(self, item: Any, old: Loc, new: Loc) -> Any:
        if not isinstance(item, dict):
            self.changed = True
        if isinstance(item, list):
            if not 3 <= len(item) <= len(LIST_FIELDS):
                self.problems.append(
                    self.source.problem(
                        old, f"a transition written as a list is {_LIST_FORM}; this one has {len(item)} items"
                    )
                )
                return None
            out = {}
            for name, value, i in zip(LIST_FIELDS, item, range(len(item)), strict=False):
                out[name] = self.value(value, (*old, i), (*new, name))
            self.moved(old, new)
            return out
        if not isinstance(item, dict):
            self.problems.append(
                self.source.problem(
                    old, f"a transition is a mapping {{trigger: ..., source: ..., dest: ...}} or a list {_LIST_FORM}"
                )
            )
            return None
        return self.value(item, old, new)
