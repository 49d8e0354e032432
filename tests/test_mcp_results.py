"""What MCP tools answer, as hits (resource links, embedded resources, JSON records, structured
content, plain text), which argument a query goes in, and several backends searched as one."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from mcp.types import (
    Annotations,
    CallToolResult,
    EmbeddedResource,
    ResourceLink,
    TextContent,
    TextResourceContents,
    Tool,
)

from research_core.errors import SearchUnavailable
from research_core.protocols import SearchHit, SearchRequest
from research_core.search.combined import CombinedBackend, interleave
from research_core.search.mcp.arguments import query_arguments, read_arguments, search_tool
from research_core.search.mcp.connection import McpFailed
from research_core.search.mcp.results import answer_size, documents, hits
from research_core.search.tool import KeepsHitsPrivate
from research_core.settings.mcp import McpServer

SERVER = McpServer(name="wiki", command=("wiki-mcp",))


def tool(name: str, properties: dict[str, Any], required: list[str]) -> Tool:
    return Tool(name=name, input_schema={"type": "object", "properties": properties,
                                         "required": required})


def text(value: str) -> TextContent:
    return TextContent(text=value)


def test_resource_links_and_embedded_resources_become_dated_hits() -> None:
    link = ResourceLink(name="ovens", title="Oven rota", uri="wiki://ovens",
                        description="Ovens are cleaned nightly.",
                        annotations=Annotations(last_modified="2026-09-01T08:00:00Z"))
    embedded = EmbeddedResource(resource=TextResourceContents(
        uri="wiki://flour", text="Intro line.\n\nFlour arrives every Tuesday."))
    found = hits(SERVER, documents(CallToolResult(content=[link, embedded])), "flour Tuesday")
    assert [(h.url, h.published) for h in found] == [("wiki://ovens", dt.date(2026, 9, 1)),
                                                      ("wiki://flour", None)]
    assert found[0].title == "Oven rota" and found[0].publisher == "wiki"
    assert found[1].snippet == "Flour arrives every Tuesday."  # the paragraph the query names


def test_json_records_in_text_become_one_hit_each() -> None:
    records = [{"title": "Rota", "url": "https://wiki.example/rota", "snippet": "Nightly.",
                "updated": "2026-08-03"}, {"name": "Flour", "content": "Tuesdays."},
               {"unrelated": 1}]
    found = hits(SERVER, documents(CallToolResult(content=[text(json.dumps(records))])), "x")
    assert [h.title for h in found] == ["Rota", "Flour"]
    assert found[0].published == dt.date(2026, 8, 3)
    assert found[1].url.startswith("mcp://wiki/")  # a made-up URI, stable for its text


def test_structured_content_is_preferred_to_its_text_copy() -> None:
    result = CallToolResult(content=[text("[...]")], structured_content={
        "results": [{"title": "Rota", "uri": "wiki://rota", "text": "Nightly."}]})
    assert [d.uri for d in documents(result)] == ["wiki://rota"]


def test_plain_text_is_one_document_titled_by_its_first_line() -> None:
    found = documents(CallToolResult(content=[text("# Oven rota\nCleaned nightly.")]))
    assert [(d.title, d.text) for d in found] == [("Oven rota", "Cleaned nightly.")]


def test_the_size_is_counted_before_parsing() -> None:
    big = CallToolResult(content=[text("[" + "1," * 1000 + "1]")])
    assert answer_size(big) == len("[" + "1," * 1000 + "1]")


def test_the_query_goes_in_the_one_string_argument() -> None:
    one = tool("search", {"query": {"type": "string"}, "limit": {"type": "integer"}}, ["query"])
    assert query_arguments(SERVER, one, "rota", 5) == {"query": "rota", "limit": 5}
    required = tool("find", {"q": {"type": "string"}, "lang": {"type": "string"}}, ["q"])
    assert query_arguments(SERVER, required, "rota", 5) == {"q": "rota"}
    named = tool("find", {"text": {"type": "string"}, "space": {"type": "string"}},
                 ["text", "space"])
    fixed = McpServer(name="wiki", command=("w",), arguments={"space": "BAKE"})
    assert query_arguments(fixed, named, "rota", 5) == {"space": "BAKE", "text": "rota"}
    with pytest.raises(McpFailed, match="also needs space"):
        query_arguments(SERVER, named, "rota", 5)
    several = tool("find", {"a": {"type": "string"}, "b": {"type": "string"}}, ["a", "b"])
    with pytest.raises(McpFailed, match=r"several string arguments \(a, b\)"):
        query_arguments(SERVER, several, "rota", 5)
    chosen = McpServer(name="wiki", command=("w",), argument="b", arguments={"a": "x"})
    assert query_arguments(chosen, several, "rota", 5) == {"a": "x", "b": "rota"}
    reader = tool("read", {"uri": {"type": "string"}}, ["uri"])
    assert read_arguments(reader, "wiki://rota") == {"uri": "wiki://rota"}


def test_the_search_tool_is_named_or_found() -> None:
    tools = {n: tool(n, {"q": {"type": "string"}}, ["q"]) for n in ("lookup", "read")}
    with pytest.raises(McpFailed, match="none named 'search': set 'tool' to one of lookup, read"):
        search_tool(SERVER, tools)
    assert search_tool(McpServer(name="w", command=("w",), tool="lookup"), tools).name == "lookup"
    assert search_tool(SERVER, {"lookup": tools["lookup"]}).name == "lookup"


def hit(url: str) -> SearchHit:
    return SearchHit(url, url, "s", url, None, "news")


class Member:
    def __init__(self, name: str, found: list[SearchHit] | None, private: bool = False) -> None:
        self.name = name
        self.found = found
        self.private = private

    async def search(self, request: SearchRequest) -> list[SearchHit]:
        if self.found is None:
            raise SearchUnavailable(f"{self.name} is down")
        return self.found

    async def read_body(self, source_id: str) -> str | None:
        return f"{self.name}:{source_id}" if any(h.source_id == source_id
                                                 for h in self.found or []) else None


async def test_several_backends_answer_as_one() -> None:
    corpus = Member("corpus", [hit("c1"), hit("c2"), hit("both")])
    wiki = Member("mcp:wiki", [hit("w1"), hit("both")])
    down = Member("searxng", None)
    combined = CombinedBackend([corpus, down, wiki])
    found = await combined.search(SearchRequest("q", limit=4))
    assert [h.url for h in found] == ["c1", "w1", "c2", "both"]
    assert await combined.read_body("w1") == "mcp:wiki:w1"
    assert combined.name == "corpus+searxng+mcp:wiki"
    assert not combined.private and isinstance(combined, KeepsHitsPrivate)
    assert CombinedBackend([corpus, Member("slack", [], private=True)]).private
    with pytest.raises(SearchUnavailable):
        await CombinedBackend([down, Member("brave", None)]).search(SearchRequest("q"))
    assert [h.url for h in interleave([[hit("a")], [], [hit("b"), hit("c")]], 9)] == [
        "a", "b", "c"]
