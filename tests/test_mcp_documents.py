"""An MCP tool that answers several documents in one text, against the real test server
(tests/mcp_wiki_server.py) over stdio and the SDK's client: each document becomes a hit of its
own, with its title, date and URI as metadata, never as quoted text; structured content is
taken before its text copy; a separator only the server uses is split at once the settings
name it; and a run over such a server cites each page dated, by its URI."""

from __future__ import annotations

import datetime as dt

from research_core.protocols import SearchHit, SearchRequest, Similarity
from research_core.search.mcp.backend import McpBackend
from research_core.settings import Settings
from research_core.settings.mcp import McpServer
from research_core.store.sql import SqlStore
from tests.engine_run import Serve, run_engine
from tests.mcp_servers import QUESTION, limits, wiki
from tests.mcp_wiki_server import PAGE_BREAK, PAGES
from tests.test_mcp_run import bakery_script

DESCALING = "wiki://bakery/deck-oven-descaling"
BY_URI = {p.uri: p for p in PAGES}
# What a page's header says, which must never be taken for its words:
HEADER_WORDS = ("title:", "date:", "uri:", "wiki://", "Last edited")
QUERY = "deck oven descaling sourdough starter walk-in cooler"


async def search(server: McpServer,
                 query: str = QUERY) -> tuple[McpBackend, list[SearchHit]]:
    backend = McpBackend(server, limits())
    try:
        return backend, await backend.search(SearchRequest(query, limit=5))
    finally:
        await backend.aclose()


def assert_one_hit_per_page(found: list[SearchHit], with_uri: bool = True) -> None:
    assert len(found) >= 3, found
    assert len({h.source_id for h in found}) == len(found)
    for hit in found:
        page = next(p for p in PAGES if p.title == hit.title)
        assert hit.published == dt.date.fromisoformat(page.updated), hit
        assert not any(word in hit.snippet for word in HEADER_WORDS), hit.snippet
        assert hit.snippet and hit.snippet in page.text  # the page's own words, no header
        assert (hit.url == page.uri) if with_uri else hit.url.startswith("mcp://wiki/")


async def test_a_text_of_several_pages_is_one_dated_hit_per_page() -> None:
    _, found = await search(wiki("digest"))
    assert_one_hit_per_page(found)
    assert {h.url for h in found} <= set(BY_URI)


async def test_a_page_of_a_digest_is_read_by_its_uri() -> None:
    backend = McpBackend(wiki("digest"), limits())
    try:
        found = await backend.search(SearchRequest(QUESTION))
        [top] = [h for h in found if h.url == DESCALING]
        body = await backend.read_body(top.source_id)  # the server's read tool, by the URI
        assert body is not None and "maintenance binder" in body
        assert body.startswith("The three-deck oven is descaled")  # its first line too
    finally:
        await backend.aclose()


async def test_structured_content_is_taken_before_its_text_copy() -> None:
    _, found = await search(wiki("structured"))
    assert_one_hit_per_page(found)


async def test_a_separator_of_the_servers_own_is_split_once_the_settings_name_it() -> None:
    _, unsplit = await search(wiki("marked"))
    assert len(unsplit) == 1  # the separator is the server's own: nothing to split it by
    _, found = await search(wiki("marked", document_break=PAGE_BREAK))
    assert_one_hit_per_page(found, with_uri=False)


def test_the_document_break_is_a_setting_of_the_server() -> None:
    settings = Settings.from_env({"RED_MCP_SERVERS": (
        '[{"name": "wiki", "command": ["wiki-mcp"], "document_break": "<<<page break>>>"}]')})
    assert settings.mcp.servers[0].document_break == PAGE_BREAK


async def test_a_run_over_a_digest_cites_each_page_dated_by_its_uri(
        serve: Serve, store: SqlStore, similarity: Similarity) -> None:
    backend = McpBackend(wiki("digest"), limits())
    try:
        out = await run_engine(serve, bakery_script(), backend, store, question=QUESTION,
                               similarity=similarity, max_steps=4)
    finally:
        await backend.aclose()
    rendered = out.report.render()
    assert f"wiki, 2026-10-02, {DESCALING}" in rendered, rendered
    wiki_sources = [s for s in out.report.sources if s.publisher == "wiki"]
    assert wiki_sources and all(s.url in BY_URI for s in wiki_sources)
    quoted = " ".join(e.text for e in out.state.evidence)
    assert not any(word in quoted for word in ("title:", "date:", "uri:")), quoted
    assert not any(word in out.report.text for word in ("date:", "uri:"))


def test_the_usual_ways_servers_write_several_documents_in_one_text() -> None:
    """Headers without rule lines, bold keys, a `content:` field, other fields dropped; a text
    without headers is one document, and a date in its text stays text."""
    from mcp.types import CallToolResult, TextContent

    from research_core.search.mcp.results import documents

    def found(text: str) -> list[tuple[str, str, str, dt.date | None]]:
        result = CallToolResult(content=[TextContent(text=text)])
        return [(d.title, d.uri, d.text, d.published) for d in documents(result)]

    assert found("Title: Rota\nURL: https://w.example/rota\nPublished: 2026-08-03\nScore: 0.9\n"
                 "Content: Ovens are cleaned nightly.\n\nTitle: Flour\nURL: https://w.example/f\n"
                 "Content: Flour comes on Tuesdays.") == [
        ("Rota", "https://w.example/rota", "Ovens are cleaned nightly.", dt.date(2026, 8, 3)),
        ("Flour", "https://w.example/f", "Flour comes on Tuesdays.", None)]
    assert found("**Title:** Rota\n**Date:** 2026-08-03\nNightly.\n\n**Title:** Flour\n"
                 "Tuesdays.") == [("Rota", "", "Nightly.", dt.date(2026, 8, 3)),
                                  ("Flour", "", "Tuesdays.", None)]
    assert found("Minutes of the bake meeting\nDate: 2026-01-05\nAttendees: all") == [
        ("Minutes of the bake meeting", "", "Date: 2026-01-05\nAttendees: all", None)]
    assert found("# Oven rota\nCleaned nightly.") == [("Oven rota", "", "Cleaned nightly.",
                                                       None)]
