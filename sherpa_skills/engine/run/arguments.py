"""An action's arguments for one call: its literal ones, its templates and expressions rendered against the run's
context, its internal ones read from the context, and the transition's arguments it declares; validated by its model."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from ...errors import ActionError
from ..belief import lookup
from ..compiler import BoundAction, Dynamic

_MISSING = object()


def resolve_arguments(
    bound: BoundAction,
    targs: dict[str, Any],
    context: dict[str, Any],
    state: str,
    run_id: str,
    counters: dict[str, Any],
) -> tuple[dict[str, Any], BaseModel]:
    """What `bound` is called with in `state`: the values as given (for the log) and as its model validated them."""
    if bound.static_args is not None:
        return bound.literal, bound.static_args
    definition = bound.definition
    values = dict(bound.literal)
    if bound.dynamic:
        variables: dict[str, Any] | None = None

        def evaluate(dyn: Dynamic, key: str) -> Any:
            nonlocal variables
            kind = dyn.kind
            if kind == "context":
                return lookup(context, dyn.payload)
            if kind == "arg":
                return targs.get(dyn.payload)
            if kind == "nested":
                items = dyn.payload.items() if isinstance(dyn.payload, dict) else enumerate(dyn.payload)
                done = {k: evaluate(v, key) if isinstance(v, Dynamic) else v for k, v in items}
                return done if isinstance(dyn.payload, dict) else list(done.values())
            if variables is None:
                variables = {
                    **context,
                    "context": context,
                    "args": targs,
                    "state": state,
                    "run_id": run_id,
                    "counters": counters,
                }
            try:
                return dyn.payload(**variables) if kind == "expr" else dyn.payload.render(variables)
            except Exception as exc:  # jinja2 UndefinedError and friends
                raise ActionError(
                    bound.name, f"argument '{key}' ({bound.where}, state '{state}'): template failed: {exc}"
                ) from None

        for key, dyn in bound.dynamic.items():
            values[key] = evaluate(dyn, key)
    for name, key in definition.internal.items():
        if name not in values:
            value = lookup(context, key, _MISSING)
            if value is not _MISSING:
                values[name] = value
    if targs:
        fields = definition.args_model.model_fields
        for key, value in targs.items():
            if key in fields and key not in values:
                values[key] = value
    try:
        return values, definition.args_model.model_validate(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ActionError(
            bound.name,
            f"invalid arguments ({bound.where}, state '{state}'): {'.'.join(map(str, first['loc']))}: {first['msg']}",
        ) from None
