"""Redacting structured values: through dicts, lists, tuples, sets and bytes, and exact strings known to be secret."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from ._names import _NOT, _WEAK, _name_strength
from ._rules import _PATH_VALUE, REDACTED
from ._text import redact

_MAX_DEPTH = 200
_PLAIN_NUMBERS = frozenset({int, float, bool, type(None)})


def redact_value(value: Any) -> Any:
    """`value` with secrets redacted, recursing into dicts, lists, tuples, sets and frozensets.

    Strings go through :func:`redact` (dict keys too); bytes are decoded, redacted and re-encoded
    when they change. A dict key that names a secret (see :func:`is_secret_name`: password, passwd,
    secret, token, api_key, apikey, access_key, private_key, authorization, cookie, credentials...)
    has its whole value replaced by :data:`REDACTED`, whatever its type, except None, booleans and
    empty strings (nothing to hide) and a file path under a KEY/CREDENTIALS name. Other objects are
    returned as they are: dump models to plain data first. Returns new containers; never mutates
    `value`; never raises (a cycle or a nesting deeper than 200 becomes the marker).
    """
    try:
        return _redact_value(value, 0, set())
    except Exception:
        return REDACTED


@lru_cache(maxsize=4096)
def keeps_numbers_under(key: str) -> bool:
    """Whether `redact_value` keeps this mapping key as it is, and a number under it (a counter's name, say)."""
    return _key_strength(key) == _NOT and redact(key) == key


def redact_item(key: Any, value: Any) -> Any:
    """`value` as `redact_value` leaves it under `key` in a mapping (whole value replaced when
    the key names a secret)."""
    try:
        return REDACTED if _secret_key_value(key, value) else _redact_value(value, 0, set())
    except Exception:
        return REDACTED


@lru_cache(maxsize=4096)
def _key_strength(key: str) -> int:
    return _name_strength(key)


def _secret_key_value(key: Any, value: Any) -> bool:
    if not isinstance(key, str) or value is None or isinstance(value, bool) or value == "":
        return False
    strength = _key_strength(key)
    if strength == _NOT:
        return False
    if isinstance(value, str) and (value == REDACTED or (strength == _WEAK and _PATH_VALUE.match(value))):
        return False
    return True


def _redact_value(value: Any, depth: int, active: set[int]) -> Any:
    kind = type(value)
    if kind is str:
        return redact(value)
    if kind in _PLAIN_NUMBERS:  # exact types first: the stored rows are mostly these, and ABC checks are slow
        return value
    if isinstance(value, str):
        return redact(value)
    if value is None or isinstance(value, (bool, int, float, complex)):
        return value
    if isinstance(value, (bytes, bytearray)):
        try:
            decoded = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            decoded = bytes(value).decode("utf-8", errors="replace")
        cleaned = redact(decoded)
        if cleaned == decoded:
            return value
        return type(value)(cleaned.encode("utf-8"))
    if not isinstance(value, (dict, list, Mapping, tuple, set, frozenset)):
        return value
    if depth >= _MAX_DEPTH or id(value) in active:
        return REDACTED
    active.add(id(value))
    try:
        if isinstance(value, dict) or isinstance(value, Mapping):
            out: dict[Any, Any] = {}
            for k, v in value.items():
                new_key = redact(k) if isinstance(k, str) else k
                out[new_key] = REDACTED if _secret_key_value(k, v) else _redact_value(v, depth + 1, active)
            return out
        items = [_redact_value(v, depth + 1, active) for v in value]
        if isinstance(value, list):
            return items
        if isinstance(value, tuple):
            if hasattr(value, "_fields"):  # namedtuple
                try:
                    return type(value)(*items)
                except Exception:
                    return tuple(items)
            return tuple(items)
        try:
            return type(value)(items)
        except TypeError:  # an unhashable item came back (cannot happen for str); keep a list
            return items
    finally:
        active.discard(id(value))


@lru_cache(maxsize=64)
def _known_pattern(secrets: frozenset[str]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(s) for s in sorted(secrets, key=len, reverse=True)))


def redact_known(value: Any, secrets: frozenset[str]) -> Any:
    """`value` with every occurrence of these exact strings (values known to be secret, such as the environment
    variables passed to a command) replaced by :data:`REDACTED`, through dicts, lists and tuples. Never mutates."""
    if not secrets:
        return value
    pattern = _known_pattern(secrets)

    def scrub(item: Any) -> Any:
        if isinstance(item, str):
            return pattern.sub(REDACTED, item)
        if isinstance(item, Mapping):
            return {scrub(k): scrub(v) for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [scrub(v) for v in item] if isinstance(item, list) else tuple(scrub(v) for v in item)
        return item

    return scrub(value)
