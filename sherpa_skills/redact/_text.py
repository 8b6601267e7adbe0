"""Redacting text: every rule of the table applied, pass after pass, until nothing changes."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from ._rules import _RULES, REDACTED, _Rule

_MAX_PASSES = 4


def _run(text: str, kinds: list[str] | None) -> str:
    """Apply every rule; repeat while a pass changed something (one rule's redaction can move another's
    context, e.g. a `;` inside a redacted cookie ended a command segment), so the result is a fixpoint."""
    for _ in range(_MAX_PASSES):
        text, changed = _pass(text, kinds)
        if not changed:
            break
    return text


def _pass(text: str, kinds: list[str] | None) -> tuple[str, bool]:
    changed = False
    lowered = text.lower()
    for rule in _RULES:
        if rule.hints and not any(h in lowered for h in rule.hints):
            continue
        hit = False

        def sub(m: re.Match[str], _rule: _Rule = rule) -> str:
            nonlocal hit
            replacement = _rule.handler(m)
            if replacement is None or replacement == m.group(0):
                return m.group(0)
            hit = True
            return replacement

        new = rule.pattern.sub(sub, text)
        if hit:
            text = new
            lowered = text.lower()
            changed = True
            if kinds is not None and rule.kind not in kinds:
                kinds.append(rule.kind)
    return text, changed


def _as_text(text: Any) -> str:
    if isinstance(text, str):
        return text
    if isinstance(text, (bytes, bytearray, memoryview)):
        return bytes(text).decode("utf-8", errors="replace")
    if text is None:
        return ""
    return str(text)


def redact(text: str) -> str:
    """`text` with every secret value replaced by :data:`REDACTED`; everything else unchanged.

    Idempotent. Never raises: bytes are decoded as UTF-8 (with replacement), other objects go through
    ``str()``, and if anything unexpected fails the whole text becomes the marker.
    """
    try:
        text = _as_text(text)
        if not text:
            return text
        if len(text) <= _CACHED_LENGTH:
            return _redact_short(text)
        return _run(text, None)
    except Exception:
        return REDACTED


# Keys and short values repeat across every stored row ("command", "exit_code", "ok"): remember them.
_CACHED_LENGTH = 160


@lru_cache(maxsize=8192)
def _redact_short(text: str) -> str:
    return _run(text, None)


def find_secrets(text: str) -> list[str]:
    """The kinds of secret in `text` (names from :data:`KINDS`), each once, in rule order; [] when clean.

    Exactly the kinds `redact` would replace, so ``find_secrets(redact(x)) == []``. Never raises (an
    unexpected failure reports ``["unknown"]``, failing closed).
    """
    try:
        text = _as_text(text)
        kinds: list[str] = []
        if text:
            _run(text, kinds)
        return kinds
    except Exception:
        return ["unknown"]


def contains_secret(text: str) -> bool:
    """Whether `redact(text)` would change anything. Never raises (fails closed: True)."""
    return bool(find_secrets(text))
