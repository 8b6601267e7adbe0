"""A real redis-server for the tests: a free port on 127.0.0.1 and a temporary folder, killed when the block ends.
Where none can be started, `redis_server` raises NoRedis saying why (the reason a skip prints)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class NoRedis(Exception):
    """Why no redis-server can be started here."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def redis_server(folder: Path) -> Iterator[str]:
    """Start redis-server (no persistence, loopback only) and yield its URL once it answers PING."""
    try:
        import redis
    except ImportError:
        raise NoRedis("redis-py is not installed (pip install redis, part of sherpa-skills[dev])") from None
    binary = shutil.which("redis-server")
    if binary is None:
        raise NoRedis("redis-server is not installed (apt-get install -y redis-server)")
    port = _free_port()
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder), "--save", "", "--appendonly", "no"]
        + ["--protected-mode", "yes"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = redis.Redis(host="127.0.0.1", port=port)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.exceptions.ConnectionError:
                if proc.poll() is not None:
                    raise AssertionError(f"redis-server exited with {proc.returncode}") from None
                if time.monotonic() > deadline:
                    raise AssertionError("timed out after 10s waiting for redis-server to answer PING") from None
                time.sleep(0.05)
        client.close()
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.kill()
        proc.wait(timeout=10)
