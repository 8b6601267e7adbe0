"""The chromadb companion: real chromadb in temporary folders and a real `chroma run` server; failures become
CompanionUnavailable with a reason, never a raw chromadb error or a crash."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sherpa_skills.errors import SherpaError, UsageError
from sherpa_skills.semantic.companion import Companion, CompanionUnavailable
from sherpa_skills.semantic.embeddings import HashingEmbedder, MiniLMEmbedder

DOCS = {
    "nginx": "Restart the nginx web server after changing its configuration",
    "migrate": "Run the database migrations before deploying the new release",
    "cert": "Renew the TLS certificate for the public website",
    "cake": "Bake a chocolate cake for the team party",
}


@pytest.fixture
def companion(tmp_path: Path) -> Iterator[Companion]:
    """A fast, deterministic companion for the mechanics; semantics get MiniLM below."""
    with Companion(tmp_path / "companion", embedder=HashingEmbedder()) as c:
        yield c


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def fill(c: Companion, collection: str = "procedures") -> None:
    c.upsert(collection, list(DOCS), list(DOCS.values()), [{"kind": "ops" if k != "cake" else "food"} for k in DOCS])


class TestOperations:
    def test_upsert_query_count_delete(self, companion: Companion) -> None:
        """Items go in, come back nearest first with a similarity in [0, 1], and leave by id."""
        fill(companion)
        assert companion.count("procedures") == 4
        hits = companion.query("procedures", "renew the TLS certificate", n=10)
        assert hits[0][0] == "cert"
        assert len(hits) == 4 and all(0.0 <= s <= 1.0 for _, s in hits)
        assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
        companion.delete("procedures", ["cert", "no-such-id"])
        assert companion.count("procedures") == 3
        assert "cert" not in dict(companion.query("procedures", "renew the TLS certificate"))

    def test_upsert_replaces_by_id(self, companion: Companion) -> None:
        fill(companion)
        companion.upsert("procedures", ["cake", "cake"], ["old text", "Deploy the frontend to production"])
        assert companion.count("procedures") == 4
        assert companion.query("procedures", "deploy the frontend", n=1)[0][0] == "cake"

    def test_where_filters_on_metadata(self, companion: Companion) -> None:
        fill(companion)
        hits = companion.query("procedures", "restart the web server", where={"kind": "food"})
        assert [i for i, _ in hits] == ["cake"]

    def test_data_survives_reopening(self, tmp_path: Path) -> None:
        with Companion(tmp_path / "c", embedder=HashingEmbedder()) as first:
            fill(first)
        with Companion(tmp_path / "c", embedder=HashingEmbedder()) as second:
            assert second.count("procedures") == 4
            assert second.healthy()[0]

    def test_a_missing_collection_is_unavailable_not_an_error_from_chromadb(self, companion: Companion) -> None:
        with pytest.raises(CompanionUnavailable, match="does not exist.*rebuild"):
            companion.query("procedures", "anything")
        with pytest.raises(CompanionUnavailable):
            companion.count("procedures")
        companion.delete("procedures", ["x"])  # nothing to delete is not a failure
        assert issubclass(CompanionUnavailable, SherpaError)

    def test_bad_names_and_shapes_are_the_callers_mistake(self, companion: Companion) -> None:
        with pytest.raises(UsageError):
            companion.upsert("x", ["a"], ["text"])
        with pytest.raises(UsageError):
            companion.upsert("procedures", ["a", "b"], ["only one text"])
        with pytest.raises(UsageError):
            companion.upsert("procedures", ["a"], ["text"], [{"nested": {"no": 1}}])
        with pytest.raises(UsageError):
            Companion(Path("x"), host="127.0.0.1")

    def test_rebuild_replaces_everything_in_batches(self, companion: Companion) -> None:
        """Rebuilt from the truth, the collection holds exactly the given items, however many batches it takes."""
        fill(companion)
        items = ((f"p{i}", f"procedure number {i} restarts service {i % 7}", {"n": i}) for i in range(600))
        assert companion.rebuild("procedures", items) == 600
        assert companion.count("procedures") == 600
        assert "nginx" not in dict(companion.query("procedures", DOCS["nginx"], n=600))
        assert companion.rebuild("procedures", []) == 0
        ok, why = companion.healthy()
        assert ok and "procedures (0 items)" in why


class TestThreads:
    def test_threads_opening_one_folder_at_once_all_open_it_and_closing_them_releases_its_files(
        self, tmp_path: Path
    ) -> None:
        """chromadb's cache of one System per folder is unguarded: opened by several threads at once, each must get
        the one System (not fail half-way, not build a second that nobody stops and whose files stay open)."""
        import gc
        import threading

        folder = tmp_path / "companion"
        companions = [Companion(folder, embedder=HashingEmbedder()) for _ in range(6)]
        start, failures = threading.Barrier(len(companions)), []

        def use(c: Companion, i: int) -> None:
            start.wait()
            try:
                c.upsert("notes", [f"n{i}"], [f"note number {i}"])
            except SherpaError as exc:
                failures.append(str(exc))

        threads = [threading.Thread(target=use, args=(c, i)) for i, c in enumerate(companions)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert failures == [] and companions[0].count("notes") == 6
        for c in companions:
            c.close()
        gc.collect()  # chromadb's connections of the threads that ended wait in reference cycles until collected
        held = [os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd") if _exists(fd)]
        assert [f for f in held if f.startswith(str(folder))] == []


def _exists(fd: str) -> bool:
    return os.path.exists(f"/proc/self/fd/{fd}")


class TestSemantics:
    def test_a_paraphrase_finds_its_document(self, tmp_path: Path, minilm: MiniLMEmbedder) -> None:
        """The default embedder finds by meaning: no word of the query is in the document it finds."""
        with Companion(tmp_path / "c", embedder=minilm) as c:
            fill(c)
            assert c.query("procedures", "bounce the http daemon once its config is edited", n=1)[0][0] == "nginx"
            assert c.query("procedures", "apply schema changes to the db prior to shipping", n=1)[0][0] == "migrate"
            assert c.query("procedures", "the https cert is about to expire", n=1)[0][0] == "cert"


class TestStale:
    def test_a_collection_built_by_another_embedder_is_stale_until_rebuilt(
        self, tmp_path: Path, minilm: MiniLMEmbedder
    ) -> None:
        """Vectors from the hashing fallback do not live in MiniLM's space: reported, refused, then fixed by rebuild."""
        with Companion(tmp_path / "c", embedder=HashingEmbedder()) as degraded:
            fill(degraded)
        with Companion(tmp_path / "c", embedder=minilm) as c:
            reason = c.stale("procedures")
            assert reason and "hashing-v1-256" in reason and minilm.name in reason
            with pytest.raises(CompanionUnavailable, match="stale.*rebuild"):
                c.query("procedures", "restart the web server")
            with pytest.raises(CompanionUnavailable, match="stale"):
                c.upsert("procedures", ["new"], ["new text"])
            assert c.count("procedures") == 4  # still readable as a number, just not searchable
            ok, why = c.healthy()
            assert not ok and "stale" in why
            c.rebuild("procedures", ((k, v, None) for k, v in DOCS.items()))
            assert c.stale("procedures") is None
            assert c.query("procedures", "reboot the web server", n=1)[0][0] == "nginx"
            assert c.healthy()[0]


class TestBroken:
    def test_garbage_in_the_sqlite_file_is_unavailable_not_a_crash(self, tmp_path: Path) -> None:
        """A corrupt folder gives a reason on every call, deletes nothing, and a later open still reports cleanly."""
        folder = tmp_path / "companion"
        with Companion(folder, embedder=HashingEmbedder()) as c:
            fill(c)
        sentinel = tmp_path / "truth.db"
        sentinel.write_text("the truth store")
        (folder / "chroma.sqlite3").write_bytes(b"this is not a database " * 4096)
        before = sorted(p.name for p in folder.iterdir())
        for _ in range(2):  # chromadb caches a half-opened system per folder; the second open must fail the same way
            broken = Companion(folder, embedder=HashingEmbedder())
            with pytest.raises(CompanionUnavailable, match="failed to open.*not a database"):
                broken.query("procedures", "restart")
            with pytest.raises(CompanionUnavailable):
                broken.upsert("procedures", ["a"], ["b"])
            ok, why = broken.healthy()
            assert not ok and "not a database" in why
        assert sentinel.read_text() == "the truth store"
        assert sorted(p.name for p in folder.iterdir()) == before

    def test_after_the_folder_is_removed_a_rebuild_restores_service(self, tmp_path: Path) -> None:
        """The companion is disposable: delete the broken folder, rebuild from the truth, search again."""
        folder = tmp_path / "companion"
        folder.mkdir()
        (folder / "chroma.sqlite3").write_bytes(b"\x00garbage" * 1000)
        with pytest.raises(CompanionUnavailable):
            Companion(folder, embedder=HashingEmbedder()).count("procedures")
        shutil.rmtree(folder)
        with Companion(folder, embedder=HashingEmbedder()) as c:
            assert c.rebuild("procedures", ((k, v, None) for k, v in DOCS.items())) == 4
            assert c.query("procedures", DOCS["cake"], n=1)[0][0] == "cake"

    def test_a_file_where_the_folder_should_be(self, tmp_path: Path) -> None:
        (tmp_path / "companion").write_text("not a folder")
        ok, why = Companion(tmp_path / "companion", embedder=HashingEmbedder()).healthy()
        assert not ok and "not a folder" in why

    def test_deep_health_check_survives_a_corrupt_vector_file(self, tmp_path: Path) -> None:
        """Garbage in the HNSW files can crash chromadb's native code; the deep check takes that hit in a child."""
        folder = tmp_path / "companion"
        with Companion(folder, embedder=HashingEmbedder()) as c:
            c.rebuild("procedures", ((f"p{i}", f"procedure {i} for host {i % 13}", None) for i in range(1200)))
            assert c.healthy(deep=True) == (True, c.healthy()[1])
        data = next(folder.glob("*/data_level0.bin"))
        data.write_bytes(bytes((i * 7919) % 251 for i in range(data.stat().st_size)))
        ok, why = Companion(folder, embedder=HashingEmbedder()).healthy(deep=True)
        assert not ok and str(folder) in why and ("crashed" in why or "failed a test read" in why), why


# ---------------------------------------------------------------- a real chroma server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def chroma_server(tmp_path: Path, chroma_executable: str) -> Iterator[tuple[str, int, subprocess.Popen[bytes]]]:
    exe = chroma_executable
    port = free_port()
    log = (tmp_path / "chroma.log").open("wb")
    server = subprocess.Popen(
        [exe, "run", "--path", str(tmp_path / "server-data"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(
                    f"chroma run did not come up: {(tmp_path / 'chroma.log').read_text(errors='replace')[-2000:]}"
                )
            time.sleep(0.1)
        yield "127.0.0.1", port, server
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


class TestServer:
    @pytest.mark.slow  # a real `chroma run` starts: about ten seconds
    def test_the_same_operations_through_a_chroma_server(
        self, chroma_server: tuple[str, int, subprocess.Popen[bytes]], minilm: MiniLMEmbedder
    ) -> None:
        """Shared across machines: the companion talks to `chroma run`,
        and a server that goes away is a reason, not a hang."""
        host, port, server = chroma_server
        c = Companion(host=host, port=port, embedder=minilm)
        fill(c)
        assert c.count("procedures") == 4
        assert c.query("procedures", "reboot the web server", n=1)[0][0] == "nginx"
        assert c.query("procedures", "anything", where={"kind": "food"})[0][0] == "cake"
        c.delete("procedures", ["cake"])
        assert c.rebuild("procedures", ((k, v, None) for k, v in DOCS.items())) == 4
        ok, why = c.healthy()
        assert ok and f"http://{host}:{port}" in why

        server.terminate()
        server.wait(timeout=10)
        with pytest.raises(CompanionUnavailable, match=f"{host}:{port}"):
            c.query("procedures", "reboot the web server")
        fresh = Companion(host=host, port=port, embedder=minilm)
        ok, why = fresh.healthy()
        assert not ok and "not answering" in why

    def test_no_server_at_all(self) -> None:
        c = Companion(host="127.0.0.1", port=free_port(), embedder=HashingEmbedder())
        with pytest.raises(CompanionUnavailable, match="not answering"):
            c.upsert("procedures", ["a"], ["b"])
