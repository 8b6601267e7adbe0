"""YAML loading that remembers where every value came from, so problems can say FILE:LINE.

PyYAML's C parser with YAML 1.2 core-schema scalars, not ruamel.yaml: ruamel's round-trip loader (YAML 1.2, keeps
lines) took 44 ms for a 103-line workflow against 1 ms here (bench/yaml_bench.py; the pure-Python PyYAML loader used
before took 26 ms), and a workflow load is on every run's start-up path. What ruamel would have given is done here
in a few lines: `on`/`off`/`yes`/`no` stay strings, mapping keys are always strings, and alias expansion, nesting
depth and recursive aliases are bounded with an error naming the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import Problem, WorkflowError

Loc = tuple[int | str, ...]  # a place in a YAML document: mapping keys and sequence indexes, as pydantic reports them

#: Values a file may expand to, aliases included: a "billion laughs" file stops here instead of exhausting memory.
MAX_NODES = 200_000
#: Nesting depth: deeper is never a workflow, and would hit Python's recursion limit.
MAX_DEPTH = 100
#: Characters read from one file.
MAX_CHARS = 16 * 1024 * 1024
#: libyaml's composer recurses in C: ~30,000 levels overflow the C stack (SIGSEGV, not an exception). Nesting costs at
#: least two characters a level, so a text shorter than this cannot reach a dangerous depth and skips the check.
_DEPTH_CHECK_CHARS = 10_000

#: What the libyaml bundled with PyYAML 6.0.4 says when a file nests past its own limit, before our check sees it.
_LIBYAML_DEPTH_LIMIT = "exceeded maximum nesting depth"

_SURROGATE = re.compile("[\ud800-\udfff]")
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Core12Loader(_Loader):  # type: ignore[misc, valid-type]
    """The YAML 1.2 core schema: only true/false are booleans, no sexagesimal numbers or `=` values."""


_Core12Loader.yaml_implicit_resolvers = {}
for _tag, _pattern, _first in (
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
):
    _Core12Loader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))


def _core12_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = node.value
    if len(text) > 100:  # Python refuses to parse more than 4300 digits; nothing sensible needs 100
        raise yaml.constructor.ConstructorError(
            None, None, f"integer of {len(text)} digits is too long", node.start_mark
        )
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text)


_Core12Loader.add_constructor("tag:yaml.org,2002:int", _core12_int)


@dataclass
class Located:
    """Plain data from a YAML file plus the 1-based line of every path into it."""

    data: Any
    file: str
    lines: dict[Loc, int] = field(default_factory=dict)

    def line(self, loc: Loc) -> int:
        """The line of the deepest known prefix of `loc` (pydantic locations may go deeper than YAML)."""
        loc = tuple(loc)
        while loc:
            if loc in self.lines:
                return self.lines[loc]
            loc = loc[:-1]
        return self.lines.get((), 1)

    def problem(self, loc: Loc, message: str) -> Problem:
        return Problem(self.file, self.line(loc), message)


class _TooBig(Exception):
    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line = line


def _check_depth(text: str) -> None:
    """Refuse deep nesting from the event stream (flat, no recursion) before the composer recurses into it."""
    parser = _Core12Loader(text)
    depth = 0
    try:
        while parser.check_event():
            event = parser.get_event()
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    line = event.start_mark.line + 1 if event.start_mark else 0
                    raise _TooBig(line, f"nested more than {MAX_DEPTH} levels deep")
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                depth -= 1
    finally:
        parser.dispose()


class _Walker:
    """Turns the node graph into plain data, counting every value an alias expands to and refusing cycles."""

    def __init__(self, loader: yaml.SafeLoader, file: str):
        self.loader = loader
        self.file = file
        self.lines: dict[Loc, int] = {}
        self.problems: list[Problem] = []
        self.nodes = 0
        self.path: set[int] = set()

    def walk(self, node: yaml.Node, loc: Loc) -> Any:
        line = node.start_mark.line + 1
        self.lines[loc] = line
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise _TooBig(
                line, f"the file expands to more than {MAX_NODES} values (aliases included); is it a YAML bomb?"
            )
        if isinstance(node, yaml.ScalarNode):
            value = self.loader.construct_object(node, deep=True)
            if isinstance(value, str) and _SURROGATE.search(value):
                # A "\ud800" escape: not text any store, JSON encoder or terminal accepts.
                self.problems.append(
                    Problem(
                        self.file, line, "a lone surrogate (\\ud800-\\udfff) is not text; write the character itself"
                    )
                )
            return value
        if len(loc) > MAX_DEPTH:
            raise _TooBig(line, f"nested more than {MAX_DEPTH} levels deep")
        if id(node) in self.path:
            raise _TooBig(line, "recursive alias: a value contains itself")
        if node.tag not in ("tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"):
            self.problems.append(
                Problem(self.file, line, f"tag '{node.tag}' is not supported here; only plain mappings and lists are")
            )
        self.path.add(id(node))
        try:
            if isinstance(node, yaml.MappingNode):
                return self.mapping(node, loc)
            return [self.walk(item, (*loc, i)) for i, item in enumerate(node.value)]
        finally:
            self.path.discard(id(node))

    def mapping(self, node: yaml.MappingNode, loc: Loc) -> dict[str, Any]:
        self.loader.flatten_mapping(node)
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode):
                self.problems.append(Problem(self.file, line, "mapping keys must be plain scalars"))
                continue
            key = key_node.value  # keys are names: `on`, `1`, `null` as written, never a boolean or a number
            if _SURROGATE.search(key):
                self.problems.append(
                    Problem(
                        self.file, line, "a lone surrogate (\\ud800-\\udfff) is not text; write the character itself"
                    )
                )
                continue
            if key in out:
                self.problems.append(Problem(self.file, line, f"duplicate key '{key}'"))
            child = (*loc, key)
            out[key] = self.walk(value_node, child)
            self.lines[child] = line
        return out


def load_yaml_text(text: str, file: str) -> Located:
    """Parse YAML text; syntax errors, YAML bombs and recursive aliases become a WorkflowError naming the line."""
    if len(text) > MAX_CHARS:
        raise WorkflowError([Problem(file, 1, f"the file is larger than {MAX_CHARS // (1024 * 1024)} MB")])
    surrogate = _SURROGATE.search(text)
    if surrogate:
        line = text.count("\n", 0, surrogate.start()) + 1
        raise WorkflowError([Problem(file, line, "a lone surrogate (\\ud800-\\udfff) is not text")])
    loader = _Core12Loader(text)
    try:
        if len(text) > _DEPTH_CHECK_CHARS:
            _check_depth(text)
        node = loader.get_single_node()
        if node is None:
            raise WorkflowError([Problem(file, 1, "the file is empty")])
        walker = _Walker(loader, file)
        data = walker.walk(node, ())
    except _TooBig as exc:
        raise WorkflowError([Problem(file, exc.line, str(exc))]) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        if _LIBYAML_DEPTH_LIMIT in str(exc.problem):  # libyaml >= 0.2.5 (PyYAML 6.0.4) stops at 1,000 levels itself
            raise WorkflowError([Problem(file, line, f"nested more than {MAX_DEPTH} levels deep")]) from None
        raise WorkflowError([Problem(file, line, f"invalid YAML: {exc.problem or exc}")]) from None
    except yaml.reader.ReaderError as exc:  # a control character
        line = text.count("\n", 0, exc.position) + 1
        raise WorkflowError([Problem(file, line, f"invalid YAML: {str(exc).splitlines()[0]}")]) from None
    except yaml.YAMLError as exc:
        raise WorkflowError([Problem(file, 1, f"invalid YAML: {str(exc).splitlines()[0]}")]) from None
    except RecursionError:  # the pure-Python composer, where libyaml is not installed
        raise WorkflowError([Problem(file, 1, f"nested more than {MAX_DEPTH} levels deep")]) from None
    finally:
        loader.dispose()
    if walker.problems:
        raise WorkflowError(walker.problems)
    return Located(data, file, walker.lines)


def load_yaml_file(path: str | Path) -> Located:
    path = Path(path)
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_CHARS * 4 + 1)
    except FileNotFoundError:
        raise WorkflowError([Problem(str(path), 1, "no such file")]) from None
    except OSError as exc:
        raise WorkflowError([Problem(str(path), 1, f"cannot read: {exc.strerror}")]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise WorkflowError([Problem(str(path), line, f"not UTF-8 text: {exc.reason} at byte {exc.start}")]) from None
    return load_yaml_text(text, str(path))
