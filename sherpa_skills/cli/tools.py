"""`sherpa-skills tools relevant`: the tools a task names or describes."""

from __future__ import annotations

import argparse

from .console import EXIT_OK
from .console import console as _console
from .console import print_json as _print_json


def cmd_tools_relevant(args: argparse.Namespace) -> int:
    from ..engine.registry import registered_tools
    from ..semantic.tool_index import ToolIndex, load_tools

    tools = [t for f in args.tools for t in load_tools(f)] if args.tools else registered_tools()
    ranked = ToolIndex(tools).relevant(args.task, limit=args.limit)
    if args.json:
        _print_json([r.to_dict() for r in ranked])
        return EXIT_OK
    console = _console()
    for r in ranked:
        console.print(
            f"[bold]{r.tool.name}[/] [dim]{r.score:.2f}[/]  {r.tool.description}  [dim]({', '.join(r.matched)})[/]"
        )
    if not ranked:
        console.print(f"no tool among {len(tools)} matches that task")
    return EXIT_OK
