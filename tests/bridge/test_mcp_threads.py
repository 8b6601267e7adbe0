"""The MCP server's stores under many clients: a fixed few worker threads serve every call, each with its own stores,
and stopping the server closes every one it opened. The SDK's own client, in process (so this process's open files
are the server's), several at once."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402

from sherpa_skills import SkillStore  # noqa: E402
from sherpa_skills.bridge.mcp_server import build_server  # noqa: E402
from sherpa_skills.bridge.mcp_tools import Bridge  # noqa: E402
from sherpa_skills.bridge.tool_threads import WORKERS  # noqa: E402

TASK = "Move the app log into the archive folder"
#: Connections a worker thread may hold to store.db: its Home's, the replay machine's skill store, shared memory's and
#: that memory's indexer's.
PER_THREAD = 4


_LEARN = """
import sys
from sherpa_skills import SkillStore
with SkillStore(sys.argv[1]) as skills:
    captured = skills.capture("rotate-logs", ["mkdir -p archive", "mv app.log archive/app-{{ label }}.log"],
                              description=sys.argv[2])
    print(skills.promote(captured.procedure.id).id)
"""


def learned(home: Path) -> str:
    """A promoted procedure, learned in another process: this one then holds no file of the home before the server
    opens its own (SQLite keeps a closed connection's file open while another connection of the process locks it)."""
    done = subprocess.run(
        [sys.executable, "-c", _LEARN, str(home), TASK],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    return done.stdout.strip().splitlines()[-1]


def held(home: Path) -> Counter[str]:
    """The files under `home` this process holds open, by path inside it."""
    found: Counter[str] = Counter()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed since listed
            continue
        if target.startswith(f"{home}{os.sep}"):
            found[os.path.relpath(target, home)] += 1
    return found


async def tool(client: Client, name: str, **arguments: Any) -> Any:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, (name, result.content)
    content = result.structured_content or {}
    return content.get("result", content) if set(content) == {"result"} else content


def connections(files: Counter[str]) -> int:
    """Open SQLite connections to store.db: each holds the -wal file open (store.db's own descriptor SQLite may keep a
    while after its connection closed, for the next to reuse, so that count runs over)."""
    return files["store.db-wal"]


def workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("sherpa-mcp")]


def test_many_clients_are_served_by_a_few_threads_stores_and_stopping_closes_every_one(tmp_path: Path) -> None:
    home = tmp_path / "home"
    pid = learned(home)
    assert held(home) == Counter()  # learned in another process: whatever is open later, the server opened
    bridge = Bridge(home, agent="ops")
    server = build_server(bridge)

    async def finder(i: int) -> None:
        async with Client(server) as client:
            for j in range(4):
                assert (await tool(client, "find_procedure", task=f"{TASK}, labelled {i}-{j}"))["decision"]

    async def everything(i: int) -> None:
        async with Client(server) as client:
            await tool(client, "find_procedure", task=TASK)
            await tool(client, "write_memory", text=f"client {i} deploys to ci-{i}")
            await tool(client, "search_memory", query="where do deploys go")
            await tool(client, "learnings_for", task="build the docs")
            await tool(client, "replay_procedure", procedure_id=pid, params={"label": f"c{i}"})
            await tool(client, "capture_procedure", task=f"build the docs of site {i}", steps=[f"make -C site{i}"])
            assert [str(r.uri) for r in (await client.list_resources()).resources] == [
                f"sherpa-skills://procedures/{pid}"
            ]

    async def waves() -> tuple[Counter[str], Counter[str], int]:
        await asyncio.gather(*(finder(i) for i in range(12)))
        finding = held(home)
        await asyncio.gather(*(everything(i) for i in range(12)))
        return finding, held(home), len(workers())

    try:
        finding, serving, threads = asyncio.run(waves())
    finally:
        bridge.close()
    # Twelve clients at once, one connection per thread that found: never more threads than the server's few.
    assert threads <= WORKERS
    assert connections(finding) <= WORKERS, finding
    assert connections(serving) <= WORKERS * PER_THREAD, serving
    # Stopped: every file the server opened is closed (its SQLite connections, the companion's), its threads are gone.
    assert held(home) == Counter()
    assert workers() == []


def test_two_clients_writing_at_once_lose_nothing_and_each_reads_the_others(tmp_path: Path) -> None:
    home = tmp_path / "home"
    pid = learned(home)
    bridge = Bridge(home, agent="ops")
    server = build_server(bridge)
    captured: dict[int, list[str]] = {0: [], 1: []}
    seen: dict[int, set[str]] = {0: set(), 1: set()}

    async def writer(k: int) -> None:
        async with Client(server) as client:
            for j in range(8):
                await tool(client, "record_outcome", procedure_id=pid, outcome="success")
                if j % 2:
                    steps = [f"make -C site{k} page{j}"]
                    answer = await tool(client, "capture_procedure", task=f"build page {j} of site {k}", steps=steps)
                    captured[k].append(answer["procedure_id"])
                await tool(client, "write_memory", text=f"writer {k} note {j}", scope="shared")

    async def both() -> None:
        await asyncio.gather(writer(0), writer(1))
        for k in (0, 1):  # each client reads what the other wrote
            async with Client(server) as client:
                hits = await tool(client, "search_memory", query=f"writer {1 - k} note")
                seen[k] = {h["text"] for h in hits["hits"]}
                for other in captured[1 - k]:
                    assert (await tool(client, "record_outcome", procedure_id=other, outcome="failure"))["claimed"]

    try:
        asyncio.run(both())
    finally:
        bridge.close()
    assert all(any(f"writer {1 - k} note" in text for text in seen[k]) for k in (0, 1)), seen
    skills = SkillStore(home)
    assert skills.get(pid).claimed_successes == 16  # sixteen claims from two threads' connections, none lost
    candidates = {p.id for p in skills.procedures(include_candidates=True) if p.status == "candidate"}
    assert candidates == set(captured[0]) | set(captured[1]) and len(candidates) == 8


def test_a_stopped_server_refuses_a_call_in_words_and_stops_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    learned(home)
    bridge = Bridge(home)
    server = build_server(bridge)

    async def after_stop() -> Any:
        async with Client(server) as client:
            await tool(client, "find_procedure", task=TASK)
            bridge.close()
            return await client.call_tool("find_procedure", {"task": TASK})

    result = asyncio.run(after_stop())
    bridge.close()  # a second stop closes nothing twice
    assert result.is_error and "the server is stopping" in result.content[0].text, result.content
    assert held(home) == Counter()


@pytest.mark.postgres
def test_on_postgresql_many_clients_stay_within_the_pool_and_stopping_gives_every_connection_back(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each thread's stores hold pooled connections: a thread per call once emptied the pool of 16 (a call then waited
    10 s and failed); the server's few threads stay within it, and stopping returns them all."""
    from sherpa_skills.db import postgres

    monkeypatch.setenv("SHERPA_SKILLS_DATABASE", postgres_url)
    home = tmp_path / "home"
    pid = learned(home)
    bridge = Bridge(home, agent="ops")
    server = build_server(bridge)

    async def everything(i: int) -> None:
        async with Client(server) as client:
            await tool(client, "find_procedure", task=TASK)
            await tool(client, "write_memory", text=f"client {i} deploys to ci-{i}")
            await tool(client, "search_memory", query="where do deploys go")
            await tool(client, "replay_procedure", procedure_id=pid, params={"label": f"c{i}"})
            await tool(client, "capture_procedure", task=f"build the docs of site {i}", steps=[f"make -C site{i}"])

    async def clients() -> int:
        await asyncio.gather(*(everything(i) for i in range(12)))
        stats = postgres._pools[postgres_url].get_stats()
        return stats.get("pool_size", 0) - stats.get("pool_available", 0)

    try:
        checked_out = asyncio.run(clients())
    finally:
        bridge.close()
    assert checked_out <= WORKERS * PER_THREAD <= postgres.POOL_SIZE
    stats = postgres._pools[postgres_url].get_stats()
    assert stats.get("pool_size", 0) - stats.get("pool_available", 0) == 0, stats  # every one given back
