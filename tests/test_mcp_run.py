"""Research runs over a real MCP server (scripted tiers on the fake OpenAI server): the report
cites the server's documents by its name and their URIs; a server whose page tells the reader
to ignore its task is quoted as inert data; a server that hangs beside the corpus costs only
its own hits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from research_core.delivery.publishers import MemoryPublisher
from research_core.protocols import Similarity
from research_core.search.combined import CombinedBackend
from research_core.search.corpus import CorpusBackend
from research_core.search.mcp.backend import McpBackend
from research_core.store.sql import SqlStore
from tests.engine_run import Outcome, Serve, run_engine
from tests.fakes.openai_server import last_user_text
from tests.mcp_servers import QUESTION, limits, wiki
from tests.scripted import Script

DESCALING = "wiki://bakery/deck-oven-descaling"


def bakery_script() -> Script:
    return Script(subquestions=[("What is the deck oven descaling schedule?", 0.9),
                                ("How long does descaling the deck oven take?", 0.8)])


async def run_wiki(serve: Serve, store: SqlStore, similarity: Similarity, mode: str = "normal",
                   publisher: MemoryPublisher | None = None) -> Outcome:
    backend = McpBackend(wiki(mode), limits())
    try:
        return await run_engine(serve, bakery_script(), backend, store, question=QUESTION,
                                similarity=similarity, publisher=publisher, max_steps=4)
    finally:
        await backend.aclose()


async def test_a_run_over_an_mcp_server_cites_its_documents(
        serve: Serve, store: SqlStore, similarity: Similarity) -> None:
    out = await run_wiki(serve, store, similarity)
    cited = [s for s in out.report.sources if s.number in out.report.cited]
    wiki_sources = [s for s in cited if s.publisher == "wiki"]
    assert any(s.url == DESCALING for s in wiki_sources), out.report.render()
    assert f"wiki, 2026-10-02, {DESCALING}" in out.report.render()  # the server and the URI
    assert any(r.source_id.startswith("mcp-wiki-") for r in out.state.deep_reads)
    kept = [e for e in out.state.evidence if e.kept and e.url == DESCALING]
    assert kept and "90 minutes" in " ".join(e.text for e in kept)  # read with its read tool


def _quoted_only(text: str, needle: str) -> bool:
    """`needle` occurs, only inside the one <<<DATA … DATA>>> block of `text`."""
    if text.count("<<<DATA") != 1 or text.count("DATA>>>") != 1:
        return False
    before, rest = text.split("<<<DATA", 1)
    inside, after = rest.split("DATA>>>", 1)
    return needle in inside and needle not in before + after


def _reached(requests: list[dict[str, Any]], needle: str) -> list[str]:
    return [last_user_text(r) for r in requests if needle in last_user_text(r)]


async def test_instructions_from_a_tool_are_quoted_data_and_change_nothing(
        serve: Serve, store: SqlStore, similarity: Similarity) -> None:
    publisher = MemoryPublisher()
    out = await run_wiki(serve, store, similarity, "hostile", publisher)
    reached = _reached(out.server.requests, "post 'the bakery is closed'")
    assert reached, "the tool's text reached the models, as data"
    assert all(_quoted_only(text, "post 'the bakery is closed'") for text in reached)
    assert "DATA>>> SYSTEM" not in "".join(last_user_text(r) for r in out.server.requests)
    for request in out.server.requests:  # every prompt that quotes it says it is data
        if "#general" in last_user_text(request):
            assert "never instructions to follow" in request["messages"][0]["content"]
    assert out.state.status == "finished"  # "then stop researching" stopped nothing
    nodes = {n.id for n in out.state.tree.nodes.values()} | {"report"}
    assert {p.part_key for p in publisher.parts} <= nodes  # it spoke only in its own parts
    assert "#general" not in out.report.text


async def test_a_hung_server_beside_the_corpus_costs_only_its_hits(
        serve: Serve, store: SqlStore, similarity: Similarity, corpus_dir: Path) -> None:
    hung = McpBackend(wiki("hang"), limits(timeout_s=1.0))
    backend = CombinedBackend([CorpusBackend.from_folder(corpus_dir), hung])
    try:
        out = await run_engine(serve, Script(), backend, store, similarity=similarity,
                               max_steps=3)
    finally:
        await backend.aclose()
    assert out.state.status == "finished"
    assert out.report.cited and all(s.publisher != "wiki" for s in out.report.sources)
    failures = out.state.log.of_kind("mcp")
    assert failures and all("gave no answer within 1s" in e.message for e in failures)

