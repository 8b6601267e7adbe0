"""The MCP server's worker threads: a fixed few run every tool call and resource read, each thread with stores of its
own, and `close()` closes every store they opened.

A store is not shared between threads: its reads run on the connection outside the write lock, so one thread's read
would land inside another's open transaction (its uncommitted rows; on PostgreSQL an error there aborts the other's
write), and the matcher's caches are unguarded. So each thread keeps its own `Home` and the replay, capture and memory
code its own stores (`home.per_home`, per home and thread); the threads are few and live as long as the server, so what
they hold is bounded by WORKERS, never by how many threads an executor made over the server's life.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import structlog

from ..home import close_per_thread, per_home
from ..stores import Home

log = structlog.get_logger(__name__)
T = TypeVar("T")

#: Tool calls served at once. Each thread holds up to four connections (its Home's, the replay machine's skill store,
#: shared memory's and its indexer's): 3 × 4 stays under PostgreSQL's pool of 16 (db/postgres.py POOL_SIZE).
WORKERS = 3
STOPPING = "the server is stopping: call again once it is restarted"


class ServerStopping(Exception):
    """A call that arrived after the server began to stop."""


class ToolThreads:
    """WORKERS threads named `sherpa-mcp_N`, started as calls come; `home_here()` is the calling thread's `Home`."""

    def __init__(self, home: Path, workers: int = WORKERS) -> None:
        self.home = home
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="sherpa-mcp", initializer=self._started)

    def _started(self) -> None:
        with self._lock:
            self._threads.append(threading.current_thread())

    async def run(self, fn: Callable[[], T]) -> T:
        """`fn()` on one of the worker threads, awaited without blocking the event loop."""
        try:
            future = self._pool.submit(fn)
        except RuntimeError:  # the pool was shut down: the server is stopping
            raise ServerStopping(STOPPING) from None
        return await asyncio.wrap_future(future)

    def home_here(self) -> Home:
        """This thread's Home, opened on its first call and kept until `close()`."""
        if self._closed:  # a Home opened now would outlive the close that already ran
            raise ServerStopping(STOPPING)
        return per_home(Home, self.home)

    def close(self) -> None:
        """Let the running calls finish (queued ones are dropped), then close every store the threads opened: their
        Homes, and what replay, capture and memory opened on them. A second close closes nothing twice."""
        self._closed = True
        self._pool.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            threads, self._threads = self._threads, []
        closed = close_per_thread(threads)
        # chromadb's SQLite connections of the ended threads wait in reference cycles: collected now, their files close
        # with the server rather than at some later collection.
        gc.collect()
        if threads:
            log.info("mcp_stores_closed", home=str(self.home), threads=len(threads), closed=closed)
