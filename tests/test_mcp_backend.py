"""MCP servers as search backends, against a real MCP server process built with the SDK
(tests/mcp_wiki_server.py: a bakery's internal wiki) over stdio and over streamable HTTP: its
answers become hits a run can cite, its documents are read with its read tool, and a server
that hangs, crashes mid-call, dies between calls, cannot start or answers 10 MB costs its own
hits (one log line), never more."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time

import psutil
import pytest

from research_core.protocols import SearchRequest, TimeRange
from research_core.search.mcp.backend import McpBackend
from research_core.settings.mcp import McpServer
from tests.mcp_servers import QUESTION, http_wiki, limits, wiki

DESCALING = "wiki://bakery/deck-oven-descaling"


async def search_once(server: McpServer, query: str = QUESTION, timeout_s: float = 10.0,
                      **caps: object) -> tuple[McpBackend, list[object]]:
    backend = McpBackend(server, limits(timeout_s, **caps))
    try:
        return backend, list(await backend.search(SearchRequest(query)))
    finally:
        await backend.aclose()


def mcp_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("mcp: ")]


async def test_a_stdio_server_answers_hits_a_run_can_cite() -> None:
    backend = McpBackend(wiki(), limits())
    try:
        hits = await backend.search(SearchRequest(QUESTION))
        again = await backend.search(SearchRequest(QUESTION))
        top = hits[0]
        assert top.url == DESCALING and top.title == "Deck oven descaling schedule"
        assert top.publisher == "wiki" and top.source_type == "internal"
        assert top.published == dt.date(2026, 10, 2)  # the resource's lastModified
        assert "every 6 weeks" in top.snippet
        assert [h.source_id for h in again] == [h.source_id for h in hits]  # stable ids
        assert top.source_id.startswith("mcp-wiki-")
        body = await backend.read_body(top.source_id)  # through the server's read tool
        assert body is not None and "90 minutes" in body and "maintenance binder" in body
        assert await backend.read_body("web-0123456789ab") is None  # not this server's
        assert backend.connection.starts == 1  # one session for every call
    finally:
        await backend.aclose()


async def test_an_http_server_answers_the_same_hits() -> None:
    async with http_wiki() as url:
        backend = McpBackend(McpServer(name="wiki", url=url), limits())
        try:
            hits = await backend.search(SearchRequest(QUESTION))
            assert hits and hits[0].url == DESCALING and hits[0].publisher == "wiki"
            body = await backend.read_body(hits[0].source_id)
            assert body is not None and "90 minutes" in body
            assert "searches with 'search', reads with 'read'" in await backend.check()
        finally:
            await backend.aclose()


async def test_the_run_time_range_leaves_out_dated_documents_outside_it() -> None:
    backend = McpBackend(wiki(), limits())
    try:
        window = TimeRange(since=dt.date(2026, 10, 10))
        hits = await backend.search(SearchRequest("deck oven walk-in cooler", window))
        assert [h.url for h in hits] == ["wiki://bakery/walk-in-cooler"]
    finally:
        await backend.aclose()


async def test_a_hung_server_costs_its_hits_and_is_started_again(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    backend = McpBackend(wiki("hang"), limits(timeout_s=1.5))
    try:
        for _ in range(2):
            started = time.monotonic()
            assert await backend.search(SearchRequest(QUESTION)) == []
            assert time.monotonic() - started < 1.5 + 5.0  # the cap, plus starting a server
        assert backend.connection.starts == 2  # the hung one was left, a new one started
    finally:
        await backend.aclose()
    lines = mcp_lines(caplog)
    assert len(lines) == 2 and all("gave no answer within 1.5s" in ln for ln in lines)


async def test_a_server_that_crashes_mid_call_costs_its_hits(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    _, hits = await search_once(wiki("crash"))
    assert hits == []
    assert [ln for ln in mcp_lines(caplog) if "Connection closed" in ln], mcp_lines(caplog)


async def test_a_10_mb_answer_costs_its_hits(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    _, hits = await search_once(wiki("huge"))
    assert hits == []
    assert any("10,485,760 characters, over RED_MCP_MAX_BYTES (1,000,000)" in ln
               for ln in mcp_lines(caplog)), mcp_lines(caplog)


async def test_a_server_that_cannot_start_costs_its_hits(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    _, hits = await search_once(McpServer(name="gone", command=("/nonexistent/wiki-mcp",)))
    assert hits == []
    assert any("could not start" in ln and "gone (wiki-mcp)" in ln for ln in mcp_lines(caplog))


async def test_a_server_killed_between_calls_is_started_again_without_losing_a_call() -> None:
    backend = McpBackend(wiki(), limits())
    try:
        assert await backend.search(SearchRequest(QUESTION))
        for child in psutil.Process().children(recursive=True):
            if "mcp_wiki_server" in " ".join(child.cmdline()):
                child.kill()
        await asyncio.sleep(0.3)
        hits = await backend.search(SearchRequest(QUESTION))
        assert hits and hits[0].url == DESCALING
        assert backend.connection.starts == 2
    finally:
        await backend.aclose()


async def test_a_misconfigured_tool_is_one_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    _, hits = await search_once(wiki(tool="lookup"))
    assert hits == []
    assert any("has no tool 'lookup' (it has read, search)" in ln for ln in mcp_lines(caplog))


async def test_closing_stops_the_server_process() -> None:
    backend = McpBackend(wiki(), limits())
    await backend.search(SearchRequest(QUESTION))
    await backend.aclose()
    await asyncio.sleep(0.2)
    alive = [c for c in psutil.Process().children(recursive=True)
             if c.is_running() and c.status() != psutil.STATUS_ZOMBIE
             and "mcp_wiki_server" in " ".join(c.cmdline())]
    assert alive == []
