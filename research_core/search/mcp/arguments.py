"""Which tool of a server answers a query, and the arguments it is called with.

The query goes in the configured `argument`; without one, in the tool's one string argument
(of several, the only required one; of several required, the one named query, q, search, text
or keywords; else the server must name it). Fixed `arguments` fill the tool's other
arguments; an integer argument named limit, max_results, top_k, count or num_results gets the
number of hits wanted. A tool whose required arguments stay unfilled is refused with the
names it needs. The read tool (the configured one, else one named read or fetch) takes a
document's URI the same way (uri, url, id or path).
"""

from __future__ import annotations

from typing import Any

from mcp.types import Tool

from research_core.search.mcp.connection import McpFailed
from research_core.settings.mcp import McpServer

QUERY_NAMES = ("query", "q", "search", "text", "keywords")
LIMIT_NAMES = ("limit", "max_results", "top_k", "count", "num_results")
URI_NAMES = ("uri", "url", "id", "path")
READ_NAMES = ("read", "fetch")


def search_tool(server: McpServer, tools: dict[str, Tool]) -> Tool:
    """The configured tool, else the one named "search", else the server's only tool."""
    if server.tool:
        return _named(server.tool, tools)
    if "search" in tools:
        return tools["search"]
    if len(tools) == 1:
        return next(iter(tools.values()))
    raise McpFailed(f"has {len(tools)} tools and none named 'search': set 'tool' to one of "
                    f"{_names(tools)}")


def read_tool(server: McpServer, tools: dict[str, Tool]) -> Tool | None:
    """The configured read tool, else one named read or fetch, else none (a body is then
    read as the resource its URI names)."""
    if server.read_tool:
        return _named(server.read_tool, tools)
    return next((tools[n] for n in READ_NAMES if n in tools), None)


def query_arguments(server: McpServer, tool: Tool, query: str, limit: int) -> dict[str, Any]:
    properties = _properties(tool)
    name = server.argument or string_argument(tool, QUERY_NAMES)
    arguments: dict[str, Any] = {**server.arguments, name: query}
    wanted = next((n for n in LIMIT_NAMES if n in properties and n not in arguments
                   and properties[n].get("type") == "integer"), None)
    if wanted is not None:
        arguments[wanted] = limit
    return _complete(tool, arguments)


def read_arguments(tool: Tool, uri: str) -> dict[str, Any]:
    return _complete(tool, {string_argument(tool, URI_NAMES): uri})


def string_argument(tool: Tool, preferred: tuple[str, ...]) -> str:
    """The tool's one string argument (see the module's docstring)."""
    strings = [n for n, s in _properties(tool).items() if s.get("type") == "string"]
    required = [n for n in strings if n in (tool.input_schema.get("required") or [])]
    candidates = required or strings
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise McpFailed(f"tool {tool.name!r} takes no string argument to put the text in")
    named = next((n for n in preferred if n in candidates), None)
    if named is None:
        raise McpFailed(f"tool {tool.name!r} has several string arguments "
                        f"({', '.join(candidates)}): name one in 'argument'")
    return named


def _complete(tool: Tool, arguments: dict[str, Any]) -> dict[str, Any]:
    missing = [n for n in (tool.input_schema.get("required") or []) if n not in arguments]
    if missing:
        raise McpFailed(f"tool {tool.name!r} also needs {', '.join(map(str, missing))}: "
                        "give them in 'arguments'")
    return arguments


def _properties(tool: Tool) -> dict[str, dict[str, Any]]:
    found = tool.input_schema.get("properties")
    if not isinstance(found, dict):
        return {}
    return {str(k): v for k, v in found.items() if isinstance(v, dict)}


def _named(name: str, tools: dict[str, Tool]) -> Tool:
    if name not in tools:
        raise McpFailed(f"has no tool {name!r} (it has {_names(tools)})")
    return tools[name]


def _names(tools: dict[str, Tool]) -> str:
    return ", ".join(sorted(tools)) or "none"
