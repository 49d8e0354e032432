"""A source that did not answer is never cached as "nothing found" (issue 45, item 3): an MCP
server that cannot start (a real process, spoken to with the SDK's client), every web service
down beside the corpus (the fake web APIs answering 503). The failure is counted in
redsearch_search_failures_total, the next query asks the source again, and the run's progress
tells the silent source once."""

from __future__ import annotations

import sys
from pathlib import Path

from prometheus_client import REGISTRY

from research_core.delivery.publishers import MemoryPublisher
from research_core.protocols import SearchBackend, Similarity, TimeRange
from research_core.runlog import RunLog, bound
from research_core.search.combined import CombinedBackend
from research_core.search.corpus import CorpusBackend
from research_core.search.mcp.backend import McpBackend
from research_core.search.tool import SearchTool, cache_key
from research_core.search.web.chain import WebBackend
from research_core.search.web.page_reader import PageReader
from research_core.settings import EngineSettings
from research_core.settings.mcp import McpServer
from research_core.store.sql import SqlStore
from tests.engine_run import Serve, run_engine
from tests.fakes.web_server import Failure, FakeWeb
from tests.mcp_servers import QUESTION, WIKI, limits
from tests.scripted import Script
from tests.test_web_search import DOCS, searxng

DAY_S = 86_400
# Exits (a server that cannot start) until the flag file exists; then the wiki server itself.
FIRST_FAILS = 'if [ -e "$1" ]; then exec "$2" "$3"; fi; : > "$1"; exit 3'


def failures(backend: str, reason: str) -> float:
    return REGISTRY.get_sample_value("redsearch_search_failures_total",
                                     {"backend": backend, "reason": reason}) or 0.0


def tool(backend: SearchBackend, store: SqlStore, log: RunLog,
         similarity: Similarity) -> SearchTool:
    return SearchTool(backend, store, EngineSettings(), log, similarity)


async def test_a_server_that_did_not_start_is_asked_again_not_served_from_cache(
        store: SqlStore, similarity: Similarity, tmp_path: Path) -> None:
    server = McpServer(name="wiki", command=("sh", "-c", FIRST_FAILS, "sh",
                                             str(tmp_path / "started"), sys.executable,
                                             str(WIKI)))
    backend = McpBackend(server, limits())
    log = RunLog()
    search = tool(backend, store, log, similarity)
    before = failures("mcp:wiki", "start")
    try:
        with bound(log):
            [first] = await search.batch([QUESTION], TimeRange())
            assert (first.hits, first.from_cache) == ([], False)
            assert failures("mcp:wiki", "start") == before + 1
            [said] = [e for e in log.of_kind("search")]
            assert "not cached: no answer from mcp:wiki" in said.message
            assert await store.cache_get(cache_key(backend.name, QUESTION, TimeRange()),
                                         DAY_S) is None
            [again] = await search.batch([QUESTION], TimeRange())  # asks the server again
            assert not again.from_cache and again.hits
            assert backend.connection.starts == 2
            [third] = await search.batch([QUESTION], TimeRange())  # an answer is cached
            assert third.from_cache and third.hits == again.hits
    finally:
        await backend.aclose()
    assert not [e for e in log.of_kind("cache-hit") if "(0 hits)" in e.message]


async def test_the_corpus_alone_when_every_web_service_is_down_is_not_cached(
        store: SqlStore, similarity: Similarity, corpus_dir: Path) -> None:
    fake = FakeWeb(docs=list(DOCS))
    await fake.start()
    try:
        fake.failures["searxng"] = [Failure(503)]
        chain = WebBackend([searxng(fake, retries=0)], PageReader(),
                           CorpusBackend.from_folder(corpus_dir))
        log = RunLog()
        search = tool(chain, store, log, similarity)
        before = failures("searxng", "server_error")
        with bound(log):
            [down] = await search.batch(["heat pump sales 2026"], TimeRange())
            assert down.hits and not down.from_cache  # the corpus answered alone
            assert failures("searxng", "server_error") == before + 1
            fake.failures["searxng"] = []
            [back] = await search.batch(["heat pump sales 2026"], TimeRange())
        assert not back.from_cache  # the web was asked again
        assert any(h.source_id.startswith("web-") for h in back.hits)
        assert len(fake.of("searxng")) == 2
    finally:
        await fake.stop()


async def test_a_silent_source_is_told_once_in_the_runs_progress(
        serve: Serve, store: SqlStore, similarity: Similarity, corpus_dir: Path) -> None:
    never = McpServer(name="wiki", command=(sys.executable, "-c", "raise SystemExit(3)"))
    backend = CombinedBackend([CorpusBackend.from_folder(corpus_dir),
                               McpBackend(never, limits())])
    publisher = MemoryPublisher()
    try:
        out = await run_engine(serve, Script(), backend, store, similarity=similarity,
                               publisher=publisher, max_steps=3)
    finally:
        await backend.aclose()
    assert out.state.status == "finished" and out.report.cited and out.state.queries
    failed = [e for e in out.state.log.of_kind("mcp") if "could not start" in e.message]
    assert len(failed) >= 2, "several queries, each asking the server again"
    told = [n for n in publisher.progress_notes if n.startswith("A source did not answer")]
    assert told == ["A source did not answer: mcp:wiki (it did not start); the search goes on "
                    "without its hits and asks it again with the next query"], \
        publisher.progress_notes
    for query in out.state.queries:  # nothing the run searched was cached without the wiki
        assert await store.cache_get(cache_key(backend.name, query.text, query.time_range),
                                     DAY_S) is None
