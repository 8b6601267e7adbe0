"""`sherpa-skills mcp` talked to by the SDK's own client (ClientSession over stdio), the server in a subprocess."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from sherpa_skills import SkillStore  # noqa: E402

TASK = "Move the app log into the archive folder"


def learned(home: Path) -> str:
    skills = SkillStore(home)
    captured = skills.capture(
        "rotate-logs",
        ["mkdir -p archive", "touch app.log", "mv app.log archive/app-{{ label }}.log"],
        description=TASK,
    )
    assert captured.procedure is not None
    skills.promote(captured.procedure.id)
    return captured.procedure.id


async def _session(home: Path, cwd: Path, extra: list[str], script: Any) -> Any:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "sherpa_skills", "mcp", "--home", str(home), *extra],
        env={
            "PYTHONPATH": os.pathsep.join(sys.path),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "HF_HUB_OFFLINE": "1",
            **{k: v for k, v in os.environ.items() if k.startswith("SHERPA_SKILLS_") and k != "SHERPA_SKILLS_HOME"},
        },
        cwd=str(cwd),
    )
    with open(os.devnull, "w") as quiet:
        async with stdio_client(params, errlog=quiet) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await script(session)


def talk(home: Path, cwd: Path, script: Any, *extra: str) -> Any:
    return asyncio.run(asyncio.wait_for(_session(home, cwd, list(extra), script), timeout=240))


async def call(session: ClientSession, tool: str, **arguments: Any) -> tuple[bool, Any]:
    result = await session.call_tool(tool, arguments)
    if result.is_error:
        return True, result.content[0].text
    if result.structured_content is not None:
        content = result.structured_content
        return False, content.get("result", content) if set(content) == {"result"} else content
    return False, json.loads(result.content[0].text)


def test_an_agent_finds_confirms_dry_runs_captures_and_is_refused_where_it_must_be(tmp_path: Path) -> None:
    home = tmp_path / "home"
    pid = learned(home)

    async def script(session: ClientSession) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        tools = (await session.list_tools()).tools
        seen["tools"] = {t.name: t for t in tools}
        seen["prompts"] = [p.name for p in (await session.list_prompts()).prompts]
        seen["prompt"] = (await session.get_prompt("use_procedures")).messages[0].content.text
        seen["find"] = await call(session, "find_procedure", task=f'{TASK}, labelled "monday"')
        seen["vague"] = await call(session, "find_procedure", task="archive the log")
        seen["none"] = await call(session, "find_procedure", task="what is the weather in Paris")
        seen["confirm"] = await call(session, "confirm_procedure", task="archive the log", procedure_id=pid)
        seen["after_confirm"] = await call(session, "find_procedure", task="archive the log")
        seen["reject"] = await call(session, "confirm_procedure", task="archive the log", procedure_id=None)
        seen["after_reject"] = await call(session, "find_procedure", task="archive the log")
        seen["dry"] = await call(session, "replay_procedure", procedure_id=pid, params={"label": "monday"})
        seen["execute"] = await call(
            session, "replay_procedure", procedure_id=pid, params={"label": "monday"}, execute=True
        )
        seen["unknown"] = await call(session, "replay_procedure", procedure_id="no-such-thing")
        seen["undeclared"] = await call(session, "replay_procedure", procedure_id=pid, params={"colour": "red"})
        seen["inject"] = await call(session, "replay_procedure", procedure_id=pid, params={"label": "x; rm -rf ~"})
        seen["huge"] = await call(session, "find_procedure", task="x" * 1_000_000)
        seen["wrong_type"] = await call(session, "find_procedure", task=["not", "text"])
        seen["capture"] = await call(
            session, "capture_procedure", task="build the docs site", steps=["make -C docs html", "make -C docs check"]
        )
        seen["outcome"] = await call(session, "record_outcome", procedure_id=pid, outcome="success")
        seen["write"] = await call(session, "write_memory", text="deploys go to ci-7", scope="private")
        seen["search"] = await call(session, "search_memory", query="where do deploys go")
        seen["relevant"] = await call(session, "relevant_tools", task="run a shell command")
        seen["learnings"] = await call(session, "learnings_for", task="build the frontend")
        return seen

    seen = talk(home, tmp_path, script)
    tools = seen["tools"]
    assert set(tools) == {
        "find_procedure",
        "confirm_procedure",
        "replay_procedure",
        "record_outcome",
        "capture_procedure",
        "relevant_tools",
        "learnings_for",
        "search_memory",
        "write_memory",
    }
    assert tools["find_procedure"].annotations.read_only_hint is True
    assert tools["replay_procedure"].annotations.destructive_hint is True
    assert tools["find_procedure"].input_schema["required"] == ["task"]
    assert seen["prompts"] == ["use_procedures"] and "needs-confirmation" in seen["prompt"]

    error, found = seen["find"]
    assert not error and found["decision"] == "dry-run" and found["procedure_id"] == pid
    assert found["params"] == {"label": "monday"} and found["candidates"][0]["parameters"] == ["label"]
    assert seen["vague"][1]["decision"] in ("needs-confirmation", "no-match")
    assert seen["none"][1]["decision"] == "no-match"
    assert seen["confirm"][1] == {"recorded": "accepted", "task": "archive the log", "procedure_id": pid, "alias": "a1"}
    assert seen["after_confirm"][1]["decision"] == "dry-run"  # the confirmed wording is an alias now
    assert seen["reject"][1]["recorded"] == "rejected"
    assert seen["after_reject"][1]["decision"] == "no-match"

    error, dry = seen["dry"]
    assert not error and dry["status"] == "dry-run"
    assert [s["command"] for s in dry["steps"]][-1] == "mv app.log archive/app-monday.log"
    error, refused = seen["execute"]
    assert error and "--allow-execute" in refused
    assert not (tmp_path / "archive").exists()
    assert seen["unknown"][0] and "unknown procedure 'no-such-thing'" in seen["unknown"][1]
    assert seen["undeclared"][0] and "declares no parameter colour" in seen["undeclared"][1]
    assert seen["inject"][0] and "shell metacharacter ';'" in seen["inject"][1]
    assert seen["huge"][0] and "'task' has 1,000,000 characters, over 4,000: say it" in seen["huge"][1]
    assert seen["wrong_type"][0] and "task" in seen["wrong_type"][1]

    error, captured = seen["capture"]
    assert not error and captured["status"] == "candidate"
    assert SkillStore(home).get(captured["procedure_id"]).status == "candidate"
    assert seen["outcome"][1]["recorded"] == "claim" and seen["outcome"][1]["counted"] is False
    error, hits = seen["search"]
    assert not error and [h["text"] for h in hits["hits"]] == ["deploys go to ci-7"]
    assert not seen["relevant"][0] and any(t["name"] == "shell" for t in seen["relevant"][1])
    assert not seen["learnings"][0] and seen["learnings"][1]["found"] == []


def test_execute_with_allow_execute_runs_the_steps_and_memory_stays_private(tmp_path: Path) -> None:
    home = tmp_path / "home"
    pid = learned(home)
    work = tmp_path / "work"
    work.mkdir()

    async def as_ops(session: ClientSession) -> Any:
        await call(session, "write_memory", text="the ops runbook lives in ops/", scope="private")
        return await call(
            session, "replay_procedure", procedure_id=pid, params={"label": "monday"}, execute=True, task=TASK
        )

    error, result = talk(home, work, as_ops, "--allow-execute", "--agent", "ops")
    assert not error and result["status"] == "succeeded", result
    assert (work / "archive" / "app-monday.log").exists()

    async def as_someone_else(session: ClientSession) -> Any:
        return await call(session, "search_memory", query="where is the ops runbook")

    error, hits = talk(home, work, as_someone_else, "--agent", "dev")
    assert not error and hits["hits"] == []  # another agent's private note is never returned


def test_the_schemas_are_the_contract_and_what_they_refuse_is_named(tmp_path: Path) -> None:
    home = tmp_path / "home"
    pid = learned(home)

    async def script(session: ClientSession) -> dict[str, Any]:
        seen: dict[str, Any] = {"init": await session.initialize()}
        seen["tools"] = {t.name: t.input_schema for t in (await session.list_tools()).tools}
        seen["bogus"] = await call(session, "find_procedure", task=TASK, bogus=1)
        seen["empty_params"] = await call(session, "find_procedure", task=TASK, params={})
        for given in ("yes", 1, "true"):
            seen[f"execute {given!r}"] = await call(
                session, "replay_procedure", procedure_id=pid, params={"label": "x"}, execute=given
            )
        seen["steps"] = await call(session, "capture_procedure", task="build it", steps=["make"] * 51)
        seen["long_step"] = await call(session, "capture_procedure", task="build it", steps=["x" * 4001])
        seen["long_id"] = await call(session, "replay_procedure", procedure_id="p" * 10_000)
        seen["missing"] = await call(session, "find_procedure")
        return seen

    seen = talk(home, tmp_path, script, "--allow-execute")
    tools = seen["tools"]
    assert all(schema["additionalProperties"] is False for schema in tools.values())
    assert tools["find_procedure"]["properties"]["task"]["maxLength"] == 4000
    steps = tools["capture_procedure"]["properties"]["steps"]
    assert (steps["maxItems"], steps["minItems"], steps["items"]["maxLength"]) == (50, 1, 4000)
    assert tools["replay_procedure"]["properties"]["execute"]["type"] == "boolean"

    error, refused = seen["bogus"]
    assert error and "unknown argument 'bogus'" in refused and "task, params" in refused
    assert not seen["empty_params"][0]
    for given in ("yes", 1, "true"):
        error, refused = seen[f"execute {given!r}"]
        assert error and "'execute' must be true or false" in refused, refused
    assert not (tmp_path / "archive").exists()  # none of them executed
    assert seen["steps"][0] and "'steps' has 51 items, over 50" in seen["steps"][1]
    assert seen["long_step"][0] and "'steps.0' has 4,001 characters, over 4,000" in seen["long_step"][1]
    assert seen["long_id"][0] and "'procedure_id' has 10,000 characters, over 500" in seen["long_id"][1]
    assert seen["missing"][0] and "argument 'task' is required" in seen["missing"][1]

    from sherpa_skills.data import package_version

    init = seen["init"]
    assert init.server_info.version == package_version() and init.server_info.version
    assert init.capabilities.resources is not None  # advertised, and served: see the next test


def test_procedures_are_served_as_the_resources_the_server_advertises(tmp_path: Path) -> None:
    home = tmp_path / "home"
    pid = learned(home)

    async def script(session: ClientSession) -> dict[str, Any]:
        listed = (await session.list_resources()).resources
        read = await session.read_resource(str(listed[0].uri))
        try:
            await session.read_resource("sherpa-skills://procedures/no-such-thing")
            unknown = None
        except Exception as exc:  # the SDK raises the JSON-RPC error
            unknown = str(exc)
        return {"listed": listed, "read": read, "unknown": unknown}

    seen = talk(home, tmp_path, script)
    assert [str(r.uri) for r in seen["listed"]] == [f"sherpa-skills://procedures/{pid}"]
    assert seen["listed"][0].description == TASK
    procedure = json.loads(seen["read"].contents[0].text)
    assert procedure["id"] == pid and procedure["steps"][-1]["command"] == "mv app.log archive/app-{{ label }}.log"
    assert seen["unknown"] and "unknown procedure 'no-such-thing'" in seen["unknown"]


def test_aliases_an_agent_writes_are_credited_to_the_agent(tmp_path: Path) -> None:
    home = tmp_path / "home"
    pid = learned(home)

    async def script(session: ClientSession) -> Any:
        plain = await call(session, "replay_procedure", procedure_id=pid, params={"label": "x"})
        with_task = await call(
            session, "replay_procedure", procedure_id=pid, params={"label": "x"}, task="file away the app log"
        )
        confirmed = await call(session, "confirm_procedure", task="put the app log in the archive", procedure_id=pid)
        found = await call(session, "find_procedure", task="put the app log in the archive")
        return plain, with_task, confirmed, found

    async def another(session: ClientSession) -> Any:
        read = await session.read_resource(f"sherpa-skills://procedures/{pid}")
        return await call(session, "find_procedure", task="put the app log in the archive"), read

    plain, with_task, confirmed, found = talk(home, tmp_path, script, "--agent", "ops")
    assert not plain[0] and not with_task[0] and not confirmed[0]
    # Its own answer replays for it; another agent and a person are asked, as before it answered (they are its claims).
    assert (found[1]["decision"], found[1]["procedure_id"]) == ("dry-run", pid)
    found_by_eve, read_by_eve = talk(home, tmp_path, another, "--agent", "eve")
    assert found_by_eve[1]["decision"] == "needs-confirmation"
    assert json.loads(read_by_eve.contents[0].text)["aliases"] == []  # another agent's wordings are not shown to it
    assert SkillStore(home).match("put the app log in the archive").decision == "needs-confirmation"
    aliases = SkillStore(home).aliases(pid)
    assert sorted(a.text for a in aliases) == ["file away the app log", "put the app log in the archive"]
    assert {a.by for a in aliases} == {"agent:ops"}  # never the OS user the server runs as
    assert with_task[1]["alias"]["by"] == "agent:ops"
    # The agent's answers are claims for the store's own match floor: shown, never counted (skills/match/floor.py).
    [floor] = SkillStore(home).match_floors()
    assert (floor.basis, floor.counted, floor.claims) == ("shipped", 0, 2)


def test_a_line_that_is_not_a_json_rpc_message_gets_a_json_rpc_error(tmp_path: Path) -> None:
    import subprocess
    import threading

    lines = [
        "{not json",
        json.dumps({"jsonrpc": "2.0", "id": 7, "method": 5}),
        json.dumps({"jsonrpc": "2.0", "id": 8, "method": "ping"}),
    ]
    server = subprocess.Popen(
        [sys.executable, "-m", "sherpa_skills", "mcp", "--home", str(tmp_path / "home")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "HF_HUB_OFFLINE": "1"},
        cwd=tmp_path,
    )
    assert server.stdin is not None and server.stdout is not None
    watchdog = threading.Timer(120, server.kill)  # an unanswered line must fail the test, not hang it
    watchdog.start()
    try:
        server.stdin.write("\n".join(lines) + "\n")
        server.stdin.flush()
        replies = [json.loads(server.stdout.readline() or "null") for _ in lines]  # read before hanging up
    finally:
        watchdog.cancel()
        server.stdin.close()
        server.wait(timeout=60)
    assert [r and r.get("id") for r in replies] == [None, 7, 8], replies
    assert replies[0]["error"]["code"] == -32700 and "not JSON" in replies[0]["error"]["message"]
    assert replies[1]["error"]["code"] == -32600
    assert replies[2]["result"] == {}  # the server keeps serving after both


def test_a_procedure_resource_shows_its_aliases_and_the_run_each_came_from(tmp_path: Path) -> None:
    """Two refund tickets in other words took one path: one procedure, whose resource lists the second wording as
    its alias with the run it came from."""
    from sherpa_skills import load_workflow

    home = tmp_path / "home"
    workflow = load_workflow(Path(__file__).resolve().parents[2] / "examples" / "ticket_learning" / "workflow.yaml")
    with SkillStore(home) as skills:
        workflow.agent(learn=skills).run({"ticket": "Please refund my order, it arrived damaged", "order": "1"})
        second = workflow.agent(learn=skills).run(
            {"ticket": "I was sent a broken kettle, I want a refund", "order": "2"}
        )
        [proc] = skills.procedures("ticket-learning")
        [alias] = skills.aliases(proc.id)

    async def script(session: ClientSession) -> Any:
        return await session.read_resource(f"sherpa-skills://procedures/{proc.id}")

    shown = json.loads(talk(home, tmp_path, script).contents[0].text)
    source = f"run:{second.run_id}"
    assert (shown["id"], shown["success_count"]) == (proc.id, 2)
    assert shown["aliases"] == [
        {
            "id": alias.id,
            "text": "I was sent a broken kettle, I want a refund {{ order }}",
            "source": source,
            "by": source,
            "scope": "ticket-learning",
        }
    ]
