"""The companion lags the truth, never the other way: a write returns once SQLite has it, the indexing thread puts
it in chromadb; until then this process still finds it by meaning, and a crash leaves it to the catch-up or a rebuild.
Real SQLite, real chromadb (MiniLM), real subprocesses."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sherpa_skills.memory import SharedMemory, _indexer

FIRST = "Run the database migrations before deploying the release"
SECOND = "Before deploying the release, run the database migrations"
CDN = "Flush the CDN cache after publishing new images"
CDN_PARAPHRASE = "purge the content delivery network"


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[SharedMemory]:
    with SharedMemory(tmp_path / "home") as m:
        m.write("Restart the nginx web server after changing its configuration file", agent="ops", scope="shared")
        assert m.store.pending() == 0  # the first write into an empty companion is indexed before it returns
        yield m


@contextmanager
def indexing_held_back(m: SharedMemory) -> Iterator[None]:
    """The indexing thread cannot drain while this is open: what is written meanwhile stays held."""
    with m.indexer._drain_lock:
        yield


def in_companion(m: SharedMemory) -> int:
    return m.companion().count(m.collection)


class TestHeldArtifacts:
    def test_a_write_returns_before_indexing_and_is_found_by_meaning_meanwhile(self, memory: SharedMemory) -> None:
        with indexing_held_back(memory):
            late = memory.write(CDN, agent="ops", scope="shared")
            assert memory.store.pending() == 1 and in_companion(memory) == 1  # committed to the truth only
            result = memory.search(CDN_PARAPHRASE, agent="x")
            assert result.hits[0].artifact.id == late.id and result.hits[0].semantic > 0.25
            assert result.pending == 0 and result.notes == []  # held here: found by meaning, nothing to warn about
        assert memory.flush() is None
        assert memory.store.pending() == 0 and in_companion(memory) == 2 and not memory.indexer.held
        assert memory.search(CDN_PARAPHRASE, agent="x").hits[0].artifact.id == late.id

    def test_held_artifacts_stay_private_to_their_readers(self, memory: SharedMemory) -> None:
        with indexing_held_back(memory):
            note = memory.write(CDN, agent="alice")
            assert [h.artifact.id for h in memory.search(CDN_PARAPHRASE, agent="alice").hits] == [note.id]
            assert memory.search(CDN_PARAPHRASE, agent="bob").hits == []

    def test_the_near_duplicate_check_sees_a_held_artifact(self, memory: SharedMemory) -> None:
        with indexing_held_back(memory):
            first = memory.write(FIRST, agent="ops", scope="shared")
            second = memory.remember(SECOND, agent="ops", scope="shared")
            assert [i for i, _ in second.near] == [first.id] and second.near[0][1] >= 0.9
            assert memory.indexer.held.keys() == {first.id, second.artifact.id}

    def test_a_burst_of_writes_is_indexed_together(self, memory: SharedMemory) -> None:
        with indexing_held_back(memory):
            written = [
                memory.write(f"deployment note number {i} about release {i}", agent="ops", scope="shared").id
                for i in range(5)
            ]
        memory.flush()
        assert memory.store.pending() == 0 and in_companion(memory) == 6
        assert set(written) <= {h.artifact.id for h in memory.search("deployment note about a release", agent="x").hits}

    def test_a_held_artifact_deleted_never_reaches_the_companion(self, memory: SharedMemory) -> None:
        with indexing_held_back(memory):
            gone = memory.write(CDN, agent="ops", scope="shared")
            assert memory.delete(gone.id, operator="root", reason="test")
            assert gone.id not in memory.indexer.held
        memory.flush()
        assert in_companion(memory) == 1 and memory.stats()["companion"]["reason"] is None

    def test_stats_and_reindex_count_what_was_held(self, memory: SharedMemory) -> None:
        with indexing_held_back(memory):
            memory.write(CDN, agent="ops", scope="shared")
        stats = memory.stats()["companion"]
        assert stats["ok"] and stats["items"] == 2 and stats["reason"] is None
        with indexing_held_back(memory):
            memory.write(FIRST, agent="ops", scope="shared")
        assert memory.reindex()["artifacts"] == 3 and not memory.indexer.held and memory.store.pending() == 0

    def test_past_the_cap_writes_index_before_returning(
        self, memory: SharedMemory, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(_indexer, "MAX_HELD", 1)
        with indexing_held_back(memory):
            held = memory.write(CDN, agent="ops", scope="shared")
            assert memory.indexer.held.keys() == {held.id}
            memory.write(FIRST, agent="ops", scope="shared")  # indexed now, the held one caught up with it
            assert memory.store.pending() == 0 and in_companion(memory) == 3 and not memory.indexer.held

    def test_a_broken_companion_is_not_deferred_to(self, home: Path) -> None:
        """When the near-duplicate query fails, the write tries the companion itself and says why it could not."""
        with SharedMemory(home) as m:
            m.write(FIRST, agent="ops", scope="shared")
        (home / "companion" / "chroma.sqlite3").write_bytes(b"this is not a database " * 4096)
        with SharedMemory(home) as m:
            written = m.remember(CDN, agent="ops", scope="shared")
            assert written.skipped and "near-duplicate check" in written.skipped[0]
            assert m.companion_problem and m.store.pending() == 1 and not m.indexer.held


WRITER = textwrap.dedent(
    f"""
    import os, sys
    from sherpa_skills.memory import SharedMemory
    m = SharedMemory(sys.argv[1])
    m.write("Restart the nginx web server after changing its configuration file", agent="ops", scope="shared")
    if sys.argv[2] == "crash":
        m.indexer._drain_lock.acquire()  # the indexing thread never gets to it
    m.write({CDN!r}, agent="ops", scope="shared")
    if sys.argv[2] == "crash":
        os._exit(0)  # no close, no atexit: as if killed
    # "exit": the process ends without closing its memory
"""
)


def run_writer(home: Path, how: str) -> None:
    done = subprocess.run([sys.executable, "-c", WRITER, str(home), how], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


class TestClosing:
    def test_close_while_writes_are_held_indexes_them_and_ends_the_thread(self, home: Path) -> None:
        m = SharedMemory(home)
        m.write(FIRST, agent="ops", scope="shared")
        m.write(CDN, agent="ops", scope="shared")  # held: the thread waits for writes to pause
        m.close()
        assert m.indexer._thread is not None and not m.indexer._thread.is_alive()
        with SharedMemory(home) as again:
            assert again.store.pending() == 0 and in_companion(again) == 2


class TestAcrossProcesses:
    def test_a_process_that_exits_without_closing_indexes_what_it_wrote(self, tmp_path: Path) -> None:
        run_writer(tmp_path / "home", "exit")
        with SharedMemory(tmp_path / "home") as m:
            assert m.store.pending() == 0 and in_companion(m) == 2
            assert m.search(CDN_PARAPHRASE, agent="x").hits[0].artifact.text == CDN

    def test_a_crash_loses_no_write_and_the_next_write_catches_the_companion_up(self, tmp_path: Path) -> None:
        run_writer(tmp_path / "home", "crash")
        with SharedMemory(tmp_path / "home") as m:
            assert m.store.count() == 2 and m.store.pending() == 1 and in_companion(m) == 1
            lexical = m.search("flush the CDN cache", agent="x")
            assert (
                lexical.hits[0].artifact.text == CDN
                and lexical.pending == 1
                and "not in the semantic index" in lexical.notes[0]
            )
            m.write(FIRST, agent="ops", scope="shared")
            m.flush()
            assert m.store.pending() == 0 and in_companion(m) == 3
            assert m.search(CDN_PARAPHRASE, agent="x").hits[0].artifact.text == CDN

    def test_a_crash_loses_no_write_and_a_rebuild_restores_it(self, tmp_path: Path) -> None:
        run_writer(tmp_path / "home", "crash")
        with SharedMemory(tmp_path / "home") as m:
            assert m.search(CDN_PARAPHRASE, agent="x").hits == []  # words do not match, meaning is not indexed yet
            assert m.reindex()["artifacts"] == 2 and m.store.pending() == 0
            assert m.search(CDN_PARAPHRASE, agent="x").hits[0].artifact.text == CDN
