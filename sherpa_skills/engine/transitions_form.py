"""A machine written the way the `transitions` library writes it, rewritten into our form before validation.

`states: [a, {name: b, children: [...]}]` becomes `states: {a: {}, b: {states: {...}}}`, and a transition list
`[trigger, source, dest]` becomes a mapping. Lines move with the values, so problems still name FILE:LINE; what
fits neither form is reported showing the expected one.
"""

from __future__ import annotations

from typing import Any

from ..errors import Problem
from ..yaml_source import Loc, Located

#: The positional form of a transition, as `Machine.add_transition` takes it.
LIST_FIELDS = ("trigger", "source", "dest", "conditions", "unless", "before", "after")
_LIST_FORM = "[trigger, source, dest] (then conditions, unless, before, after)"


def normalise(source: Located) -> tuple[Located, list[Problem]]:
    """The same file in our form; `source` is left as it was."""
    form = _Rewriter(source)
    data = form.value(source.data, (), ())
    return Located(data, source.file, form.lines), form.problems


class _Rewriter:
    def __init__(self, source: Located):
        self.source = source
        self.lines: dict[Loc, int] = {}
        self.problems: list[Problem] = []

    def moved(self, old: Loc, new: Loc, line_of: Loc | None = None) -> None:
        self.lines[new] = self.source.line(line_of if line_of is not None else old)

    def value(self, data: Any, old: Loc, new: Loc) -> Any:
        """Copy `data`, rewriting every `states` list and `transitions` entry in list form on the way."""
        self.moved(old, new)
        if isinstance(data, dict):
            out: dict[str, Any] = {}
            for key, item in data.items():
                if key == "states" and isinstance(item, list):
                    out[key] = self.states(item, (*old, key), (*new, key))
                elif key == "transitions" and isinstance(item, list):
                    kept: list[Any] = []  # a transition that fits no form is reported and left out, so checking goes on
                    for i, t in enumerate(item):
                        converted = self.transition(t, (*old, key, i), (*new, key, len(kept)))
                        if converted is not None:
                            kept.append(converted)
                    out[key] = kept
                    self.moved((*old, key), (*new, key))
                else:
                    out[key] = self.value(item, (*old, key), (*new, key))
            return out
        if isinstance(data, list):
            return [self.value(item, (*old, i), (*new, i)) for i, item in enumerate(data)]
        return data

    def states(self, items: list[Any], old: Loc, new: Loc) -> dict[str, Any]:
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
                if "children" in body:
                    body["states"] = body.pop("children")
                    old_children = (*where, "children")
                else:
                    old_children = (*where, "states")
                state = {}
                for key, value in body.items():
                    source_loc = old_children if key == "states" else (*where, key)
                    if key == "states" and isinstance(value, list):
                        state[key] = self.states(value, source_loc, (*new, name, key))
                    else:
                        state[key] = self.value(value, source_loc, (*new, name, key))
                out[name] = state
                self.moved(where, (*new, name))
            else:
                self.problems.append(self.source.problem(where, "a state in a list is a name or a mapping with 'name' "
                                                                "(and 'children', 'final', 'on_enter'...): - {name: b, children: [c, d]}"))
        return out

    def transition(self, item: Any, old: Loc, new: Loc) -> Any:
        if isinstance(item, list):
            if not 3 <= len(item) <= len(LIST_FIELDS):
                self.problems.append(self.source.problem(old, f"a transition written as a list is {_LIST_FORM}; this one has {len(item)} items"))
                return None
            out = {}
            for name, value, i in zip(LIST_FIELDS, item, range(len(item))):
                out[name] = self.value(value, (*old, i), (*new, name))
            self.moved(old, new)
            return out
        if not isinstance(item, dict):
            self.problems.append(self.source.problem(old, "a transition is a mapping {trigger: ..., source: ..., dest: ...} "
                                                          f"or a list {_LIST_FORM}"))
            return None
        return self.value(item, old, new)
