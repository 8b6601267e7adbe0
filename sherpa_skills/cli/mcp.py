"""`sherpa-skills mcp`: serve the skill store to agents over the Model Context Protocol (the `mcp` extra)."""

from __future__ import annotations

import argparse
from typing import Any

from .console import EXIT_OK


def cmd_mcp(args: argparse.Namespace) -> int:
    from ..errors import UsageError
    from ..home import resolve_home
    from ..logs import configure

    try:
        import mcp  # noqa: F401  the SDK is an extra: say how to get it rather than fail on import
    except ImportError:
        raise UsageError("`sherpa-skills mcp` needs the mcp extra: pip install 'sherpa-skills[mcp]'") from None
    from ..bridge.mcp_server import serve
    from ..bridge.mcp_tools import Bridge

    home = resolve_home(args.home)
    (home / "logs").mkdir(exist_ok=True)
    # stdout is the protocol's channel: logs go to the file only.
    configure(level="critical", json_file=home / "logs" / "mcp.jsonl")
    try:
        serve(Bridge(home, agent=args.agent, allow_execute=args.allow_execute), http=args.http, port=args.port)
    except Exception as error:  # the SDK's task group (an exception group): a transport that cannot be read or written
        if not args.http and _stdio_failed(error):
            raise UsageError(
                "sherpa-skills mcp speaks MCP over stdin/stdout, which cannot be read here; an editor or MCP client "
                "launches it with pipes (or serve it with --http)"
            ) from None
        raise
    return EXIT_OK


def _stdio_failed(error: BaseException) -> bool:
    """Whether `error` (an exception group, on 3.10 the backport's) holds only the standard streams failing: closed,
    captured, not readable."""
    inner = getattr(error, "exceptions", None)
    if inner is None:
        return False
    leaves: list[BaseException] = []

    def walk(found: BaseException) -> None:
        nested = getattr(found, "exceptions", None)
        if nested is None:
            leaves.append(found)
        else:
            for each in nested:
                walk(each)

    walk(error)
    return all(isinstance(e, (OSError, ValueError, EOFError)) for e in leaves)


def add_mcp_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "mcp",
        parents=[common],
        help="serve the skill store to agents over MCP (stdio; --http for 127.0.0.1)",
        description="An MCP server: find, confirm, replay and capture procedures, the tool index, past failures and "
        "shared memory, for the agent named --agent. Needs the mcp extra: pip install 'sherpa-skills[mcp]'.",
    )
    p.set_defaults(fn=cmd_mcp)
    p.add_argument(
        "--agent",
        default="mcp",
        help="who the server speaks as: in shared memory, and credited with the aliases it records (default: mcp)",
    )
    p.add_argument(
        "--allow-execute",
        action="store_true",
        help="let replay_procedure run steps (execute=true); without it only dry runs are served",
    )
    p.add_argument("--http", action="store_true", help="streamable HTTP on 127.0.0.1 instead of stdio")
    p.add_argument("--port", type=int, default=8765, help="the --http port (default 8765)")
