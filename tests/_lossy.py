"""A TCP relay to the test PostgreSQL server that loses a COMMIT's answer on the way back: the commit landed, the client
cannot know."""

from __future__ import annotations

import re
import socket
import threading


class CommitAnswerLost:
    """A TCP relay to the server that, once armed, lets one COMMIT through and cuts the connection before its
    answer comes back: the commit landed, the client cannot know."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.armed = threading.Event()
        self.cut = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target))
            threading.Thread(target=self._pipe, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, False), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, upstream: bool) -> None:
        prepared: set[bytes] = set()  # psycopg prepares a statement run often: COMMIT is then sent by its name
        try:
            while data := src.recv(65536):
                prepared.update(re.findall(rb"([A-Za-z0-9_]+)\x00COMMIT\x00", data))
                commit = b"COMMIT\x00" in data or any(b"\x00" + n + b"\x00" in data for n in prepared)
                if upstream and self.armed.is_set() and commit:
                    self.armed.clear()
                    dst.sendall(data)
                    import time

                    time.sleep(0.5)  # the server commits meanwhile
                    self.cut.set()
                    for s in (src, dst):
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
