"""One MCP server as a search backend: a query is one call of the server's search tool, its
answer becomes hits (`results.py`), and a hit's body is read with the server's read tool,
else as the resource its URI names (`resources/read`), else from the text the search answered.

A server that cannot start, hangs, crashes, answers an error or more than the size cap costs
the call's hits: one line in the run log and the worker log (`mcp`), never the run; the
failure is counted (redsearch_search_failures_total) and the answer without the server's hits
is never cached, so the next query asks the server again (`research_core.search.failures`).
A tool has no time range to apply, so hits whose date falls outside the run's range are left
out (undated ones stay).
"""

from __future__ import annotations

import datetime as dt

from mcp.types import CallToolResult, ReadResourceResult, TextContent

from research_core.protocols import SearchHit, SearchRequest, TimeRange
from research_core.runlog import note
from research_core.search.failures import count, did_not_answer
from research_core.search.mcp.arguments import (
    query_arguments,
    read_arguments,
    read_tool,
    search_tool,
)
from research_core.search.mcp.connection import McpConnection, McpFailed
from research_core.search.mcp.results import (
    MCP_ID_PREFIX,
    answer_size,
    body_of,
    documents,
    hits,
    source_id,
)
from research_core.settings.mcp import McpServer, McpSettings

REMEMBERED = 20_000  # documents a worker can still read (the oldest are dropped)


class McpBackend:
    """The search backend of one configured server; its session is kept per process."""

    def __init__(self, server: McpServer, limits: McpSettings,
                 connection: McpConnection | None = None) -> None:
        self.server = server
        self.limits = limits
        self.connection = connection or McpConnection(server, limits)
        self._uris: dict[str, str] = {}
        self._texts: dict[str, str] = {}  # documents a search answered whole (no URI to read)

    @property
    def name(self) -> str:
        return f"mcp:{self.server.name}"

    @property
    def prefix(self) -> str:
        return f"{MCP_ID_PREFIX}{self.server.name}-"

    async def search(self, request: SearchRequest) -> list[SearchHit]:
        try:
            found = await self._search(request.query, request.limit)
        except McpFailed as exc:
            count(self.name, exc.reason)
            did_not_answer(self.name, exc.reason, "mcp", self._line(f"search {request.query!r}",
                                                                    exc))
            return []
        kept = [h for h in found if within(h.published, request.time_range)][:request.limit]
        self.remember(kept)
        return kept

    async def read_body(self, source_id: str) -> str | None:
        if not source_id.startswith(self.prefix):
            return None
        if source_id in self._texts:
            return self._texts[source_id]
        uri = self._uris.get(source_id)
        if uri is None:
            return None
        try:
            body = body_of(await self._read(uri))
        except McpFailed as exc:
            self._failed(f"read {uri}", exc)
            return None
        cut = ", cut at the size cap" if len(body) > self.limits.max_bytes else ""
        note("mcp", f"{self.server.name}: read {uri}: {len(body):,} characters{cut}",
             source_id=source_id)
        return body[:self.limits.max_bytes] or None

    def remember(self, found: list[SearchHit]) -> None:
        """This server's hits (also those served from the engine's cache) can be read."""
        self._uris.update((h.source_id, h.url) for h in found if h.source_id.startswith(
            self.prefix))
        for known in (self._uris, self._texts):
            for oldest in list(known)[:max(0, len(known) - REMEMBERED)]:
                del known[oldest]

    async def check(self) -> str:
        """Start the server (if it is not running) and say which tools a run would call;
        McpFailed when it cannot be used (`redsearch sources`)."""
        tools = await self.connection.ensure()
        tool = search_tool(self.server, tools)
        query_arguments(self.server, tool, "test", 1)
        reader = read_tool(self.server, tools)
        reads = f", reads with {reader.name!r}" if reader else ""
        return f"searches with {tool.name!r}{reads} ({len(tools)} tools)"

    async def aclose(self) -> None:
        await self.connection.aclose()

    async def _search(self, query: str, limit: int) -> list[SearchHit]:
        tool = search_tool(self.server, await self.connection.ensure())
        result = await self.connection.call_tool(
            tool.name, query_arguments(self.server, tool, query, limit))
        self._usable(result, f"tool {tool.name!r}")
        found = documents(result, self.server.document_break)
        answered = hits(self.server, found, query)
        for hit, document in zip(answered, [d for d in found if d.text.strip()
                                            or d.title.strip()], strict=True):
            if not document.uri:  # nothing to read it by: its text is its body
                self._texts[hit.source_id] = document.text
        return answered

    async def _read(self, uri: str) -> CallToolResult | ReadResourceResult:
        reader = read_tool(self.server, await self.connection.ensure())
        if reader is None:
            return await self.connection.read_resource(uri)
        result = await self.connection.call_tool(reader.name, read_arguments(reader, uri))
        self._usable(result, f"tool {reader.name!r}", cap=False)
        return result

    def _usable(self, result: CallToolResult, what: str, cap: bool = True) -> None:
        """A tool's error answer, or an answer over the size cap, costs the call."""
        if result.is_error:
            said = next((b.text for b in result.content if isinstance(b, TextContent)), "")
            raise McpFailed(f"{what} answered an error: {' '.join(said.split())[:200]}",
                            reason="error")
        size = answer_size(result)
        if cap and size > self.limits.max_bytes:
            raise McpFailed(f"{what} answered {size:,} characters, over RED_MCP_MAX_BYTES "
                            f"({self.limits.max_bytes:,}); its hits are left out",
                            reason="too_large")

    def _failed(self, what: str, exc: McpFailed) -> None:
        note("mcp", self._line(what, exc), server=self.server.name)

    def _line(self, what: str, exc: McpFailed) -> str:
        return f"{self.server.name} ({self.server.where}): {what}: {exc}"


def within(published: dt.date | None, time_range: TimeRange) -> bool:
    if published is None:
        return True
    after_start = time_range.since is None or published >= time_range.since
    return after_start and (time_range.until is None or published <= time_range.until)


__all__ = ["McpBackend", "McpFailed", "source_id"]
