"""Shared memory: artifacts agents write (private notes or shared results), found again by words and by meaning.

The truth is SQLite (the home's store.db, with FTS5); a chromadb companion, rebuilt from it at any time, adds
search by meaning. Every read names the reading agent, who sees shared artifacts and only its own private notes.
YAML workflows use the built-in actions `memory_write` and `memory_search`; operators use `sherpa-skills memory`.
Writes keep memory clean (`_hygiene`: dedup, near-duplicates, supersede, decay tiers, tensions); `domains` carries
an agent's decisions and status across runs.
"""

from __future__ import annotations

from ._config import ChromaServer, chroma_server, open_companion
from ._hygiene import NEAR_DUPLICATE, TIER_WEIGHT
from ._models import MAX_TEXT_BYTES, SCOPES, Artifact, Hit, SearchResult, Written
from ._search import SEMANTIC_FLOOR, SEMANTIC_WEIGHT, SharedMemory, hybrid, shared_memory
from ._store import MemoryStore

__all__ = [
    "MAX_TEXT_BYTES",
    "NEAR_DUPLICATE",
    "SCOPES",
    "SEMANTIC_FLOOR",
    "SEMANTIC_WEIGHT",
    "TIER_WEIGHT",
    "Artifact",
    "ChromaServer",
    "Hit",
    "MemoryStore",
    "SearchResult",
    "SharedMemory",
    "Written",
    "chroma_server",
    "hybrid",
    "open_companion",
    "shared_memory",
]
