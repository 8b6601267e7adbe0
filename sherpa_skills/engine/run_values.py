"""Values on their way into the run store: compact JSON with secrets redacted, and text LIKE takes literally."""

from __future__ import annotations

import json
from typing import Any

from ..errors import StoreError
from ..redact import keeps_numbers_under, redact_item, redact_value


def _like(text: str) -> str:
    """`text` as a literal inside a LIKE pattern (with ESCAPE '\\')."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


# One encoder for every row: json.dumps with separators builds a new one per call (5 rows a tick).
_encode = json.JSONEncoder(separators=(",", ":")).encode
_NUMBERS = frozenset({int, float, bool})


def _dump(value: Any, what: str, key: str | None = None) -> str:
    """JSON for a row, secrets redacted: nothing that looks like a token or password reaches the store.

    A value stored under a `key` is redacted as it would be under that key (api_key: ...
    is a secret whatever it looks like).
    """
    try:
        return _encode(redact_value(value) if key is None else redact_item(key, value))
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{what} is not JSON-serialisable: {exc}") from None


def _dump_counters(counters: dict[str, Any]) -> str:
    """The run's counters, written every tick: numbers under names redaction keeps skip its walk;
    anything else takes it."""
    if all(type(v) in _NUMBERS and type(k) is str and keeps_numbers_under(k) for k, v in counters.items()):
        return _encode(counters)
    return _dump(counters, "counters")
