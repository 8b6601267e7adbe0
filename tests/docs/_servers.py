"""The servers a docs block marked `<!-- needs: SERVER -->` runs against, each started the way the rest of the suite
starts it: `postgres` (the session's own cluster, tests/_postgres.py), `redis` (a real redis-server, tests/_redis.py),
`otlp` (the in-process OTLP/gRPC collector of tests/tracing/_collector.py).

The rule a page writer relies on: in such a block, every address of the server's scheme (`postgresql://…`,
`redis://…`, `http://…`) is replaced by the test server's, and the replacement is printed; the variables in `env`
are set in the reader's shell too (the password through PGPASSWORD, as the docs teach, never in the URL).
After the page, `arrived` says what the server should have received and did not (None when it did)."""

from __future__ import annotations

import importlib.util
import re
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from _snippets import ROOT


@dataclass
class Server:
    name: str
    address: re.Pattern[str]  # the addresses a block shows for this server
    url: str  # the test server's, put in their place
    env: dict[str, str] = field(default_factory=dict)
    arrived: Callable[[], str | None] = lambda: None

    def fill(self, command: str) -> str:
        return self.address.sub(self.url, command)


def _postgres(request: pytest.FixtureRequest, tmp: Path) -> Iterator[Server]:
    url = request.getfixturevalue("postgres_url")  # skips, saying why, where no cluster starts
    parts = urlsplit(url)
    password = parts.password or ""
    bare = urlunsplit(parts._replace(netloc=f"{parts.username}@{parts.hostname}:{parts.port}"))

    def arrived() -> str | None:
        import psycopg

        with psycopg.connect(url) as conn:
            row = conn.execute("SELECT count(*) FROM runs").fetchone()
        return None if row and row[0] else "no run was stored in the PostgreSQL database"

    yield Server("postgres", re.compile(r"postgresql://[^\s\"']+"), bare, {"PGPASSWORD": password}, arrived)


def _redis(request: pytest.FixtureRequest, tmp: Path) -> Iterator[Server]:
    from _redis import NoRedis, redis_server

    with ExitStack() as stack:
        try:
            url = stack.enter_context(redis_server(tmp / "redis"))
        except NoRedis as exc:
            pytest.skip(f"no redis-server can be started here: {exc}")

        def arrived() -> str | None:
            import redis

            client = redis.Redis.from_url(url)
            try:
                seen = client.xlen("sherpa:topic:accepted") if client.exists("sherpa:topic:accepted") else 0
            finally:
                client.close()
            return None if seen else "no event reached sherpa:topic:accepted: the agents did not finish a task"

        yield Server("redis", re.compile(r"redis://[^\s\"']+"), url, arrived=arrived)


def _otlp(request: pytest.FixtureRequest, tmp: Path) -> Iterator[Server]:
    for module in ("grpc", "opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.grpc"):
        pytest.importorskip(module, reason="the otel extra is not installed (pip install 'sherpa-skills[otel]')")
    spec = importlib.util.spec_from_file_location("_docs_collector", ROOT / "tests" / "tracing" / "_collector.py")
    assert spec and spec.loader
    collector_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(collector_module)
    collector = collector_module.Collector()
    collector.server.start()
    try:

        def arrived() -> str | None:
            names = {s.name for s in collector.spans()}
            if any(n.startswith("invoke_workflow") for n in names):
                return None
            return f"the collector received no invoke_workflow span (got {sorted(names)})"

        # A loaded test machine may need more than the default 1 s to flush at exit; the rule is printed.
        env = {"SHERPA_SKILLS_TRACES_FLUSH_SECONDS": "15"}
        yield Server("otlp", re.compile(r"https?://[^\s\"']+"), f"http://127.0.0.1:{collector.port}", env, arrived)
    finally:
        collector.server.stop(0)


SERVERS: dict[str, Callable[[pytest.FixtureRequest, Path], Iterator[Server]]] = {
    "postgres": _postgres,
    "redis": _redis,
    "otlp": _otlp,
}
MARKS = {"postgres": [pytest.mark.postgres]}  # as the rest of the suite marks what needs a PostgreSQL server


@contextmanager
def started(name: str, request: pytest.FixtureRequest, tmp: Path) -> Iterator[Server]:
    yield from SERVERS[name](request, tmp)


def wait_arrived(server: Server, timeout: float = 120) -> str | None:
    """Poll what the server should have received (agents and exporters finish after the command returns)."""
    deadline = time.monotonic() + timeout
    while True:
        problem = server.arrived()
        if problem is None or time.monotonic() > deadline:
            return problem
        time.sleep(0.5)
