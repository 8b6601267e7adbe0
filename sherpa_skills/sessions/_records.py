"""What every parser hands the importer: one `CommandRecord` per command, already redacted.

Redaction happens here, at capture, so nothing a parser keeps between imports (its pending state)
and nothing the importer stores has ever held a secret.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from typing import Any, Literal

from ..redact import redact, redact_value

Outcome = Literal["success", "failure", "rejected", "unknown"]
OUTCOMES: tuple[Outcome, ...] = ("success", "failure", "rejected", "unknown")

#: Characters of output kept per command.
OUTPUT_LIMIT = 2000
# Redaction looks further than what is kept, so a token cut by the excerpt's end is still recognised whole
# (a private key block cut short is redacted from its BEGIN line anyway).
_REDACT_MARGIN = 2000
#: Characters of a command kept. A longer one (a heredoc, a pasted file) is cut and marked with its length and sha256:
#: it can no longer be replayed, and a 600 KB key crashed pyahocorasick (its trie is freed recursively: SIGSEGV).
COMMAND_LIMIT = 16_384
_TRUNCATED = "\n# [sherpa-skills: command truncated; {chars} characters, sha256 {digest}]"
_TRUNCATED_RE = re.compile(r"\n# \[sherpa-skills: command truncated; \d+ characters, sha256 [0-9a-f]{64}\]\Z")
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass
class CommandRecord:
    """One shell command as a session log recorded it; `key` is unique within its source format."""

    key: str
    session_id: str
    command: str
    outcome: Outcome
    line: int | None = None
    timestamp: float | None = None
    cwd: str | None = None
    exit_code: int | None = None
    output: str | None = None
    duration: float | None = None
    tool: str | None = None
    agent: str | None = None
    sidechain: bool = False
    description: str | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def to_state(self) -> dict[str, Any]:
        state = {name: getattr(self, name) for name in _FIELDS}
        state["info"] = dict(self.info)
        return state

    @classmethod
    def from_state(cls, data: dict[str, Any]) -> CommandRecord:
        return cls(**data)


_FIELDS = tuple(f.name for f in fields(CommandRecord))


def clean_command(text: str) -> str:
    """The command redacted; past COMMAND_LIMIT its start, then a line giving the whole one's length and hash."""
    if len(text) <= COMMAND_LIMIT:
        return redact(text)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    kept = redact(text[: COMMAND_LIMIT + _REDACT_MARGIN])[:COMMAND_LIMIT]
    return kept + _TRUNCATED.format(chars=len(text), digest=digest)


def is_truncated(command: str) -> bool:
    """A command stored cut short (see COMMAND_LIMIT): not something to replay."""
    return _TRUNCATED_RE.search(command[-200:]) is not None


def clean_text(text: str | None) -> str | None:
    return None if text is None else redact(text)


def clean_info(info: dict[str, Any]) -> dict[str, Any]:
    return redact_value(info) if info else {}


def excerpt(text: str | None, limit: int = OUTPUT_LIMIT) -> str | None:
    """The start of an output, without terminal escapes, redacted, at most `limit` characters."""
    if text is None:
        return None
    if not isinstance(text, str):
        text = str(text)
    window = text[: max(limit, OUTPUT_LIMIT) + _REDACT_MARGIN]
    if "\x1b" in window:
        window = _ANSI.sub("", window)
    window = _CONTROL.sub("", window.replace("\r\n", "\n"))
    cleaned = redact(window)
    if len(cleaned) > limit:
        cleaned = cleaned[:limit]
    return cleaned


_ISO_FRACTION = re.compile(r"\.(\d+)")


def iso_to_epoch(value: object) -> float | None:
    """Epoch seconds from an ISO 8601 string (``Z`` or an offset; naive means UTC), or from a number."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) / 1000.0 if value > 1e11 else float(value)  # milliseconds
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    # Python < 3.11 accepts only 3 or 6 fraction digits.
    text = _ISO_FRACTION.sub(lambda m: "." + (m.group(1) + "000000")[:6], text, count=1)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def as_dict(value: object) -> dict[str, Any]:
    """A JSON object field as a dict; anything else (absent, null, a list) reads as empty."""
    return value if isinstance(value, dict) else {}


def as_int(value: object) -> int | None:
    """An exit code from an int or a numeric string; None for anything else."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def outcome_for_exit(code: int | None) -> Outcome:
    if code is None:
        return "unknown"
    return "success" if code == 0 else "failure"
