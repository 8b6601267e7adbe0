"""Run inputs checked against the workflow's `inputs:` before they reach the context: typed, known, present.

Values typed on a command line arrive as text; an input declared with a `type` is converted here, so
`approved=no` is the boolean False (not the truthy string "no") and `amount=abc` fails naming the input.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol

from ..errors import UsageError
from .spec import InputSpec


class DeclaresInputs(Protocol):
    """A workflow spec or a team spec: a name and its declared inputs."""

    name: str
    inputs: dict[str, InputSpec]


TRUE_WORDS = frozenset({"true", "yes", "y", "on", "1"})
FALSE_WORDS = frozenset({"false", "no", "n", "off", "0"})
_PY_TYPES: dict[str, type | tuple[type, ...]] = {"string": str, "array": list, "object": dict}


def convert(name: str, spec: InputSpec, value: Any) -> Any:
    """`value` as the declared type, converting text; UsageError naming the input when it cannot be."""
    kind = spec.type
    if kind is None or value is None:
        return value
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in TRUE_WORDS | FALSE_WORDS:
            return value.strip().lower() in TRUE_WORDS
        raise _wrong(name, kind, value, "yes/no, true/false, 1/0 or on/off")
    if kind in ("integer", "number"):
        parsed: Any = value
        if isinstance(value, str):
            try:
                parsed = int(value.strip()) if kind == "integer" else float(value.strip())
            except ValueError:
                try:
                    parsed = float(value.strip())
                except ValueError:
                    raise _wrong(name, kind, value) from None
        if isinstance(parsed, bool) or not isinstance(parsed, (int, float)) or not math.isfinite(parsed):
            raise _wrong(name, kind, value)
        if kind == "integer":
            if isinstance(parsed, float) and not parsed.is_integer():
                raise _wrong(name, kind, value, "a whole number")
            parsed = int(parsed)
        if spec.minimum is not None and parsed < spec.minimum:
            raise UsageError(f"input {name!r} must be at least {spec.minimum:g}, got {parsed!r}")
        return parsed
    if kind == "string":
        if isinstance(value, str):
            return value
        if isinstance(value, (bool, int, float)):  # `-i zip=02134` must not lose its text to a JSON number
            return json.dumps(value)
        raise _wrong(name, kind, value)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise _wrong(name, kind, value, "JSON") from None
    if not isinstance(value, _PY_TYPES[kind]):
        raise _wrong(name, kind, value, "JSON " + ("[...]" if kind == "array" else "{...}"))
    return value


def check_inputs(
    spec: DeclaresInputs, values: Mapping[str, Any], *, starting: bool, allow_unknown: bool = False
) -> dict[str, Any]:
    """The inputs converted to their declared types; unknown names refused when the workflow declares its inputs.

    `starting` also requires the `required` ones (at a resume, the run already has them). `allow_unknown` is the
    library's way: an embedder may write any context key as input, while a name typed on the command line is checked.
    """
    declared: Mapping[str, InputSpec] = spec.inputs
    if declared and not allow_unknown:
        unknown = [n for n in values if n not in declared]
        if unknown:
            raise UsageError(_unknown(spec.name, unknown[0], declared))
    checked = {n: convert(n, declared[n], v) if n in declared else v for n, v in values.items()}
    if starting:
        missing = [
            f"'{n}'" + (f" ({d.description})" if d.description else "")
            for n, d in declared.items()
            if d.required and n not in checked and d.default is None
        ]
        if missing:
            raise UsageError(
                f"workflow '{spec.name}' needs input {', '.join(missing)}; pass it with --input NAME=VALUE"
            )
    return checked


def _unknown(workflow: str, name: str, declared: Mapping[str, InputSpec]) -> str:
    close = difflib.get_close_matches(name, list(declared), n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    return f"workflow '{workflow}' has no input '{name}'; {hint}its inputs: {', '.join(declared)}"


def _wrong(name: str, kind: str, value: Any, expected: str | None = None) -> UsageError:
    shown = value if isinstance(value, str) else json.dumps(value, default=str)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return UsageError(
        f"input '{name}' must be {'an' if kind in ('integer', 'array', 'object') else 'a'} {kind}"
        + (f" ({expected})" if expected else "")
        + f", got '{shown}'"
    )


def parse_assignments(
    pairs: Sequence[str] | None, what: str = "--input", keep_text: Collection[str] = ()
) -> dict[str, Any]:
    """`k=v` pairs; a value that parses as JSON (numbers, true, {...}) is taken as JSON, else as text.

    Names in `keep_text` stay text: inputs declared with a type,
    which engine.inputs converts (so `zip=02134` stays a string).
    """
    values: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"{what} '{pair}' is not NAME=VALUE")
        if key in keep_text:
            values[key] = raw
            continue
        try:
            values[key] = json.loads(raw)
        except ValueError:
            values[key] = raw
    return values


def parse_inputs(spec: Any, pairs: Sequence[str] | None, *, starting: bool) -> dict[str, Any]:
    """`--input` pairs for a workflow (or team) spec:
    converted to the declared types, unknown names refused (exit 2)."""
    typed = {name for name, d in spec.inputs.items() if d.type is not None}
    return check_inputs(spec, parse_assignments(pairs, keep_text=typed), starting=starting)
