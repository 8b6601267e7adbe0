"""A run's request is embedded once: matching it, deciding its transitions and keeping it as an alias each needed its
vector, and each made it again (three model passes a request, two of them wasted)."""

from __future__ import annotations

import sherpa_skills as sk
from sherpa_skills.semantic.embeddings import HashingEmbedder

REQUEST = "Why is there a fee on my money transfer?"


def test_the_match_the_decisions_and_the_alias_share_one_vector(skill_store: sk.SkillStore) -> None:
    learner = skill_store.learner()
    learner.matcher.match(REQUEST)  # the run's match at its start
    assert [text for _, text in learner.matcher._embedded] == [REQUEST]
    matched = learner.matcher.embed_one(REQUEST)
    vector, name = learner.vector(REQUEST)  # what the decision memory asks
    assert vector is matched and name == learner.matcher.embedder.name
    assert learner.matcher.embed_one(REQUEST.lower()) is not matched  # other words, another vector


def test_another_embedders_vector_is_never_served(skill_store: sk.SkillStore) -> None:
    """A vector is kept per embedder: one of another model (another width, another space) never stands in."""
    matcher = skill_store.learner().matcher
    semantic = matcher.embed_one(REQUEST)
    hashed = matcher.embed_one(REQUEST, HashingEmbedder(64))
    assert len(hashed) == 64 and len(semantic) != 64
    assert matcher.embed_one(REQUEST) is semantic
