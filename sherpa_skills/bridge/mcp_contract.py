"""The MCP tools' input schemas as a contract: what a schema does not name is refused, and a refusal says which
argument and why in words an agent can act on (never pydantic's dump of the value it sent)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools.base import Tool
from pydantic import ConfigDict, ValidationError

if TYPE_CHECKING:
    from mcp.types import ToolAnnotations
    from pydantic import BaseModel


class ContractTool(Tool):
    """A tool whose arguments model forbids unknown arguments and whose argument errors name the argument."""

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):  # the SDK's wording dumps the rejected value
                raise ToolError(argument_problems(self.name, list(self.parameters["properties"]), exc.__cause__)) from (
                    exc.__cause__
                )
            raise


def contract_tool(fn: Callable[..., Any], annotations: ToolAnnotations) -> ContractTool:
    """The SDK's tool for `fn` with its arguments model closed: `additionalProperties: false`, and enforced."""
    tool = ContractTool.from_function(fn, annotations=annotations)
    assert isinstance(tool, ContractTool)  # from_function builds `cls`; the SDK annotates it as Tool
    closed = _closed(tool.fn_metadata.arg_model)
    tool.fn_metadata.arg_model = closed
    tool.parameters = closed.model_json_schema(by_alias=True)
    return tool


def _closed(model: type[BaseModel]) -> Any:
    class Closed(model):  # type: ignore[valid-type, misc]  # the SDK builds the model from the signature
        model_config = ConfigDict(extra="forbid", title=model.__name__)

    return Closed


def argument_problems(tool: str, known: list[str], exc: ValidationError) -> str:
    """Every rejected argument of one call, one clause each: `tool: unknown argument 'bogus' (it takes ...); ...`."""
    return f"{tool}: " + "; ".join(_problem(known, e) for e in exc.errors())


def _problem(known: list[str], error: Any) -> str:
    where = ".".join(str(p) for p in error["loc"])
    kind, ctx, given = error["type"], error.get("ctx") or {}, error.get("input")
    if kind == "extra_forbidden":
        return f"unknown argument '{where}' (it takes {', '.join(known)})"
    if kind == "missing":
        return f"argument '{where}' is required"
    if kind == "string_too_long":
        advice = ": say it in a sentence" if where in ("task", "query") else ""
        return f"'{where}' has {len(given):,} characters, over {ctx['max_length']:,}{advice}"
    if kind == "too_long":
        return f"'{where}' has {len(given):,} items, over {ctx['max_length']:,}"
    if kind in ("string_too_short", "too_short"):
        return f"'{where}' is empty"
    if kind == "bool_type":
        return f"'{where}' must be true or false (a JSON boolean), not {type(given).__name__} {_shown(given)}"
    return f"'{where}': {error['msg']}"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
