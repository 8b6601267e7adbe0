"""The agent's memory: trajectory, execution log and key-value context, with a read-only view for policies."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel, Field, field_validator

from ..errors import ReadOnlyBeliefError

_MISSING = object()


def _refuse(*_: Any, **__: Any) -> None:
    raise ReadOnlyBeliefError(
        "belief is read-only here: policies and guards read it; actions change it through their results"
    )


class FrozenDict(dict):  # type: ignore[type-arg]
    """A dict that refuses writes: how nested belief values are held, so no reader can change them in place.

    Still a dict (JSON, pydantic, `==` and `dict(x)` work); `copy.deepcopy` gives plain, writable data.
    """

    __slots__ = ()
    # Every mutating method refuses, whatever its signature.
    __setitem__ = __delitem__ = __ior__ = _refuse  # type: ignore[assignment]
    update = pop = popitem = clear = setdefault = _refuse  # type: ignore[assignment]

    def __copy__(self) -> dict[Any, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return thaw(self)

    def __reduce__(self) -> Any:
        return (FrozenDict, (dict(self),))


class FrozenList(list):  # type: ignore[type-arg]
    """A list that refuses writes (see FrozenDict); `x + [...]` and `list(x)` give plain lists."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse  # type: ignore[assignment]
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return thaw(self)

    def __reduce__(self) -> Any:
        return (FrozenList, (list(self),))


_FROZEN = frozenset({str, int, float, bool, type(None), bytes, complex, FrozenDict, FrozenList, frozenset})


def freeze(value: Any) -> Any:
    """`value` with every dict and list in it made read-only (copied once, when it enters the belief).

    Scalars and already frozen values come back as they are, so freezing what is frozen costs a type check.
    Objects that are not plain data (possible only in runs without a store) are kept as they are.
    """
    if type(value) in _FROZEN:
        return value
    if isinstance(value, (Mapping, ReadOnlyMapping)):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, ReadOnlySequence)):
        return FrozenList([freeze(v) for v in value])
    if isinstance(value, tuple):
        items = [freeze(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, (set, frozenset)):
        return frozenset(value)
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def thaw(value: Any) -> Any:
    """Plain, writable data from frozen values (a deep copy of the containers)."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list):
        return [thaw(v) for v in value]
    if type(value) is tuple:
        return tuple(thaw(v) for v in value)
    return value


class TrajectoryEntry(BaseModel):
    tick: int
    state: str
    trigger: str | None = None
    source: str | None = None
    decided_by: str = "start"
    at: float


class LogEntry(BaseModel):
    tick: int
    action: str
    inputs: dict[str, Any] = Field(default_factory=dict)
    outputs: Any = None
    status: str = "ok"
    started: float
    duration_ms: float = 0.0
    tokens: int = 0
    cost: float = 0.0
    error: str | None = None
    #: Run again after a crash cut it short (started, result never recorded): what it does may have happened twice.
    repeated: bool = False

    @field_validator("inputs", "outputs")
    @classmethod
    def _frozen(cls, value: Any) -> Any:
        return freeze(value)

    __setattr__ = __delattr__ = _refuse  # entries are facts: the engine makes them, nobody edits them


TrajectoryEntry.__setattr__ = TrajectoryEntry.__delattr__ = _refuse  # type: ignore[method-assign]

_set = object.__setattr__
_TRAJECTORY_FIELDS = frozenset(TrajectoryEntry.model_fields)
_LOG_FIELDS = frozenset(LogEntry.model_fields)


def trajectory_entry(
    tick: int, state: str, trigger: str | None, source: str | None, decided_by: str, at: float
) -> TrajectoryEntry:
    """An entry from values the engine made itself:
    what `model_construct` gives, without its per-field alias walk (per tick)."""
    entry = object.__new__(TrajectoryEntry)
    _set(
        entry,
        "__dict__",
        {"tick": tick, "state": state, "trigger": trigger, "source": source, "decided_by": decided_by, "at": at},
    )
    _set(entry, "__pydantic_fields_set__", set(_TRAJECTORY_FIELDS))
    _set(entry, "__pydantic_extra__", None)
    _set(entry, "__pydantic_private__", None)
    return entry


def log_entry(
    tick: int,
    action: str,
    inputs: dict[str, Any],
    outputs: Any,
    status: str,
    started: float,
    duration_ms: float,
    tokens: int,
    cost: float,
    error: str | None,
    repeated: bool = False,
) -> LogEntry:
    """Like `trajectory_entry`; `inputs` and `outputs` must be frozen already (the engine's `_recorded` does it)."""
    entry = object.__new__(LogEntry)
    _set(
        entry,
        "__dict__",
        {
            "tick": tick,
            "action": action,
            "inputs": inputs,
            "outputs": outputs,
            "status": status,
            "started": started,
            "duration_ms": duration_ms,
            "tokens": tokens,
            "cost": cost,
            "error": error,
            "repeated": repeated,
        },
    )
    _set(entry, "__pydantic_fields_set__", set(_LOG_FIELDS))
    _set(entry, "__pydantic_extra__", None)
    _set(entry, "__pydantic_private__", None)
    return entry


class Belief(BaseModel):
    """Serialisable as JSON and back without loss; written only by the engine from action results."""

    trajectory: list[TrajectoryEntry] = Field(default_factory=list)
    log: list[LogEntry] = Field(default_factory=list)
    context: dict[str, Any] = Field(default_factory=dict)

    @field_validator("context")
    @classmethod
    def _frozen_values(cls, value: dict[str, Any]) -> dict[str, Any]:
        return {k: freeze(v) for k, v in value.items()}

    def view(self) -> BeliefView:
        return BeliefView(self)

    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str) -> Belief:
        return cls.model_validate_json(text)


def lookup(mapping: Any, dotted: str, default: Any = None) -> Any:
    """`a.b.0` into nested dicts and lists; a key that itself holds dots is tried whole first."""
    if isinstance(mapping, dict) and dotted in mapping:
        return mapping[dotted]
    current = mapping
    for part in dotted.split("."):
        if isinstance(current, dict):
            current = current.get(part, _MISSING)
        elif isinstance(current, (list, tuple)) and part.lstrip("-").isdigit():
            index = int(part)
            current = current[index] if -len(current) <= index < len(current) else _MISSING
        else:
            return default
        if current is _MISSING:
            return default
    return current


_WRITABLE = frozenset({dict, list, set, bytearray})


def _read(value: Any) -> Any:
    """Values put into belief.context from outside the engine are frozen when read; engine-written ones already are."""
    return freeze(value) if type(value) in _WRITABLE else value


class ReadOnlySequence:
    """A window onto a growing list that costs nothing to make and cannot be written."""

    __slots__ = ("_items",)
    _items: list[Any]

    def __init__(self, items: list[Any]):
        object.__setattr__(self, "_items", items)

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index: Any) -> Any:
        return self._items[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items)

    def recent(self, n: int) -> list[Any]:
        return self._items[-n:] if n > 0 else []

    def since(self, start: int) -> list[Any]:
        """The items after the first `start`: a reader that keeps its place reads only what was appended."""
        return self._items[start:]

    __setitem__ = __delitem__ = __setattr__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse


class ReadOnlyMapping:
    __slots__ = ("_data",)
    _data: dict[str, Any]

    def __init__(self, data: dict[str, Any]):
        object.__setattr__(self, "_data", data)

    def __getitem__(self, key: str) -> Any:
        return _read(self._data[key])

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: str, default: Any = None) -> Any:
        return _read(lookup(self._data, key, default))

    def keys(self) -> Any:
        return self._data.keys()

    def items(self) -> Iterator[tuple[str, Any]]:
        return ((k, _read(v)) for k, v in self._data.items())

    def values(self) -> Iterator[Any]:
        return (_read(v) for v in self._data.values())

    def to_dict(self) -> dict[str, Any]:
        """A deep copy, for prompts and templates that want plain, writable data."""
        copied: dict[str, Any] = thaw(self._data)
        return copied

    __setitem__ = __delitem__ = __setattr__ = _refuse
    update = pop = popitem = clear = setdefault = _refuse


class BeliefView:
    """What policies and guards see: belief through read-only windows, made once per belief."""

    __slots__ = ("trajectory", "log", "context")
    trajectory: ReadOnlySequence
    log: ReadOnlySequence
    context: ReadOnlyMapping

    def __init__(self, belief: Belief):
        object.__setattr__(self, "trajectory", ReadOnlySequence(belief.trajectory))
        object.__setattr__(self, "log", ReadOnlySequence(belief.log))
        object.__setattr__(self, "context", ReadOnlyMapping(belief.context))

    def get(self, key: str, default: Any = None) -> Any:
        return self.context.get(key, default)

    @property
    def state(self) -> str | None:
        return self.trajectory[-1].state if len(self.trajectory) else None

    __setattr__ = __delattr__ = _refuse
