"""`sherpa-skills mcp`: the skill store served over the Model Context Protocol with the official `mcp` SDK (2.x).

stdio by default, as editors launch servers; `--http` serves streamable HTTP on 127.0.0.1 only, with the SDK's
host and origin check (DNS rebinding). Input schemas come from the tools' typed signatures (pydantic) and are the
contract: the limits `mcp_tools` enforces are in them, and they are closed (`mcp_contract`). Annotations say which
tools only read and which change the store. The tools themselves are `mcp_tools.Bridge`'s methods, run on the
bridge's few worker threads (`tool_threads`); when the server stops, `serve` closes every store they opened.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, StrictBool

from .match_answer import FindAnswer
from .mcp_tools import MAX_STEPS, MAX_TASK_CHARS, Bridge, ToolRefused
from .tool_threads import ServerStopping, ToolThreads

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

INSTRUCTIONS = (
    "sherpa-skills remembers shell procedures that worked. Before planning a shell task, call find_procedure. "
    "dry-run: replay_procedure it (a dry run first). needs-confirmation: judge the candidates yourself and answer "
    "with confirm_procedure (null: none of these). no-match: plan, and capture_procedure what worked."
)

USE_PROCEDURES = """Before you plan a task that runs shell commands, call `find_procedure` with the task in a sentence.

- `dry-run`: a stored procedure is this task. Call `replay_procedure` with its id and params (execute=false) and read
  the rendered steps. If they are what the task needs, replay it with execute=true (when the server allows it) or run
  them yourself, then `record_outcome`.
- `needs-confirmation`: up to five candidates are plausible but not sure. You are the judge: read each description,
  parameters and confidence. If one is the task, `confirm_procedure(task, procedure_id)` and replay it; if none is,
  `confirm_procedure(task, null)` and plan the task yourself.
- `no-match`: plan it yourself. If it worked, `capture_procedure` the commands: they wait for a person's review.

A replay that answers `diverged` stopped at the step whose exit code or output differed from what was recorded: read
`divergence` (expected and observed), take over from that step yourself, and `record_outcome(..., "failure", note)`.
Before planning, `learnings_for(task)` lists past failures worth avoiding.
"""

#: An id as find_procedure gives it; longer is never one.
MAX_ID_CHARS = 500
Task = Annotated[
    str, Field(description="what has to be done, in one sentence", min_length=1, max_length=MAX_TASK_CHARS)
]
Text = Annotated[str, Field(min_length=1, max_length=MAX_TASK_CHARS)]
ProcedureId = Annotated[str, Field(description="a procedure's id, as find_procedure gives it", max_length=MAX_ID_CHARS)]
Params = Annotated[
    dict[str, Annotated[str, Field(max_length=MAX_TASK_CHARS)]] | None,
    Field(description="parameter values by name (the procedure's `{{ name }}`s)"),
]
Steps = Annotated[
    list[Text], Field(description="the shell commands that worked, in order", min_length=1, max_length=MAX_STEPS)
]


def _guarded(fn: Callable[..., Any], threads: ToolThreads) -> Callable[..., Any]:
    """`fn` run on the bridge's threads (not the SDK's, which come and go: each would open stores of its own), its
    refusals the SDK's tool errors (their message reaches the agent as is)."""
    import functools

    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(fn)  # the SDK reads the tool's schema from `fn`'s signature
    async def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return await threads.run(functools.partial(fn, *args, **kwargs))
        except (ToolRefused, ServerStopping) as exc:
            raise ToolError(str(exc)) from None

    return call


def build_server(bridge: Bridge) -> MCPServer:
    from mcp.types import ToolAnnotations

    from ..data import package_version
    from .mcp_app import ProceduresServer
    from .mcp_contract import contract_tool

    reading = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
    recording = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

    def find_procedure(task: Task, params: Params = None) -> FindAnswer:
        """Has this been done before? dry-run (sure), needs-confirmation (you judge the candidates) or no-match."""
        return bridge.find_procedure(task, params)

    def confirm_procedure(
        task: Task,
        procedure_id: Annotated[
            str | None,
            Field(description="the candidate that is the task; null: none of these", max_length=MAX_ID_CHARS),
        ],
    ) -> dict[str, Any]:
        """Your answer to needs-confirmation: this procedure is the task, or (null) none of the candidates is. It
        shapes what you are offered next time, never what a person or another agent is."""
        return bridge.confirm_procedure(task, procedure_id)

    def replay_procedure(
        procedure_id: ProcedureId,
        params: Params = None,
        execute: Annotated[
            StrictBool, Field(description="run the steps (needs a server started with --allow-execute)")
        ] = False,
        task: Annotated[
            str | None,
            Field(
                description="the task, recorded as a confirmation of this procedure",
                min_length=1,
                max_length=MAX_TASK_CHARS,
            ),
        ] = None,
    ) -> dict[str, Any]:
        """The procedure's rendered steps (a dry run), or with execute=true each step's result and where it diverged."""
        return bridge.replay_procedure(procedure_id, params, execute, task)

    def record_outcome(
        procedure_id: ProcedureId,
        outcome: Literal["success", "failure"],
        note: Annotated[
            str | None, Field(description="what went wrong, for a failure", max_length=MAX_TASK_CHARS)
        ] = None,
    ) -> dict[str, Any]:
        """Tell the store how a procedure you ran yourself went: it keeps its health and confidence."""
        return bridge.record_outcome(procedure_id, outcome, note)

    def capture_procedure(
        task: Task,
        steps: Steps,
        description: Annotated[str | None, Field(max_length=MAX_TASK_CHARS)] = None,
    ) -> dict[str, Any]:
        """Keep the commands that did a task: they arrive as a candidate in the review queue, not yet replayable."""
        return bridge.capture_procedure(task, steps, description)

    def relevant_tools(task: Task) -> list[dict[str, Any]]:
        """The few registered actions relevant to the task (one Aho-Corasick pass over their keywords)."""
        return bridge.relevant_tools(task)

    def learnings_for(task: Task) -> dict[str, Any]:
        """Past failures relevant to the task, by meaning: what to avoid when planning it."""
        return bridge.learnings_for(task)

    def search_memory(query: Task) -> dict[str, Any]:
        """Search shared memory and this server's own private notes (never another agent's)."""
        return bridge.search_memory(query)

    def write_memory(
        text: Annotated[Text, Field(description="the note")],
        scope: Annotated[Literal["private", "shared"], Field(description="private: this agent's own")] = "private",
    ) -> dict[str, Any]:
        """Write a note as this server's agent: private (its own) or shared with every agent."""
        return bridge.write_memory(text, scope)

    tools: list[tuple[Callable[..., Any], ToolAnnotations]] = [
        (find_procedure, reading),
        (confirm_procedure, recording),
        (replay_procedure, ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=True)),
        (record_outcome, recording),
        (capture_procedure, recording),
        (relevant_tools, reading),
        (learnings_for, reading),
        (search_memory, reading),
        (write_memory, recording),
    ]
    server = ProceduresServer(
        bridge.threads,
        bridge.agent,
        name="sherpa-skills",
        version=package_version(),
        instructions=INSTRUCTIONS,
        tools=[contract_tool(_guarded(fn, bridge.threads), hints) for fn, hints in tools],
    )

    @server.prompt(name="use_procedures", description="when to call find_procedure and how to treat its answers")
    def use_procedures() -> str:
        return USE_PROCEDURES

    return server


def serve(bridge: Bridge, *, http: bool = False, port: int = 8765) -> None:
    """Run until the client hangs up (stdio) or Ctrl-C (HTTP, on 127.0.0.1 only); then close every store it opened."""
    try:
        _run(build_server(bridge), http=http, port=port)
    finally:
        bridge.close()


def _run(server: MCPServer, *, http: bool, port: int) -> None:
    if not http:
        server.run("stdio")
        return
    from mcp.server.transport_security import TransportSecuritySettings

    local = [f"127.0.0.1:{port}", f"localhost:{port}"]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=local,
        allowed_origins=[f"http://{h}" for h in local],
    )
    server.run("streamable-http", host="127.0.0.1", port=port, transport_security=security)
