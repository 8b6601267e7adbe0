"""What shared memory holds and answers, and the checks every write and read passes before touching the store."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..errors import UsageError

Scope = Literal["private", "shared"]
Abstraction = Literal["episode", "pattern", "principle"]
NearMode = Literal["flag", "link", "merge"]
NEAR_MODES: tuple[str, ...] = ("flag", "link", "merge")
ReadScope = Literal["all", "private", "shared"]
SCOPES: tuple[str, ...] = ("private", "shared")
READ_SCOPES: tuple[str, ...] = ("all", "private", "shared")

#: Largest artifact text accepted, in UTF-8 bytes (1 MiB): memory holds notes and results, not files.
MAX_TEXT_BYTES = 1 << 20
#: Largest metadata accepted, as compact JSON.
MAX_METADATA_BYTES = 64 << 10
MAX_NAME_CHARS = 200
MAX_TAGS = 64
MAX_LIMIT = 1000
_FILTER_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")


class Artifact(BaseModel):
    """One note or result an agent wrote: private to its author, or shared with every agent."""

    id: str
    text: str
    agent: str
    run_id: str | None = None
    scope: Scope
    kind: str | None = None
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created: float
    confidence: float = 0.8
    abstraction: Abstraction = "episode"
    category: str | None = None
    seen: int = 1  # identical writes merged into this one, itself included
    last_seen: float | None = None
    last_access: float | None = None  # written, seen again or returned by a search: what decay counts from
    reads: int = 0
    supersedes: str | None = None
    superseded_by: str | None = None

    def tier(self, now: float | None = None) -> str:
        from ._hygiene import tier

        return tier(
            self.last_access or self.created,
            confidence=self.confidence,
            reads=self.reads,
            abstraction=self.abstraction,
            now=now,
        )


@dataclass
class Written:
    """What a write did: stored a new artifact, or merged into an equal (or, when asked, a nearly equal) one;
    the near-duplicates and tensions it found, and why a check could not run (`skipped`)."""

    artifact: Artifact
    duplicate: bool = False
    merged_into: str | None = None
    near: list[tuple[str, float]] = field(default_factory=list)
    linked: list[str] = field(default_factory=list)
    tensions: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.artifact.model_dump(mode="json"),
            "tier": self.artifact.tier(),
            "duplicate": self.duplicate,
            "merged_into": self.merged_into,
            "near_duplicates": [{"id": i, "similarity": round(s, 4)} for i, s in self.near],
            "linked": list(self.linked),
            "tensions": list(self.tensions),
            "checks_skipped": list(self.skipped),
        }


@dataclass
class Hit:
    """An artifact found by a search, with the scores that ranked it (`semantic` is None when not asked or degraded)."""

    artifact: Artifact
    score: float
    lexical: float
    semantic: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.artifact.model_dump(mode="json"),
            "tier": self.artifact.tier(),
            "score": round(self.score, 4),
            "lexical": round(self.lexical, 4),
            "semantic": None if self.semantic is None else round(self.semantic, 4),
        }


@dataclass
class SearchResult:
    """Hits best first; `mode` is how they were found, `degraded` says why meaning was not used when it was wanted."""

    query: str
    hits: list[Hit]
    mode: Literal["hybrid", "lexical"]
    degraded: str | None = None
    pending: int = 0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "mode": self.mode,
            "degraded": self.degraded,
            "pending": self.pending,
            "notes": list(self.notes),
            "hits": [h.to_dict() for h in self.hits],
        }


# ---------------------------------------------------------------- checks (a clear UsageError, never a half-write)
# Each takes `object`: what a caller hands in is unchecked until here, and narrowing it is the check's job.


def check_name(value: object, what: str, *, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"shared memory: {what} must be a non-empty string, got {value!r}")
    value = value.strip()
    if len(value) > MAX_NAME_CHARS or any(ord(c) < 32 for c in value):
        raise UsageError(f"shared memory: {what} {value[:40]!r}… must be at most {MAX_NAME_CHARS} printable characters")
    return value


def check_text(text: object) -> str:
    if not isinstance(text, str):
        raise UsageError(f"shared memory: text must be a string, got {type(text).__name__}")
    if not text.strip():
        raise UsageError("shared memory: text is empty; write something an agent can find later")
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > MAX_TEXT_BYTES:
        raise UsageError(
            f"shared memory: text is {size:,} bytes, over the {MAX_TEXT_BYTES:,}-byte limit; "
            f"store a summary, or a path to the file"
        )
    return text


def check_scope(scope: object, *, reading: bool = False) -> str:
    allowed = READ_SCOPES if reading else SCOPES
    if scope not in allowed:
        raise UsageError(f"shared memory: scope {scope!r} is not one of: {', '.join(allowed)}")
    return str(scope)


def check_metadata(metadata: object) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict) or not all(isinstance(k, str) for k in metadata):
        raise UsageError(f"shared memory: metadata must be a mapping with string keys, got {type(metadata).__name__}")
    try:
        encoded = json.dumps(metadata, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise UsageError(
            f"shared memory: metadata must be plain JSON (strings, numbers, booleans, lists, mappings): {exc}"
        ) from None
    if len(encoded.encode()) > MAX_METADATA_BYTES:
        raise UsageError(
            f"shared memory: metadata is {len(encoded.encode()):,} bytes as JSON, "
            f"over the {MAX_METADATA_BYTES:,}-byte limit"
        )
    return dict(metadata)


def check_tags(tags: object) -> list[str]:
    if tags is None:
        return []
    if isinstance(tags, str):
        tags = [tags]
    if not isinstance(tags, (list, tuple)) or len(tags) > MAX_TAGS:
        raise UsageError(f"shared memory: tags must be a list of at most {MAX_TAGS} strings")
    return [str(check_name(t, "a tag")) for t in tags]


def check_filters(metadata: object) -> dict[str, str | int | float | bool | None]:
    """Metadata filters are exact matches on top-level keys with scalar values."""
    if not metadata:
        return {}
    if not isinstance(metadata, dict):
        raise UsageError("shared memory: a metadata filter must be a mapping of key to value")
    for key, value in metadata.items():
        if not isinstance(key, str) or not _FILTER_KEY.match(key):
            raise UsageError(f"shared memory: metadata filter key {key!r} must be a name of letters, digits and _")
        if (
            value is not None
            and not isinstance(value, (str, int, float, bool))
            or (isinstance(value, float) and not math.isfinite(value))
        ):
            raise UsageError(
                f"shared memory: metadata filter {key}={value!r} must compare with a string, number, boolean or null"
            )
    return dict(metadata)


def check_limit(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise UsageError(f"shared memory: limit must be a whole number from 1 to {MAX_LIMIT}, got {limit!r}")
    return limit


def check_confidence(value: object) -> float:
    if value is None:
        from ._hygiene import DEFAULT_CONFIDENCE

        return DEFAULT_CONFIDENCE
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not 0.0 <= value <= 1.0
    ):
        raise UsageError(f"shared memory: confidence must be a number from 0 to 1, got {value!r}")
    return float(value)


def check_abstraction(value: object) -> str:
    from ._hygiene import ABSTRACTIONS

    if value is None:
        return "episode"
    if value not in ABSTRACTIONS:
        raise UsageError(f"shared memory: abstraction {value!r} is not one of: {', '.join(ABSTRACTIONS)}")
    return str(value)


def check_near(value: object) -> str:
    if value not in NEAR_MODES:
        raise UsageError(f"shared memory: on_near {value!r} is not one of: {', '.join(NEAR_MODES)}")
    return str(value)
