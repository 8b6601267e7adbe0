"""Built-in guards: pure checks over the read-only belief, usable by name from YAML and from rules."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, field_validator

from .registry import default_registry


class KeyArgs(BaseModel):
    key: str


class KeyValueArgs(BaseModel):
    key: str
    value: Any = None


class KeyNumberArgs(BaseModel):
    """A comparison needs the number to compare with:
    a missing `value` is a load error, not a guard that never passes."""

    key: str
    value: float


class KeyValuesArgs(BaseModel):
    key: str
    values: list[Any]


class KeyPatternArgs(BaseModel):
    key: str
    pattern: str

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:  # pydantic only turns ValueError into a validation problem
            raise ValueError(f"pattern {value!r} is not a valid regular expression: {exc}") from None
        return value


@default_registry.guard("context_true")
def context_true(view: Any, args: KeyArgs) -> bool:
    """The context value at `key` is truthy."""
    return bool(view.context.get(args.key))


@default_registry.guard("context_false")
def context_false(view: Any, args: KeyArgs) -> bool:
    """The context value at `key` is missing or falsy."""
    return not view.context.get(args.key)


@default_registry.guard("context_exists")
def context_exists(view: Any, args: KeyArgs) -> bool:
    """A value is stored at `key` (dotted paths reach into nested values)."""
    return view.context.get(args.key, _ABSENT) is not _ABSENT


@default_registry.guard("context_equals")
def context_equals(view: Any, args: KeyValueArgs) -> bool:
    """The context value at `key` equals `value`."""
    equal: bool = view.context.get(args.key) == args.value
    return equal


@default_registry.guard("context_in")
def context_in(view: Any, args: KeyValuesArgs) -> bool:
    """The context value at `key` is one of `values`."""
    return view.context.get(args.key) in args.values


@default_registry.guard("context_lt")
def context_lt(view: Any, args: KeyNumberArgs) -> bool:
    """The number at `key` (0 when missing) is below `value`: loop counters."""
    return _number(view.context.get(args.key, 0)) < _number(args.value)


@default_registry.guard("context_gt")
def context_gt(view: Any, args: KeyNumberArgs) -> bool:
    """The number at `key` (0 when missing) is above `value`."""
    return _number(view.context.get(args.key, 0)) > _number(args.value)


@default_registry.guard("context_matches")
def context_matches(view: Any, args: KeyPatternArgs) -> bool:
    """The text at `key` matches the regular expression `pattern` (searched, not anchored)."""
    value = view.context.get(args.key)
    return value is not None and re.search(args.pattern, str(value)) is not None


@default_registry.guard("last_action_ok")
def last_action_ok(view: Any, args: Any = None) -> bool:
    """The most recent logged action finished with status ok."""
    return len(view.log) > 0 and view.log[-1].status == "ok"


@default_registry.guard("last_action_failed")
def last_action_failed(view: Any, args: Any = None) -> bool:
    """The most recent logged action did not finish with status ok."""
    return len(view.log) > 0 and view.log[-1].status != "ok"


_ABSENT = object()


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")
