"""YAML loading that remembers where every value came from, so problems can say FILE:LINE."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import Problem, WorkflowError

Loc = tuple[Any, ...]


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


def _walk(loader: yaml.SafeLoader, node: yaml.Node, loc: Loc, lines: dict[Loc, int], problems: list[Problem], file: str) -> Any:
    lines[loc] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if isinstance(key, bool) and isinstance(key_node, yaml.ScalarNode) and key_node.value.lower() not in ("true", "false"):
                problems.append(Problem(file, key_node.start_mark.line + 1, f"key '{key_node.value}' reads as a boolean in YAML; quote it: '{key_node.value}'"))
                continue
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                problems.append(Problem(file, key_node.start_mark.line + 1, "mapping keys must be plain scalars"))
                continue
            if key in out:
                problems.append(Problem(file, key_node.start_mark.line + 1, f"duplicate key '{key}'"))
            child = (*loc, key)
            out[key] = _walk(loader, value_node, child, lines, problems, file)
            lines[child] = key_node.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_walk(loader, item, (*loc, i), lines, problems, file) for i, item in enumerate(node.value)]
    return loader.construct_object(node, deep=True)


def load_yaml_text(text: str, file: str) -> Located:
    """Parse YAML text; syntax errors become a WorkflowError naming the line."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise WorkflowError([Problem(file, 1, "the file is empty")])
        lines: dict[Loc, int] = {}
        problems: list[Problem] = []
        data = _walk(loader, node, (), lines, problems, file)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        raise WorkflowError([Problem(file, line, f"invalid YAML: {exc.problem or exc}")]) from None
    except yaml.YAMLError as exc:
        raise WorkflowError([Problem(file, 1, f"invalid YAML: {exc}")]) from None
    except RecursionError:
        raise WorkflowError([Problem(file, 1, "invalid YAML: nested too deeply to read")]) from None
    finally:
        loader.dispose()
    if problems:
        raise WorkflowError(problems)
    return Located(data, file, lines)


def load_yaml_file(path: str | Path) -> Located:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise WorkflowError([Problem(str(path), 1, "no such file")]) from None
    except UnicodeDecodeError as exc:
        raise WorkflowError([Problem(str(path), 1, f"not UTF-8 text: {exc.reason}")]) from None
    except OSError as exc:
        raise WorkflowError([Problem(str(path), 1, f"cannot read: {exc.strerror}")]) from None
    return load_yaml_text(text, str(path))
