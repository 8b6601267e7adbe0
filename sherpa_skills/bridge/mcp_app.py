"""The SDK's MCP server as sherpa-skills serves it: procedures are its resources (the capability it advertises is
served), and a line on stdio that is not a JSON-RPC message gets a JSON-RPC error instead of silence."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError, Resource
from pydantic import ValidationError

if TYPE_CHECKING:
    from .tool_threads import ToolThreads

#: Where a procedure is read as a resource: its JSON (description, steps, conditions, status, confidence, and its
#: aliases: the other wordings it is known by, each with where it came from).
PROCEDURE_URI = "sherpa-skills://procedures/{procedure_id}"


class ProceduresServer(MCPServer[Any]):
    """An MCPServer over one home: its active procedures listed as resources, any one read by id, on the threads
    (`threads`) that run the tools."""

    def __init__(self, threads: ToolThreads, agent: str = "mcp", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.threads = threads
        self.agent = f"agent:{agent}"  # who reads: another agent's aliases are its own, never shown here
        self.home = threads.home
        self.resource(
            PROCEDURE_URI,
            name="procedure",
            description="a stored procedure: its description, parameters, steps and aliases (its other wordings)",
            mime_type="application/json",
        )(self._read_procedure)

    async def list_resources(self) -> list[Resource]:
        return await self.threads.run(self._procedures)  # on the tools' threads, with their stores

    def _procedures(self) -> list[Resource]:
        return [
            Resource(
                uri=PROCEDURE_URI.format(procedure_id=p.id),
                name=p.id,
                description=p.description or p.task_type,
                mime_type="application/json",
            )
            for p in self.threads.home_here().skills.procedures()
        ]

    async def _read_procedure(self, procedure_id: str) -> str:
        return await self.threads.run(lambda: self._procedure_json(procedure_id))

    def _procedure_json(self, procedure_id: str) -> str:
        from ..errors import SherpaError

        skills = self.threads.home_here().skills
        try:
            proc = skills.get(procedure_id)
        except SherpaError:
            raise ResourceError(f"unknown procedure '{procedure_id[:200]}': resources/list lists them") from None
        shown = proc.model_dump(mode="json", include=_SHOWN)
        shown["aliases"] = [
            a.model_dump(mode="json", include=_ALIAS_SHOWN)
            for a in skills.aliases(proc.id, shown_to=self.agent)
            if a.kind == "alias"
        ]
        return json.dumps(shown)

    async def run_stdio_async(self) -> None:
        """The SDK's stdio loop behind a relay that answers what is not a JSON-RPC message (the SDK drops it)."""
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read_stream, write_stream):
            send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

            async def relay() -> None:
                async with send:
                    async for item in read_stream:
                        if isinstance(item, Exception):
                            try:
                                await write_stream.send(SessionMessage(malformed_reply(item)))
                            except anyio.ClosedResourceError:
                                return
                        else:
                            await send.send(item)

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(relay)
                lowlevel = self._lowlevel_server  # what the SDK's own run_stdio_async runs
                await lowlevel.run(receive, write_stream, lowlevel.create_initialization_options())
                tasks.cancel_scope.cancel()


_SHOWN = {"id", "task_type", "description", "steps", "kind", "preconditions", "postconditions", "tags", "version"}
_SHOWN |= {"status", "confidence", "success_count", "failure_count"}
#: An alias as a resource shows it: its wording, where it came from (`run:<run_id>`) and who confirmed it.
_ALIAS_SHOWN = {"id", "text", "source", "by", "scope"}


def malformed_reply(error: Exception) -> JSONRPCError:
    """JSON-RPC's answer to a line that is not JSON (-32700) or is JSON but not a message (-32600); the request's id
    when it has a usable one, else null as the spec says."""
    problems = error.errors() if isinstance(error, ValidationError) else []
    if not problems or any(p["type"] == "json_invalid" for p in problems):
        return JSONRPCError(
            jsonrpc="2.0",
            id=None,
            error=ErrorData(
                code=PARSE_ERROR, message="Parse error: the line is not JSON (one JSON-RPC message a line)"
            ),
        )
    sent: dict[str, Any] = next((p["input"] for p in problems if isinstance(p.get("input"), dict)), {})
    request_id = sent.get("id")
    shape = 'an object with jsonrpc "2.0", and a method (a request or notification) or an id and a result or error'
    return JSONRPCError(
        jsonrpc="2.0",
        id=request_id if isinstance(request_id, (str, int)) and not isinstance(request_id, bool) else None,
        error=ErrorData(code=INVALID_REQUEST, message=f"Invalid Request: not a JSON-RPC 2.0 message ({shape})"),
    )
