"""What a confirmed wording vouches for: a task said in words of its own that means what a procedure and a wording a
judge confirmed for it both mean — and nothing else stored — replays that procedure directly.

An alias is evidence that a person took a wording unlike the description to mean the procedure. It widens what the
procedure is known to mean, so a task close by meaning to both the description and an alias is about it, when:

- its cosine to the closest alias reaches `alias_floor`, and its cosine to the description reaches `alias_described`
  (two independent tellings agree). The description need only be nearby: it is worded as the capture's author saw the
  work, while the alias is how someone asked for it and a judge said it meant this;
- the closer of the two stands at least `alias_gap` above every other candidate's closest (description or alias, a
  run's alias included: one procedure per path keeps its other wordings as aliases): the procedure stands out, so the
  task is not about a neighbour;
- it repeats at most `alias_words` of the description's key words, and of each alias's. A task that repeats much
  of a procedure's wording and still was not sure by the relevance model changes something on purpose ("restore my
  home folder from the external drive" for "archive my home folder to the external drive"): that is what a near
  miss looks like, and only a judge can tell it from a paraphrase, so it is asked about, never vouched for;
- and it says at least one of them. Cosine alone does not tell a paraphrase from an unrelated ask: MiniLM puts short
  customer questions 0.4 from any other ("Do you sell refurbished phones?" and "Order came damaged, requesting money
  back", tests/skills/match/test_vouch_small_store.py), past both floors, and in a small store no rival stands near
  enough to hold it back. A task that shares no key word with the procedure's wordings is asked about at most.

The matcher adds two refusals of its own (`Matcher._vouched`): the opposite work (a `contrast`), and a place the
description names (a path, a file name, a quoted name, a pattern) that the task leaves unsaid — "…in the current
directory tree" was vouched into a chmod of /path/to/base/dir by an alias naming that folder (bench/RESULTS.md, "the
store's own floor"); where the work happens is not for meaning to guess.

The settings are data (`relevance.json`: alias_floor, alias_described, alias_gap, alias_words), fitted by
bench/match_ask_bench.py on one half of the dev routines and reported on the other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Evidence:
    """One candidate's signals for the alias rule."""

    procedure_id: str
    semantic: float  # cosine between the task and the procedure
    alias: float | None  # the best cosine between the task and one of its confirmed wordings; None without any
    repeats: float  # the largest share of the description's, or of one alias's, key words the task says (0: none)
    #: The best cosine to any of its wordings, runs' aliases included (None: as `alias`): how close it stands as a
    #: rival. A procedure a run's wordings merged into is as near as those wordings were as descriptions of their own.
    near: float | None = None


def repeated(said: frozenset[str], wordings: list[frozenset[str]]) -> float:
    """The largest share of one wording's key words that the task says."""
    return max((len(said & w) / len(w) for w in wordings if w), default=0.0)


def vouched(evidence: list[Evidence], floor: float, gap: float, words: float, described: float) -> Evidence | None:
    """The candidate a confirmed wording vouches for (see the module's docstring), or None."""
    agreed = [e for e in evidence if e.alias is not None and e.alias >= floor and e.semantic >= described]
    if not agreed:
        return None
    best = max(agreed, key=lambda e: min(e.semantic, e.alias or 0.0))
    closest = max(best.semantic, best.alias or 0.0)
    rival = max((max(e.semantic, e.alias or 0.0, e.near or 0.0) for e in evidence if e is not best), default=0.0)
    return best if closest - rival >= gap and 0.0 < best.repeats <= words else None
