"""`learn capture-success --steps-file`: a list of commands (plain strings or mappings) read into steps, every
mistake as FILE:LINE and what to write instead, in the words of the file, not of the library that checks it."""

from __future__ import annotations

import difflib
from typing import Any

EXAMPLE = "a list of commands, one per line, like `- make test`"
# pydantic's error types, as a person would say what the value should be.
_SHOULD = {
    "int_parsing": "should be a whole number",
    "int_type": "should be a whole number",
    "int_from_float": "should be a whole number",
    "float_parsing": "should be a number",
    "float_type": "should be a number",
    "finite_number": "should be a finite number",
    "string_type": "should be text",
    "list_type": "should be a list",
    "greater_than": "should be more than 0",
    "string_too_short": "should not be empty",
}


def load_steps_file(path: str) -> dict[str, Any]:
    """A YAML or JSON list of steps, or an object with description, tags, pre/postconditions and steps.

    A step is a command as text, or a mapping with `command:` and the step's checks; one step is enough.
    """
    from ..errors import Problem, WorkflowError
    from ..skills.face.models import StepsFile
    from ..yaml_source import load_yaml_file

    try:
        located = load_yaml_file(path)
    except WorkflowError as exc:
        if [p.message for p in exc.problems] == ["the file is empty"]:
            raise WorkflowError([Problem(path, 1, f"the file is empty: write {EXAMPLE}; one step is enough")]) from None
        raise
    data, problems = located.data, []
    raw_steps: Any
    where: tuple[Any, ...]
    if isinstance(data, list):
        raw_steps, where, rest = data, (), {}
    elif isinstance(data, dict):
        unknown = [k for k in data if k not in StepsFile.model_fields]
        for key in unknown:
            problems.append(located.problem((key,), _unknown(key, list(StepsFile.model_fields), "the file")))
        raw_steps, where = data.get("steps"), ("steps",)
        rest = {k: v for k, v in data.items() if k != "steps" and k not in unknown}
        if not isinstance(raw_steps, list) and raw_steps is not None:
            problems.append(located.problem(where, f"`steps:` should be {EXAMPLE}"))
            raw_steps = []
    else:
        raise WorkflowError(
            [located.problem((), f"write {EXAMPLE}, or a mapping with `steps:` (and description, tags)")]
        )
    if not raw_steps and not problems:
        problems.append(located.problem(where, f"no steps: write {EXAMPLE}; one step is enough"))
    steps = []
    for i, raw in enumerate(raw_steps or []):
        step, found = _step(located, (*where, i), i + 1, raw)
        problems += found
        if step is not None:
            steps.append(step)
    if not problems:
        problems += _fields(located, rest)
    if problems:
        raise WorkflowError(problems)
    parsed = StepsFile.model_validate({**rest, "steps": []})
    return {**parsed.model_dump(exclude={"steps"}), "steps": steps}


def _step(located: Any, loc: tuple[Any, ...], number: int, raw: Any) -> tuple[dict[str, Any] | None, list[Any]]:
    """One step as stored, or what is wrong with it."""
    from pydantic import ValidationError

    from ..skills.face.models import ProcedureStep

    if isinstance(raw, str):
        raw = {"command": raw}
    if not isinstance(raw, dict):
        return None, [
            located.problem(
                loc, f"step {number}: write the command as text (`- make test`) or a mapping with `command:`"
            )
        ]
    problems = []
    unknown = [k for k in raw if k not in ProcedureStep.model_fields]
    for key in unknown:
        problems.append(
            located.problem((*loc, key), f"step {number}: {_unknown(key, list(ProcedureStep.model_fields))}")
        )
    if "command" not in raw:
        problems.append(located.problem(loc, f"step {number}: give its `command:` (the shell command to run)"))
    if problems:
        return None, problems
    try:
        return ProcedureStep.model_validate(raw).model_dump(), []
    except ValidationError as exc:
        return None, [located.problem((*loc, *e["loc"]), f"step {number}: {_said(e)}") for e in exc.errors()]


def _fields(located: Any, rest: dict[str, Any]) -> list[Any]:
    """The file's own fields (description, tags, pre- and postconditions), each checked."""
    from pydantic import ValidationError

    from ..skills.face.models import StepsFile

    try:
        StepsFile.model_validate({**rest, "steps": []})
    except ValidationError as exc:
        return [located.problem(tuple(e["loc"]), _said(e)) for e in exc.errors()]
    return []


def _said(error: Any) -> str:
    """One checking error as `field: what it should be`."""
    where = ".".join(str(p) for p in error["loc"] if not isinstance(p, int)) or "value"
    should = _SHOULD.get(error["type"]) or error["msg"].removeprefix("Value error, ")
    return f"`{where}` {should}" if error["type"] in _SHOULD else f"`{where}`: {should}"


def _unknown(key: Any, known: list[str], owner: str = "a step") -> str:
    close = difflib.get_close_matches(str(key), known, n=1)
    hint = f" (did you mean `{close[0]}`?)" if close else ""
    return f"unknown key `{key}`{hint}; {owner} takes: {', '.join(known)}"
