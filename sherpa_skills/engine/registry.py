"""Named, typed actions and guards: YAML names them, Python defines them, nothing is eval'ed."""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..errors import RegistryError


@dataclass(frozen=True)
class Internal:
    """Marks an argument read from belief context (by key) when the call does not give it."""

    key: str


class AnyArgs(BaseModel):
    """Arguments model for functions that declare none: any keyword is accepted."""

    model_config = ConfigDict(extra="allow")


@dataclass
class ActionResult:
    """What an action hands back: its outputs and the context keys it changes."""

    outputs: Any = None
    context: dict[str, Any] = field(default_factory=dict)
    status: str = "ok"
    tokens: int = 0
    cost: float = 0.0
    llm_calls: int = 0


@dataclass(frozen=True)
class ActionDef:
    name: str
    fn: Callable[..., Any]
    args_model: type[BaseModel]
    internal: dict[str, str]
    side_effects: bool
    is_async: bool
    description: str
    shell_fields: tuple[str, ...] = ()
    #: `check(view) -> JSON-able features` of the environment the action depends on (a price table's version, a
    #: schema's hash): recorded when the action runs, compared by a replay before it follows,
    # so it refuses a changed world.
    check: Callable[[Any], Any] | None = None
    #: The argument the action feeds its shell command's stdin: no template there where the command runs it as code.
    stdin_field: str | None = None


@dataclass
class ActionContext:
    """What an action may know about the run it acts in; belief is read-only here too."""

    view: Any
    state: str
    tick: int
    run_id: str | None = None
    workdir: Path = field(default_factory=Path.cwd)
    model: str | None = None
    emit: Callable[[dict[str, Any]], None] | None = None
    registry: Registry | None = None
    home: Path | None = None
    agent: str | None = None  # the acting agent's identity (Agent.name): who writes to and reads shared memory
    llm: Any = None  # the workflow's `llm:` settings (LLMSpec), for actions that call a model
    # Values known to be secret (an action adds the values of environment variables it passes on); the agent
    # replaces them in everything it records from then on: outputs, context, log entries, errors.
    secrets: set[str] = field(default_factory=set)


_SCALARS = (str, int, float, bool, type(None))
_NOT_PLAIN = object()


def _plain_copy(value: Any) -> Any:
    """A copy of `value` when it is already what its JSON reads back as (str keys, no tuples, no subclasses, no NaN),
    else `_NOT_PLAIN`."""
    kind = type(value)
    if kind in _SCALARS:
        return value if kind is not float or value == value else _NOT_PLAIN  # NaN: left to json
    if kind is dict:
        if any(type(key) is not str for key in value):
            return _NOT_PLAIN
        out = {}
        for key in sorted(value):  # the key order the JSON round trip gives, so logs and prompts read the same
            out[key] = copied = _plain_copy(value[key])
            if copied is _NOT_PLAIN:
                return _NOT_PLAIN
        return out
    if kind is list:
        items = [_plain_copy(item) for item in value]
        return _NOT_PLAIN if any(item is _NOT_PLAIN for item in items) else items
    return _NOT_PLAIN


def observe_features(definition: ActionDef, view: Any) -> Any:
    """What the action's check observes now, as plain JSON, so recorded and observed features compare alike;
    raises what the check raises.
    Features that are plain JSON already (the usual versions and flags) are copied without the JSON round trip: it
    checks every replayed call."""
    assert definition.check is not None
    features = definition.check(view)
    plain = _plain_copy(features)
    return plain if plain is not _NOT_PLAIN else json.loads(json.dumps(features, sort_keys=True, default=str))


def unknown_args(model: type[BaseModel], args: dict[str, Any]) -> list[str]:
    """Argument names a call gives that its model does not take (none when the model accepts any)."""
    if model.model_config.get("extra") == "allow":
        return []
    return [key for key in args if key not in model.model_fields]


@dataclass(frozen=True)
class GuardDef:
    name: str
    fn: Callable[..., bool]
    args_model: type[BaseModel]
    description: str


def _args_model(fn: Callable[..., Any], given: type[BaseModel] | None) -> type[BaseModel]:
    if given is not None:
        return given
    params = list(inspect.signature(fn).parameters.values())
    if params:
        hint = typing.get_type_hints(fn).get(params[0].name)
        if isinstance(hint, type) and issubclass(hint, BaseModel) and hint is not BaseModel:
            return hint
    return AnyArgs


def _internal_fields(model: type[BaseModel]) -> dict[str, str]:
    return {
        name: meta.key
        for name, info in model.model_fields.items()
        for meta in info.metadata
        if isinstance(meta, Internal)
    }


def _doc(fn: Callable[..., Any], description: str) -> str:
    return description or (inspect.getdoc(fn) or "").split("\n", 1)[0]


class Registry:
    """Actions and guards by name; a child registry sees its parent's names too."""

    def __init__(self, parent: Registry | None = None):
        self.parent = parent
        self._actions: dict[str, ActionDef] = {}
        self._guards: dict[str, GuardDef] = {}
        self._functions: dict[str, Callable[..., Any]] = {}

    def child(self) -> Registry:
        return Registry(self)

    def action(
        self,
        name: str | None = None,
        *,
        args: type[BaseModel] | None = None,
        side_effects: bool = False,
        description: str = "",
        replace: bool = False,
        shell_fields: tuple[str, ...] = (),
        check: Callable[[Any], Any] | None = None,
        stdin_field: str | None = None,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register `fn(args, ctx) -> dict | ActionResult | None` (sync or async).

        `shell_fields` names arguments that are shell commands: their templates shell-quote every value.
        `stdin_field` names the argument fed to that command's stdin: a template there is refused at load where the
        command reads its stdin as code (`sh`, `python3 -`, `ssh host`).
        `check(view)` returns the features of the environment the action depends on (JSON-able); they are recorded
        with each call, and a replayed procedure diverges when they differ from the recorded ones.
        """
        if check is not None and (not callable(check) or inspect.iscoroutinefunction(check)):
            raise RegistryError(
                f"action '{name or '?'}': check must be a plain function check(view) -> features, got {check!r}"
            )

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            action_name = name or fn.__name__
            if action_name in self._actions and not replace:
                raise RegistryError(f"action '{action_name}' is already registered (pass replace=True to override)")
            model = _args_model(fn, args)
            self._actions[action_name] = ActionDef(
                action_name,
                fn,
                model,
                _internal_fields(model),
                side_effects,
                inspect.iscoroutinefunction(fn),
                _doc(fn, description),
                tuple(shell_fields),
                check,
                stdin_field,
            )
            return fn

        return register

    def guard(
        self,
        name: str | None = None,
        *,
        args: type[BaseModel] | None = None,
        description: str = "",
        replace: bool = False,
    ) -> Callable[[Callable[..., bool]], Callable[..., bool]]:
        """Register `fn(view, args) -> bool`: a pure check over the read-only belief."""

        def register(fn: Callable[..., bool]) -> Callable[..., bool]:
            guard_name = name or fn.__name__
            if guard_name in self._guards and not replace:
                raise RegistryError(f"guard '{guard_name}' is already registered (pass replace=True to override)")
            params = list(inspect.signature(fn).parameters.values())
            model = args
            if model is None and len(params) > 1:
                hint = typing.get_type_hints(fn).get(params[1].name)
                model = (
                    hint if isinstance(hint, type) and issubclass(hint, BaseModel) and hint is not BaseModel else None
                )
            self._guards[guard_name] = GuardDef(guard_name, fn, model or AnyArgs, _doc(fn, description))
            return fn

        return register

    def function(
        self, name: str | None = None, *, replace: bool = False
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a plain Python function for the built-in `call` action: `fn(**kwargs) -> JSON-able value`."""

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            function_name = name or fn.__name__
            if function_name in self._functions and not replace:
                raise RegistryError(f"function '{function_name}' is already registered (pass replace=True to override)")
            self._functions[function_name] = fn
            return fn

        return register

    def get_function(self, name: str) -> Callable[..., Any]:
        registry: Registry | None = self
        while registry is not None:
            if name in registry._functions:
                return registry._functions[name]
            registry = registry.parent
        raise RegistryError(
            f"unknown function '{name}'; registered functions: {', '.join(self.function_names()) or 'none'}"
        )

    def function_names(self) -> list[str]:
        names = set(self._functions) | (set(self.parent.function_names()) if self.parent else set())
        return sorted(names)

    def find_action(self, name: str) -> ActionDef | None:
        found = self._actions.get(name)
        if found is None and self.parent is not None:
            return self.parent.find_action(name)
        return found

    def find_guard(self, name: str) -> GuardDef | None:
        found = self._guards.get(name)
        if found is None and self.parent is not None:
            return self.parent.find_guard(name)
        return found

    def get_action(self, name: str) -> ActionDef:
        found = self.find_action(name)
        if found is None:
            raise RegistryError(f"unknown action '{name}'; known actions: {', '.join(self.action_names())}")
        return found

    def action_names(self) -> list[str]:
        names = set(self._actions) | (set(self.parent.action_names()) if self.parent else set())
        return sorted(names)

    def guard_names(self) -> list[str]:
        names = set(self._guards) | (set(self.parent.guard_names()) if self.parent else set())
        return sorted(names)


#: The process-wide registry that built-ins and `@action`/`@guard` register into.
default_registry = Registry()

#: Modules that register the built-in guards and actions. Imported by name on first use, like plugins,
#: so the engine has no import edge to the actions that are built on it.
BUILTIN_MODULES = ("sherpa_skills.engine.guards", "sherpa_skills.actions")


@functools.cache
def load_builtins() -> None:
    """Register the built-in guards and actions on the default registry (once per process)."""
    for module in BUILTIN_MODULES:
        importlib.import_module(module)


action = default_registry.action
guard = default_registry.guard
function = default_registry.function


def registered_tools(registry: Any = None) -> list[Any]:
    """The actions in a registry, as tools."""
    from ..semantic.tool_index import ToolSpec

    load_builtins()
    registry = registry or default_registry
    tools = []
    for name in registry.action_names():
        definition = registry.get_action(name)
        keywords = list(definition.args_model.model_fields)
        tools.append(ToolSpec(name=name, description=definition.description, keywords=keywords))
    return tools
