"""The agent's memory: trajectory, execution log and key-value context, with a read-only view for policies."""

from __future__ import annotations

from typing import Any, Iterator

from pydantic import BaseModel, Field

from ..errors import ReadOnlyBeliefError

_MISSING = object()


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


class Belief(BaseModel):
    """Serialisable as JSON and back without loss; written only by the engine from action results."""

    trajectory: list[TrajectoryEntry] = Field(default_factory=list)
    log: list[LogEntry] = Field(default_factory=list)
    context: dict[str, Any] = Field(default_factory=dict)

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


def _refuse(*_: Any, **__: Any) -> None:
    raise ReadOnlyBeliefError("belief is read-only here: policies and guards read it; actions change it through their results")


class ReadOnlySequence:
    """A window onto a growing list that costs nothing to make and cannot be written."""

    __slots__ = ("_items",)

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

    __setitem__ = __delitem__ = __setattr__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse


class ReadOnlyMapping:
    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]):
        object.__setattr__(self, "_data", data)

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: str, default: Any = None) -> Any:
        return lookup(self._data, key, default)

    def keys(self) -> Any:
        return self._data.keys()

    def items(self) -> Any:
        return self._data.items()

    def values(self) -> Any:
        return self._data.values()

    def to_dict(self) -> dict[str, Any]:
        """A deep copy, for prompts and templates that want plain data."""
        import copy

        return copy.deepcopy(self._data)

    __setitem__ = __delitem__ = __setattr__ = _refuse
    update = pop = popitem = clear = setdefault = _refuse


class BeliefView:
    """What policies and guards see: belief through read-only windows, made once per belief."""

    __slots__ = ("trajectory", "log", "context")

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
