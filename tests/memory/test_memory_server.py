"""Shared memory with its companion on a real `chroma run` server, named in HOME/config.yaml (memory.chroma)."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sherpa_skills.errors import UsageError
from sherpa_skills.memory import ChromaServer, SharedMemory, chroma_server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """One `chroma run` process on 127.0.0.1; `start` again after `stop` serves the same data folder."""

    def __init__(self, exe: str, data: Path, log: Path):
        self.exe, self.data, self.log_path = exe, data, log
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [self.exe, "run", "--path", str(self.data), "--host", "127.0.0.1", "--port", str(self.port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/api/v2/heartbeat", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"chroma run did not come up: {self.log_path.read_text(errors='replace')[-2000:]}")
            time.sleep(0.1)

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def server(tmp_path: Path, chroma_executable: str) -> Iterator[Server]:
    exe = chroma_executable
    running = Server(exe, tmp_path / "server-data", tmp_path / "chroma.log")
    try:
        running.start()
        yield running
    finally:
        running.stop()


def configure(home: Path, value: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(
        f"# other sections may live here too\nbus: {{url: redis://127.0.0.1:6379}}\nmemory:\n  chroma: {value}\n"
    )


@pytest.mark.slow  # a real `chroma run`, started twice: about ten seconds
def test_a_chroma_server_named_in_config_is_the_companion(home: Path, server: Server) -> None:
    configure(home, f"127.0.0.1:{server.port}")
    paraphrase = "reboot the http daemon once you edit its settings"
    with SharedMemory(home) as m:
        assert m.companion().where == f"http://127.0.0.1:{server.port}"
        nginx = m.write(
            "Restart the nginx web server after changing its configuration file", agent="ops", scope="shared"
        )
        m.write("Bake a chocolate cake for the team party", agent="ops", scope="shared")
        secret = m.write("ops private: the web server restarts need a pager", agent="ops", scope="private")
        result = m.search(paraphrase, agent="dev")
        assert result.mode == "hybrid" and [h.artifact.id for h in result.hits] == [nginx.id]
        assert secret.id not in {h.artifact.id for h in m.search("web server restarts", agent="dev").hits}
        stats = m.stats()["companion"]
        assert stats["ok"] and stats["items"] == 3 and stats["where"].startswith("http://127.0.0.1")
        assert not (home / "companion").exists()  # nothing embedded when a server is configured

        server.stop()
        down = m.search(paraphrase + " nginx", agent="dev")
        unreachable = ("Connection refused", "not answering")
        assert down.mode == "lexical" and any(w in down.degraded for w in unreachable)
        assert [h.artifact.id for h in down.hits] == [nginx.id]
        late = m.write("Purge the CDN cache after publishing images", agent="ops", scope="shared")
        assert m.store.pending() == 1 and any(w in m.companion_problem for w in unreachable)

        server.start()  # the same data folder: what was indexed is still there
        back = m.search(paraphrase, agent="dev")
        assert back.mode == "hybrid" and back.hits[0].artifact.id == nginx.id and back.pending == 1 and back.notes
        assert m.reindex()["artifacts"] == 4 and m.store.pending() == 0
        assert m.search("flush the content delivery network", agent="dev").hits[0].artifact.id == late.id


def test_config_values(home: Path) -> None:
    assert chroma_server(home) is None
    for value, expected in [
        ("127.0.0.1:8000", ChromaServer("127.0.0.1", 8000)),
        ("http://chroma.example.invalid:9001", ChromaServer("chroma.example.invalid", 9001)),
        ("'[::1]:8000'", ChromaServer("::1", 8000)),
    ]:
        configure(home, value)
        assert chroma_server(home) == expected
    for value in ["8000", "host:0", "host:99999", "ftp://x:1", "[1, 2]"]:
        configure(home, value)
        with pytest.raises(UsageError, match="not a chroma server address"):
            chroma_server(home)
    (home / "config.yaml").write_text("memory: {chroma: 127.0.0.1:8000, path: /x}\n")
    with pytest.raises(UsageError, match="unknown key.*path"):
        chroma_server(home)
    (home / "config.yaml").write_text("memory: [\n")
    with pytest.raises(UsageError, match="cannot read it as YAML"):
        chroma_server(home)
