"""A value read from one engine made fit for a column of the other: SQLite is loosely typed (a REAL column may hold an
integer, JSON is text), PostgreSQL is not. A value that does not fit raises ValueError saying why; the caller names
the table, row and column."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING

from .connection import Dialect

if TYPE_CHECKING:
    from psycopg.types.json import Jsonb

Convert = Callable[[object], object]
_INTEGER_TEXT = re.compile(r"^\s*[+-]?\d+\s*$")
_INTEGERS = ("bigint", "integer", "smallint")
_FLOATS = ("double precision", "real", "numeric")
_TEXTS = ("text", "character varying", "character")


def converter(target: Dialect, column_type: str) -> Convert | None:
    """How to convert a value bound for a column of this type on `target`; None when any value goes as it is."""
    if target == "sqlite":
        return _for_sqlite
    if column_type in _INTEGERS:
        return _to_integer
    if column_type in _FLOATS:
        return _to_float
    if column_type in _TEXTS:
        return _to_text
    if column_type == "bytea":
        return _to_bytes
    if column_type == "boolean":
        return _to_boolean
    if column_type in ("json", "jsonb"):
        return _to_json
    return None


def _for_sqlite(value: object) -> object:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict | list):
        return json.dumps(value)
    if isinstance(value, memoryview):
        return bytes(value)
    return value


def _to_integer(value: object) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _INTEGER_TEXT.match(value):
        return int(value)
    raise ValueError(f"{_shown(value)} is not a whole number")


def _to_float(value: object) -> float | None:
    if value is None or isinstance(value, float):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise ValueError(f"{_shown(value)} is not a number")


def _to_text(value: object) -> object:
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError("binary data that is not UTF-8 text") from None
    elif isinstance(value, int | float):
        return str(value)
    if isinstance(value, str) and "\x00" in value:
        raise ValueError("text with a NUL character, which PostgreSQL text cannot hold")
    return value


def _to_bytes(value: object) -> object:
    return value.encode("utf-8") if isinstance(value, str) else value


def _to_boolean(value: object) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    if value in (0, 1):
        return bool(value)
    raise ValueError(f"{_shown(value)} is not 0 or 1")


def _to_json(value: object) -> Jsonb | None:
    from psycopg.types.json import Jsonb

    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError(f"{_shown(value)} is not JSON") from None
    return Jsonb(value)


def _shown(value: object) -> str:
    """A value by its kind only: the value itself may be anything a run kept, and errors are printed and logged."""
    return f"a {type(value).__name__} value" + (f" of {len(value)} characters" if isinstance(value, str) else "")
