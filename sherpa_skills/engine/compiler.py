"""Compile a nested workflow spec into flat per-leaf tables, so a tick is a list walk, not a tree search.

Nested semantics are kept (and checked against `transitions`' HierarchicalMachine in the tests):
a transition declared on a parent is available in every descendant, the deepest declaration of a
trigger shadows its ancestors', and exit/entry actions run for exactly the states left and entered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from ..errors import Problem, ReadOnlyBeliefError, RunError, SherpaError
from ..yaml_source import Located
from .belief import freeze
from .registry import ActionDef, GuardDef, Registry, unknown_args
from .shell_template import ShellTemplate
from .spec import PATH_SEP, ActionCall, ArgumentSpec, GuardCall, StateSpec, TransitionSpec, WorkflowSpec

_WHOLE_EXPR = re.compile(r"^\s*\{\{(?P<expr>[^{}]*)\}\}\s*$")
_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "object": dict,
    "array": list,
}


# ---------------------------------------------------------------- argument values


@dataclass(slots=True)
class Dynamic:
    """An argument value computed at call time: from context, from a transition argument, or a template."""

    kind: str  # "context" | "arg" | "template" | "expr"
    payload: Any


_template_env: Any = None


def template_env() -> Any:
    """The sandboxed jinja2 environment for argument templates; shell commands use `shell_template` instead."""
    global _template_env
    if _template_env is None:
        from jinja2 import StrictUndefined
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        _template_env = ImmutableSandboxedEnvironment(undefined=StrictUndefined, autoescape=False)
    return _template_env


def _strict(expression: Any) -> Any:
    """A whole-value expression that fails on a missing name, as templates do, instead of quietly giving None."""
    from jinja2 import Undefined

    def evaluate(**variables: Any) -> Any:
        value = expression(**variables)
        if isinstance(value, Undefined):
            str(value)  # StrictUndefined raises its "'name' is undefined" error here
        return value

    return evaluate


def _compile_value(value: Any, shell: bool) -> Any:
    if isinstance(value, dict) and len(value) == 1:
        ((key, inner),) = value.items()
        if key == "from_context":
            return Dynamic("context", str(inner))
        if key == "from_arg":
            return Dynamic("arg", str(inner))
    if isinstance(value, str) and "{{" in value:
        if shell:  # every value escaped for the quoting it lands in; unsafe places refused here, at load
            return Dynamic("template", ShellTemplate(value))
        env = template_env()
        whole = _WHOLE_EXPR.match(value)
        if whole:
            return Dynamic("expr", _strict(env.compile_expression(whole.group("expr"), undefined_to_none=False)))
        return Dynamic("template", env.from_string(value))
    if isinstance(value, (dict, list)):
        # Mappings and lists (like run_machine's inputs) may hold references and templates at any depth.
        items = value.items() if isinstance(value, dict) else enumerate(value)
        compiled = {k: _compile_value(v, shell) for k, v in items}
        if any(isinstance(v, Dynamic) for v in compiled.values()):
            return Dynamic("nested", compiled if isinstance(value, dict) else [compiled[i] for i in range(len(value))])
    return value


# ---------------------------------------------------------------- compiled parts


@dataclass(slots=True)
class BoundGuard:
    name: str
    fn: Any
    args: BaseModel
    negate: bool


@dataclass(slots=True)
class BoundAction:
    """An action call ready to run: literal arguments checked at load, dynamic ones resolved per call."""

    definition: ActionDef
    literal: dict[str, Any]
    dynamic: dict[str, Dynamic]
    save_as: str | None
    static_args: BaseModel | None
    where: str

    @property
    def name(self) -> str:
        return self.definition.name


@dataclass(slots=True)
class Edge:
    """One transition as seen from one leaf state, with its whole action sequence precomputed."""

    trigger: str
    index: int
    source: str
    dest: str | None
    dest_leaf: int | None
    guards: tuple[BoundGuard, ...]
    actions: tuple[BoundAction, ...]
    description: str
    arguments: dict[str, ArgumentSpec]
    args_model: type[BaseModel]
    needs_args: bool
    exited: tuple[str, ...]
    entered: tuple[str, ...]


@dataclass
class CompiledMachine:
    """The flat form of a nested machine: leaves by index, each with its ordered outgoing edges."""

    name: str
    description: str
    leaves: list[str]
    leaf_index: dict[str, int]
    edges: list[tuple[Edge, ...]]
    waiting: list[bool]
    final: list[bool]
    initial_leaf: int
    initial_actions: tuple[BoundAction, ...]
    descriptions: dict[str, str]
    spec: WorkflowSpec
    all_paths: list[str] = field(default_factory=list)

    def available(self, leaf: int, view: Any) -> list[Edge]:
        """Edges whose source covers the leaf and whose guards pass; the deepest passing one per trigger."""
        out: list[Edge] = []
        seen: set[str] = set()
        for edge in self.edges[leaf]:
            if edge.trigger in seen:
                continue
            for g in edge.guards:
                try:
                    passed = bool(g.fn(view, g.args))
                except Exception as exc:  # a guard that writes belief or crashes fails the run, naming itself
                    raise _guard_failed(g, edge, exc) from exc
                if passed is g.negate:
                    break
            else:
                out.append(edge)
                seen.add(edge.trigger)
        return out

    def describe(self, leaf: int) -> str:
        """The descriptions of the leaf and its ancestors, outermost first."""
        path = self.leaves[leaf].split(PATH_SEP)
        parts = [self.descriptions.get(PATH_SEP.join(path[: i + 1]), "") for i in range(len(path))]
        return " / ".join(p for p in parts if p)


# ---------------------------------------------------------------- the compiler


class _Compiler:
    def __init__(self, spec: WorkflowSpec, source: Located | None, registry: Registry, file: str):
        self.spec = spec
        self.source = source
        self.registry = registry
        self.file = file
        self.problems: list[Problem] = []
        self.states: dict[str, StateSpec] = {}
        self.locs: dict[str, tuple[Any, ...]] = {}
        self.children: dict[str, list[str]] = {"": []}

    def problem(self, loc: tuple[Any, ...], message: str) -> None:
        line = self.source.line(loc) if self.source else 1
        self.problems.append(Problem(self.file, line, message))

    def args_loc(self, loc: tuple[Any, ...], name: str) -> tuple[Any, ...]:
        """Where a call's arguments sit in the YAML:
        under `args:`, or under the name in the `{name: {...}}` shorthand."""
        if self.source is not None and (*loc, "args") not in self.source.lines and (*loc, name) in self.source.lines:
            return (*loc, name)
        return (*loc, "args")

    # -- states
    def collect(self, states: dict[str, StateSpec], parent: str, loc: tuple[Any, ...]) -> None:
        for name, state in states.items():
            sloc = (*loc, "states", name)
            if not re.match(r"^[A-Za-z_][A-Za-z0-9_\-]*$", str(name)):
                self.problem(sloc, f"state name '{name}' must be letters, digits, _ and - (no '{PATH_SEP}')")
                continue
            path = f"{parent}{PATH_SEP}{name}" if parent else str(name)
            self.states[path] = state
            self.locs[path] = sloc
            self.children.setdefault(parent, []).append(path)
            self.children.setdefault(path, [])
            if state.states:
                if state.final or state.waiting:
                    self.problem(sloc, f"state '{path}' has substates, so it cannot be final or waiting (mark a leaf)")
                if state.initial is None:
                    self.problem(
                        sloc,
                        f"state '{path}' has substates but no 'initial'; add initial: one of {', '.join(state.states)}",
                    )
                elif state.initial not in state.states:
                    self.problem(
                        (*sloc, "initial"),
                        f"initial '{state.initial}' of state '{path}' is not one of its substates: "
                        f"{', '.join(state.states)}",
                    )
                self.collect(state.states, path, sloc)
            elif state.initial is not None:
                self.problem((*sloc, "initial"), f"state '{path}' has an initial but no substates")
            if state.final and state.waiting:
                self.problem(sloc, f"state '{path}' cannot be both final and waiting")

    def descend(self, path: str) -> str:
        """The leaf entered when `path` is entered: follow `initial` down."""
        state = self.states[path]
        while state.states:
            names = [n for n in state.states if f"{path}{PATH_SEP}{n}" in self.states]
            if not names:
                break
            # A missing or wrong `initial` is already reported; the first substate stands in so checking goes on.
            path = f"{path}{PATH_SEP}{state.initial if state.initial in names else names[0]}"
            state = self.states[path]
        return path

    def resolve(self, name: str, near: str) -> str | None:
        """A state path from an absolute path, or a name looked up among siblings, then ancestors' siblings."""
        if name in self.states:
            return name
        parts = near.split(PATH_SEP) if near else []
        while parts:
            parts.pop()
            candidate = PATH_SEP.join([*parts, name])
            if candidate in self.states:
                return candidate
        # The `transitions` library joins nested names with '_' (`on_dim`); taken only when that names one state.
        joined = [p for p in self.states if p.replace(PATH_SEP, "_") == name]
        return joined[0] if len(joined) == 1 else None

    # -- calls
    def bind_guard(self, call: GuardCall, loc: tuple[Any, ...], negate: bool) -> BoundGuard | None:
        definition: GuardDef | None = self.registry.find_guard(call.name)
        if definition is None:
            self.problem(loc, f"unknown guard '{call.name}'; known guards: {', '.join(self.registry.guard_names())}")
            return None
        unknown = unknown_args(definition.args_model, call.args)
        for key in unknown:
            self.problem(
                (*self.args_loc(loc, call.name), key),
                f"guard '{call.name}' has no argument '{key}'; it takes: "
                f"{', '.join(definition.args_model.model_fields) or 'none'}",
            )
        if unknown:
            return None
        try:
            args = definition.args_model.model_validate(call.args)
        except ValidationError as exc:
            self.problem(
                (*self.args_loc(loc, call.name), *exc.errors()[0]["loc"]), f"guard '{call.name}': {_first_error(exc)}"
            )
            return None
        return BoundGuard(call.name, definition.fn, args, negate)

    def bind_action(self, call: ActionCall, loc: tuple[Any, ...], where: str) -> BoundAction | None:
        definition = self.registry.find_action(call.name)
        if definition is None:
            self.problem(loc, f"unknown action '{call.name}'; known actions: {', '.join(self.registry.action_names())}")
            return None
        fields = definition.args_model.model_fields
        extra_ok = definition.args_model.model_config.get("extra") == "allow"
        literal: dict[str, Any] = {}
        dynamic: dict[str, Dynamic] = {}
        shell_fields = definition.shell_fields
        for key, value in call.args.items():
            if key not in fields and not extra_ok:
                self.problem(
                    (*self.args_loc(loc, call.name), key),
                    f"action '{call.name}' has no argument '{key}'; it takes: {', '.join(fields) or 'none'}",
                )
                continue
            try:
                compiled = _compile_value(value, key in shell_fields)
            except Exception as exc:  # jinja2 TemplateSyntaxError and friends
                self.problem(
                    (*self.args_loc(loc, call.name), key), f"action '{call.name}' argument '{key}': bad template: {exc}"
                )
                continue
            if isinstance(compiled, Dynamic):
                dynamic[key] = compiled
            else:
                literal[key] = compiled
        self.check_stdin(definition, call, loc)
        static_args = None
        # Missing fields may still come from the context or the transition at run time.
        missing = [
            n for n, f in fields.items() if f.is_required() and n not in literal and n not in definition.internal
        ]
        if dynamic or missing:
            self.check_literal_args(definition, literal, loc, call.name)
        else:
            try:
                static_args = definition.args_model.model_validate(literal)
                if definition.internal:
                    static_args = None
            except ValidationError as exc:
                self.problem(
                    (*self.args_loc(loc, call.name), *exc.errors()[0]["loc"]),
                    f"action '{call.name}': {_first_error(exc)}",
                )
        return BoundAction(definition, freeze(literal), dynamic, call.save_as, static_args, where)

    def check_stdin(self, definition: Any, call: Any, loc: tuple[Any, ...]) -> None:
        """A template in the stdin of a command that reads its stdin as code (`sh`, `python3 -`) would run its
        values: refused here, as a value in `sh -c "…"` is refused when rendered."""
        field, command = definition.stdin_field, call.args.get(next(iter(definition.shell_fields), ""))
        stdin = call.args.get(field) if field else None
        if not (isinstance(stdin, str) and "{{" in stdin and isinstance(command, str)):
            return
        from .shell_template import stdin_reader

        program = stdin_reader(command)
        if program is not None:
            self.problem(
                (*self.args_loc(loc, call.name), field),
                f"action '{call.name}' argument '{field}': {program} reads it as code, so a template value there "
                f"would run as a command; pass values as arguments instead (sh -s -- {{{{ value }}}} reads it as "
                '"$1")',
            )

    def check_literal_args(self, definition: Any, literal: dict[str, Any], loc: tuple[Any, ...], name: str) -> None:
        """The written-out arguments of a call that also has templates: each one's type checked now, as if alone,
        so `timeout_secs: "abc"` beside a template is a FILE:LINE problem, not a failed run."""
        try:
            definition.args_model.model_validate(literal)
        except ValidationError as exc:
            # Missing fields come from the templates at run time; whole-model checks need every field.
            errors = [e for e in exc.errors() if e["type"] != "missing" and e["loc"] and e["loc"][0] in literal]
            if errors:
                first = errors[0]
                self.problem(
                    (*self.args_loc(loc, name), *first["loc"]),
                    f"action '{name}': argument '{first['loc'][0]}': {first['msg'].removeprefix('Value error, ')}",
                )

    def bind_actions(self, calls: list[ActionCall], loc: tuple[Any, ...], where: str) -> list[BoundAction]:
        bound = [self.bind_action(c, (*loc, i), where) for i, c in enumerate(calls)]
        return [b for b in bound if b is not None]

    # -- transitions
    def declared_transitions(self) -> list[tuple[TransitionSpec, list[str], tuple[Any, ...], str]]:
        """Every transition with its resolved sources (top-level ones and those declared inside states)."""
        out = []
        for i, t in enumerate(self.spec.transitions):
            loc = ("transitions", i)
            out.append((t, self.resolve_sources(t, "", loc), loc, ""))
        for path, state in self.states.items():
            for i, t in enumerate(state.transitions):
                loc = (*self.locs[path], "transitions", i)
                sources = self.resolve_sources(t, path, loc) if t.source is not None else [path]
                out.append((t, sources, loc, path))
        return out

    def resolve_sources(self, t: TransitionSpec, near: str, loc: tuple[Any, ...]) -> list[str]:
        if t.source is None:
            self.problem(loc, f"transition '{t.trigger}' has no source (use a state path, a list of them, or '*')")
            return []
        resolved = []
        for s in t.sources():
            if s == "*":
                resolved.append("")
                continue
            path = self.resolve(s, near)
            if path is None:
                self.problem(
                    (*loc, "source"),
                    f"transition '{t.trigger}': source '{s}' is not a state; states: {', '.join(sorted(self.states))}",
                )
            else:
                resolved.append(path)
        return resolved

    def run(self) -> CompiledMachine | None:
        spec = self.spec
        self.collect(spec.states, "", ())
        if spec.initial not in self.states:
            self.problem(
                ("initial",), f"initial state '{spec.initial}' is not defined; states: {', '.join(spec.states)}"
            )
            return None
        leaves = [p for p, s in self.states.items() if not s.states]
        leaf_index = {p: i for i, p in enumerate(leaves)}
        if any(self.descend(p) not in leaf_index for p in self.states):
            return None  # a compound state none of whose substates is usable (already reported)
        per_leaf: list[list[tuple[int, int, Edge]]] = [[] for _ in leaves]
        arg_models: dict[int, tuple[type[BaseModel], bool]] = {}
        bound_enter = {
            p: self.bind_actions(s.on_enter, (*self.locs[p], "on_enter"), f"on_enter:{p}")
            for p, s in self.states.items()
        }
        bound_exit = {
            p: self.bind_actions(s.on_exit, (*self.locs[p], "on_exit"), f"on_exit:{p}") for p, s in self.states.items()
        }

        for order, (t, sources, loc, near) in enumerate(self.declared_transitions()):
            guards = [self.bind_guard(g, (*loc, "conditions", i), False) for i, g in enumerate(t.conditions)]
            guards += [self.bind_guard(g, (*loc, "unless", i), True) for i, g in enumerate(t.unless)]
            before = self.bind_actions(t.before, (*loc, "before"), f"before:{t.trigger}")
            after = self.bind_actions(t.after, (*loc, "after"), f"after:{t.trigger}")
            dest_path = None
            if t.dest is not None:
                dest_path = self.resolve(t.dest, sources[0] if sources else near)
                if dest_path is None:
                    self.problem(
                        (*loc, "dest"),
                        f"transition '{t.trigger}': dest '{t.dest}' is not a state; states: "
                        f"{', '.join(sorted(self.states))}",
                    )
                    continue
            arg_models[order] = _arguments_model(t)
            for source in sources:
                depth = source.count(PATH_SEP) + 1 if source else 0
                for leaf_path in leaves:
                    if source and leaf_path != source and not leaf_path.startswith(source + PATH_SEP):
                        continue
                    edge = self.edge(
                        t,
                        order,
                        source,
                        leaf_path,
                        dest_path,
                        leaf_index,
                        bound_enter,
                        bound_exit,
                        guards,
                        before,
                        after,
                        arg_models[order],
                    )
                    per_leaf[leaf_index[leaf_path]].append((-depth, order, edge))

        edges = [tuple(e for _, _, e in sorted(lst, key=lambda x: (x[0], x[1]))) for lst in per_leaf]
        initial_leaf_path = self.descend(spec.initial)
        initial_chain = _chain(initial_leaf_path)
        initial_actions = tuple(a for p in initial_chain for a in bound_enter[p])
        machine = CompiledMachine(
            name=spec.name,
            description=spec.description,
            leaves=leaves,
            leaf_index=leaf_index,
            edges=edges,
            waiting=[self.states[p].waiting for p in leaves],
            final=[self.states[p].final for p in leaves],
            initial_leaf=leaf_index[initial_leaf_path],
            initial_actions=initial_actions,
            descriptions={p: s.description for p, s in self.states.items()},
            spec=spec,
            all_paths=list(self.states),
        )
        self.check_graph(machine)
        return machine

    def edge(
        self,
        t: TransitionSpec,
        order: int,
        source: str,
        leaf_path: str,
        dest_path: str | None,
        leaf_index: dict[str, int],
        bound_enter: dict[str, list[BoundAction]],
        bound_exit: dict[str, list[BoundAction]],
        guards: list[BoundGuard | None],
        before: list[BoundAction],
        after: list[BoundAction],
        arg_model: tuple[type[BaseModel], bool],
    ) -> Edge:
        if dest_path is None:
            exited: list[str] = []
            entered: list[str] = []
            dest_leaf = None
        else:
            dest_leaf_path = self.descend(dest_path)
            leaf_chain = _chain(leaf_path)
            dest_chain = _chain(dest_leaf_path)
            if dest_path in leaf_chain:
                # Into an ancestor (or itself): that state is left and entered again, as in transitions.
                keep = leaf_chain.index(dest_path)
            else:
                keep = 0
                while keep < min(len(leaf_chain), len(dest_chain)) and leaf_chain[keep] == dest_chain[keep]:
                    keep += 1
            exited = list(reversed(leaf_chain[keep:]))
            entered = dest_chain[keep:]
            dest_leaf = leaf_index[dest_leaf_path]
        actions = (
            tuple(before)
            + tuple(a for p in exited for a in bound_exit[p])
            + tuple(a for p in entered for a in bound_enter[p])
            + tuple(after)
        )
        model, needs = arg_model
        return Edge(
            trigger=t.trigger,
            index=order,
            source=source or "*",
            dest=dest_path,
            dest_leaf=dest_leaf,
            guards=tuple(g for g in guards if g is not None),
            actions=actions,
            description=t.description,
            arguments=t.arguments,
            args_model=model,
            needs_args=needs,
            exited=tuple(exited),
            entered=tuple(entered),
        )

    def check_graph(self, machine: CompiledMachine) -> None:
        reached = {machine.initial_leaf}
        frontier = [machine.initial_leaf]
        while frontier:
            leaf = frontier.pop()
            for e in machine.edges[leaf]:
                if e.dest_leaf is not None and e.dest_leaf not in reached:
                    reached.add(e.dest_leaf)
                    frontier.append(e.dest_leaf)
        reached_paths = {machine.leaves[i] for i in reached}
        for path in self.states:
            if not any(p == path or p.startswith(path + PATH_SEP) for p in reached_paths):
                self.problem(
                    self.locs[path], f"state '{path}' is unreachable from the initial state '{self.spec.initial}'"
                )
        for i, path in enumerate(machine.leaves):
            if (
                not machine.final[i]
                and not machine.waiting[i]
                and not any(e.dest_leaf is not None for e in machine.edges[i])
            ):
                self.problem(
                    self.locs[path],
                    f"state '{path}' has no way out; add a transition or mark it final: true or waiting: true",
                )


def _guard_failed(guard: BoundGuard, edge: Edge, exc: Exception) -> RunError:
    kind = ReadOnlyBeliefError if isinstance(exc, ReadOnlyBeliefError) else RunError
    detail = str(exc) if isinstance(exc, SherpaError) else f"{type(exc).__name__}: {exc}"
    return kind(f"guard '{guard.name}' of transition '{edge.trigger}' (from '{edge.source}') failed: {detail}")


def _chain(path: str) -> list[str]:
    parts = path.split(PATH_SEP)
    return [PATH_SEP.join(parts[: i + 1]) for i in range(len(parts))]


def _arguments_model(t: TransitionSpec) -> tuple[type[BaseModel], bool]:
    """The transition's own arguments, and nothing else:
    a model that forbids undeclared keys, even when none are declared."""
    fields: dict[str, Any] = {}
    for name, a in t.arguments.items():
        typ: Any = _JSON_TYPES[a.type]
        if a.enum:
            from typing import Literal

            typ = Literal[tuple(a.enum)]
        fields[name] = (typ, ...) if a.required and a.default is None else (typ | None, a.default)
    model = create_model(f"Args_{t.trigger}", __config__=ConfigDict(extra="forbid"), **fields)
    needs = any(a.required and a.default is None for a in t.arguments.values())
    return model, needs


def check_arguments(edge: Edge, args: dict[str, Any]) -> dict[str, Any]:
    """The validated arguments of a chosen transition; ValueError naming what is undeclared or invalid.

    Only declared arguments reach a transition's actions: anything else a policy, a user or a model sends is refused.
    """
    if not isinstance(args, dict):
        raise ValueError(f"arguments of '{edge.trigger}' must be an object, got {type(args).__name__}")
    undeclared = sorted(str(k) for k in args if k not in edge.arguments)
    if undeclared:
        takes = f"takes only {', '.join(edge.arguments)}" if edge.arguments else "takes no arguments"
        raise ValueError(f"'{edge.trigger}' {takes}; undeclared: {', '.join(undeclared)}")
    if not edge.arguments:  # nothing declared and nothing given (anything given is refused above): nothing to validate
        return {}
    try:
        return edge.args_model.model_validate(args).model_dump()
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValueError(
            f"arguments of '{edge.trigger}' are not valid: {'.'.join(map(str, first['loc']))}: {first['msg']}"
        ) from None


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    err = errors[0]
    where = ".".join(str(x) for x in err["loc"])
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where + ': ' if where else ''}{err['msg']}{more}"


def compile_machine(
    spec: WorkflowSpec, registry: Registry, source: Located | None = None, file: str = "<workflow>"
) -> tuple[CompiledMachine | None, list[Problem]]:
    """Compile and check a workflow; returns the machine (None if unusable) and every problem found."""
    compiler = _Compiler(spec, source, registry, file)
    machine = compiler.run()
    return machine, compiler.problems
