"""A TCP relay to the test PostgreSQL server that cuts a connection at COMMIT (or at another statement it is told):
after the server got it (its answer lost: the commit landed, the client cannot know) or before (nothing was committed:
the client cannot know that either)."""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit


class CommitAnswerLost:
    """A TCP relay to the server that, once armed, lets one COMMIT through and cuts the connection before its
    answer comes back: the commit landed, the client cannot know. With `lands` False the COMMIT never reaches the
    server: the cut transaction is rolled back there. `statement` (bytes of its text) cuts at that statement instead: a
    single statement sent outside a transaction (autocommit) then lands with its answer lost."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.armed = threading.Event()
        self.cut = threading.Event()
        self.lands = True
        self.statement = b"COMMIT\x00"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target))
            gagged = threading.Event()  # this connection's answers are no longer passed back
            threading.Thread(target=self._pipe, args=(client, server, True, gagged), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, False, gagged), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, upstream: bool, gagged: threading.Event) -> None:
        prepared: set[bytes] = set()  # psycopg prepares a statement run often: COMMIT is then sent by its name
        try:
            while data := src.recv(65536):
                prepared.update(re.findall(rb"([A-Za-z0-9_]+)\x00" + re.escape(self.statement), data))
                commit = self.statement in data or any(b"\x00" + n + b"\x00" in data for n in prepared)
                if not upstream and gagged.is_set():
                    continue  # the COMMIT's answer never reaches the client; the cut closes both ends
                if upstream and self.armed.is_set() and commit:
                    self.armed.clear()
                    gagged.set()
                    if self.lands:
                        dst.sendall(data)
                        time.sleep(0.5)  # the server commits meanwhile
                    self.cut.set()
                    for s in (src, dst):
                        s.shutdown(socket.SHUT_RDWR)  # both ends see it closed now, the other pipe's recv included
                        s.close()
                    return
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.close()
                except OSError:
                    pass

    def close(self) -> None:
        self.listener.close()


@contextmanager
def relayed(postgres_url: str) -> Iterator[tuple[str, CommitAnswerLost]]:
    """(the URL through a relay to the same database, the relay): arm it (`relay.armed.set()`) before the write."""
    parts = urlsplit(postgres_url)
    relay = CommitAnswerLost(parts.port or 5432)
    try:
        yield postgres_url.replace(f":{parts.port}/", f":{relay.port}/"), relay
    finally:
        relay.close()
