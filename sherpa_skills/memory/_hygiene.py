"""The pure decisions that keep memory clean: what counts as the same note, how old a note feels, what contradicts.

Exact duplicates share a content hash: the text normalised (case folded, whitespace collapsed, outer punctuation
stripped) within (scope, owner, kind), where the owner is the author for a private note and nobody for a shared one.

Decay tiers come from the days since an artifact was last written, seen again or returned by a search (Engram)::

    effective days = days since last access × rate
    rate           = 2.0 when confidence < 0.5 (doubt fades fast), × 0.5 when read ≥ 5 times (use keeps it warm)
    tier           = hot (≤ 7), warm (≤ 30), cold (> 30); a `principle` is always hot
    search score   = relevance × TIER_WEIGHT[tier]     (1.0, 0.7, 0.4): cold is still found, just ranked lower

Tensions are found by rules, between two facts of the same scope that talk about the same subject (Jaccard ≥ 0.6
over their subject words: the words left once values, negations and filler are set aside): a changed value (`ci-7` →
`ci-9`, `3 retries` → `5 retries`), or one of them
negating what the other affirms (`not`, `never`, `no longer`, `any more`).
"""

from __future__ import annotations

import hashlib
import re
import time
import unicodedata
from typing import Literal

Tier = Literal["hot", "warm", "cold"]
ABSTRACTIONS: tuple[str, ...] = ("episode", "pattern", "principle")
TIERS: tuple[str, ...] = ("hot", "warm", "cold")
HOT_DAYS = 7.0
WARM_DAYS = 30.0
TIER_WEIGHT: dict[str, float] = {"hot": 1.0, "warm": 0.7, "cold": 0.4}
LOW_CONFIDENCE = 0.5
FREQUENT_READS = 5
DEFAULT_CONFIDENCE = 0.8
#: Cosine similarity (MiniLM int8) at or above which a new note is a near-duplicate of a stored one: rewordings of
#: one fact score 0.83–0.97 there, related but distinct facts 0.5–0.88 (`ci-7` vs `ci-9`: 0.88). A pair the
#: contradiction rules flag is never a near-duplicate ("is" / "is not" scores 0.96): it is a tension.
NEAR_DUPLICATE = 0.9
#: Jaccard similarity of subject words two facts need before a rule may call them contradictory ("alpha listens on
#: port 8000" and "bravo listens on port 9001" share 2 of 4: different subjects, no tension).
SAME_SUBJECT = 0.6
DAY = 86400.0

_WORD = re.compile(r"[\w][\w.:/-]*[\w]|[\w]", re.UNICODE)
_NEGATIONS = frozenset(
    {
        "not",
        "never",
        "no",
        "none",
        "nobody",
        "nothing",
        "cannot",
        "isn't",
        "aren't",
        "don't",
        "doesn't",
        "won't",
        "wasn't",
        "shouldn't",
        "mustn't",
        "can't",
        "longer",
        "anymore",
    }
)
_FILLER = frozenset(
    """a an and are as at be but by for from has have i in into is it its of on or our so that the their then
    there these this to was we were will with you your do does did any more now instead only also""".split()
)


def normalise(text: str) -> str:
    """What makes two notes the same note: case, spacing and outer punctuation do not."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(folded.split()).strip(" .!?;,")


def content_hash(text: str, scope: str, agent: str, kind: str | None) -> str:
    owner = agent if scope == "private" else ""
    key = "\x1f".join((scope, owner, kind or "", normalise(text)))
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def tier(
    last_access: float,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    reads: int = 0,
    abstraction: str = "episode",
    now: float | None = None,
) -> Tier:
    if abstraction == "principle":
        return "hot"
    days = max(0.0, ((now if now is not None else time.time()) - last_access) / DAY)
    if confidence < LOW_CONFIDENCE:
        days *= 2.0
    if reads >= FREQUENT_READS:
        days *= 0.5
    return "hot" if days <= HOT_DAYS else "warm" if days <= WARM_DAYS else "cold"


def _tokens(text: str) -> list[str]:
    words = [w.lower() for w in _WORD.findall(unicodedata.normalize("NFKC", text))]
    return ["not" if w.endswith("n't") else w for w in words]


def _is_value(word: str) -> bool:
    return any(c.isdigit() for c in word)


def _parts(text: str) -> tuple[set[str], set[str], bool]:
    """(subject words, values, negated?) of a short fact."""
    words = _tokens(text)
    negated = any(w in _NEGATIONS for w in words) or "any more" in " ".join(words)
    values = {w for w in words if _is_value(w)}
    subject = {w for w in words if w not in values and w not in _NEGATIONS and w not in _FILLER and len(w) > 1}
    return subject, values, negated


def contradiction(new: str, old: str) -> str | None:
    """Why `new` looks like it contradicts `old` (a rule's one-line reason), or None."""
    s_new, v_new, n_new = _parts(new)
    s_old, v_old, n_old = _parts(old)
    if not s_new or not s_old:
        return None
    overlap = len(s_new & s_old) / len(s_new | s_old)
    if overlap < SAME_SUBJECT:
        return None
    subject = " ".join(sorted(s_new & s_old))
    if v_new and v_old and v_new != v_old:
        if not v_new >= v_old or n_new != n_old:  # a new value, or the old one named and negated ("ci-9, not ci-7")
            return (
                f"changed value for '{subject}': {', '.join(sorted(v_old))} → "
                f"{', '.join(sorted(v_new - v_old) or sorted(v_new))}"
            )
    if n_new != n_old and v_new == v_old:
        return f"{'negates' if n_new else 'affirms'} what the other says about '{subject}'"
    return None


def related(new: str, old: str) -> bool:
    """A looser bar than the rules' (a subject word in common): worth asking the optional LLM check about."""
    return bool(_parts(new)[0] & _parts(old)[0])
