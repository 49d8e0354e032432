"""The search backends against local fakes speaking each API's documented format: hits in the
common shape, the time range in each service's own parameters, 429 / Retry-After, fallback."""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from research_core.errors import SearchUnavailable, SettingsError
from research_core.protocols import SearchRequest, TimeRange
from research_core.runlog import RunLog, bound
from research_core.search.corpus import CorpusBackend
from research_core.search.tool import cache_key
from research_core.search.web.api_client import ApiClient, retry_after_s
from research_core.search.web.brave import BraveSearch
from research_core.search.web.chain import WebBackend
from research_core.search.web.factory import build_backend
from research_core.search.web.page_reader import PageReader
from research_core.search.web.rate_limit import LocalRateLimiter
from research_core.search.web.searxng import SearxngSearch, time_range_param
from research_core.search.web.tavily import TavilySearch
from research_core.settings import Secret, Settings, WebSettings
from tests.fakes.web_server import Doc, Failure, FakeWeb, article

TODAY = dt.date(2026, 10, 31)
RANGE = TimeRange(dt.date(2026, 10, 1), dt.date(2026, 10, 31))
KEY = "brave-secret-key-123"
DOCS = [
    Doc("sales", "Heat pump sales September 2026", "Heat pump sales reached 214,000 units in "
        "September 2026, up 12.4% on the year. " + "More detail. " * 30, "2026-10-10",
        article("Heat pump sales September 2026", "2026-10-10", ["Sales reached 214,000."])),
    Doc("prices-blog", "Heat pump prices guide", "Prices are 18,000 to 25,000 euros.",
        "2026-10-02", article("Heat pump prices guide", "2026-10-02", ["Prices vary."])),
]


@pytest.fixture
async def fake() -> AsyncIterator[FakeWeb]:
    server = FakeWeb(docs=list(DOCS))
    await server.start()
    yield server
    await server.stop()


def client(name: str, retries: int = 1, timeout_s: float = 5.0) -> ApiClient:
    return ApiClient(name, LocalRateLimiter({name: 1000.0}), timeout_s=timeout_s,
                     retries=retries, max_wait_s=5.0, backoff_s=0.05)


def searxng(fake: FakeWeb, **kw: object) -> SearxngSearch:
    return SearxngSearch(fake.url("/searxng"), client("searxng", **kw),  # type: ignore[arg-type]
                         today=lambda: TODAY)


def brave(fake: FakeWeb) -> BraveSearch:
    return BraveSearch(fake.url("/brave/res/v1/web/search"), Secret(KEY), client("brave"),
                       today=lambda: TODAY)


def tavily(fake: FakeWeb) -> TavilySearch:
    return TavilySearch(fake.url("/tavily/search"), Secret("tvly-key"), client("tavily"))


def request(**kw: object) -> SearchRequest:
    return SearchRequest(**{"query": "heat pump sales 2026", "time_range": RANGE,  # type: ignore[arg-type]
                            "lang": "en", "limit": 5, **kw})


async def test_searxng_hits_and_its_time_range_parameter(fake: FakeWeb) -> None:
    hits = await searxng(fake).search(request())
    seen = fake.of("searxng")[0].query
    assert seen["q"] == "heat pump sales 2026" and seen["format"] == "json"
    assert seen["time_range"] == "month" and seen["language"] == "en"
    first = hits[0]
    assert first.url == fake.url("/pages/sales") and first.source_id.startswith("web-")
    assert first.title == "Heat pump sales September 2026"
    assert len(first.snippet) <= 200 and first.snippet.startswith("Heat pump sales reached")
    assert first.snippet.endswith("More detail.")  # cut at the last sentence end
    assert first.published == dt.date(2026, 10, 10)
    assert hits[1].source_type == "blog"


def test_searxng_time_range_is_the_narrowest_span_covering_the_start() -> None:
    assert time_range_param(TimeRange(), TODAY) is None
    assert time_range_param(TimeRange(TODAY), TODAY) == "day"
    assert time_range_param(TimeRange(dt.date(2026, 10, 5)), TODAY) == "month"
    assert time_range_param(TimeRange(dt.date(2026, 1, 1)), TODAY) == "year"
    assert time_range_param(TimeRange(dt.date(2020, 1, 1)), TODAY) is None


async def test_brave_hits_with_freshness_language_and_key(fake: FakeWeb) -> None:
    hits = await brave(fake).search(request(lang="zh"))
    seen = fake.of("brave")[0]
    assert seen.query["freshness"] == "2026-10-01to2026-10-31"
    assert seen.query["search_lang"] == "zh-hans" and seen.query["count"] == "5"
    assert seen.headers["X-Subscription-Token"] == KEY
    assert hits[0].title == "Heat pump sales September 2026"
    assert "<strong>" not in hits[0].snippet and len(hits[0].snippet) <= 200
    assert hits[0].publisher == "Example News" and hits[0].published == dt.date(2026, 10, 10)


async def test_brave_open_ranges(fake: FakeWeb) -> None:
    await brave(fake).search(request(time_range=TimeRange(since=dt.date(2026, 9, 1))))
    await brave(fake).search(request(time_range=TimeRange()))
    first, second = fake.of("brave")
    assert first.query["freshness"] == "2026-09-01to2026-10-31"
    assert "freshness" not in second.query


async def test_tavily_hits_with_dates_in_the_body(fake: FakeWeb) -> None:
    hits = await tavily(fake).search(request())
    seen = fake.of("tavily")[0]
    assert seen.body is not None
    assert seen.body["start_date"] == "2026-10-01" and seen.body["end_date"] == "2026-10-31"
    assert seen.body["query"] == "heat pump sales 2026" and seen.body["max_results"] == 5
    assert seen.headers["Authorization"] == "Bearer tvly-key"
    assert [h.url for h in hits] == [fake.url("/pages/sales"), fake.url("/pages/prices-blog")]
    assert hits[0].published == dt.date(2026, 10, 10)


async def test_a_429_falls_back_to_the_next_backend_and_the_log_says_so(fake: FakeWeb) -> None:
    fake.failures["searxng"] = [Failure(429, retry_after="0")]
    chain = WebBackend([searxng(fake, retries=2), brave(fake)], PageReader())
    log = RunLog()
    with bound(log):
        hits = await chain.search(request())
    assert len(fake.of("searxng")) == 3  # the first try and two retries
    assert len(fake.of("brave")) == 1 and hits[0].publisher == "Example News"
    lines = [e.message for e in log.of_kind("fallback")]
    assert lines == ["searxng failed (429); using brave"]
    assert KEY not in " ".join(e.line() for e in log.events)


async def test_retry_after_is_honoured(fake: FakeWeb) -> None:
    fake.failures["searxng"] = [Failure(429, retry_after="1", forever=False)]
    started = time.monotonic()
    hits = await searxng(fake, retries=2).search(request())
    assert hits and time.monotonic() - started >= 1.0
    assert len(fake.of("searxng")) == 2


def test_retry_after_header_forms() -> None:
    assert retry_after_s("3") == 3.0
    assert retry_after_s(None) is None
    assert retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0


async def test_a_timeout_falls_back_and_all_failing_is_a_run_error(fake: FakeWeb) -> None:
    fake.failures["searxng"] = [Failure(200, delay_s=2.0)]
    fake.failures["brave"] = [Failure(500)]
    fake.failures["tavily"] = [Failure(401)]
    chain = WebBackend([searxng(fake, timeout_s=0.3), brave(fake), tavily(fake)],
                       PageReader())
    log = RunLog()
    with bound(log), pytest.raises(SearchUnavailable, match="every search backend failed"):
        await chain.search(request())
    assert [e.message for e in log.of_kind("fallback")] == [
        "searxng failed (timeout); using brave", "brave failed (HTTP 500); using tavily",
        "tavily failed (HTTP 401); no web backend left"]


async def test_corpus_combined_with_web(fake: FakeWeb, corpus_dir: Path) -> None:
    corpus = CorpusBackend.from_folder(corpus_dir)
    chain = WebBackend([searxng(fake)], PageReader(), corpus)
    hits = await chain.search(request(time_range=TimeRange(), lang=None, limit=4))
    kinds = ["web" if h.source_id.startswith("web-") else "corpus" for h in hits]
    assert kinds == ["corpus", "web", "corpus", "web"]
    assert chain.name.startswith("searxng+corpus")
    assert await chain.read_body(hits[0].source_id)  # corpus bodies still read


def test_cache_key_is_backend_normalised_query_and_time_range() -> None:
    base = cache_key("searxng>brave", "Heat pump sales?", RANGE)
    assert base == cache_key("searxng>brave", "  heat   PUMP sales ", RANGE)
    assert base != cache_key("brave", "Heat pump sales?", RANGE)
    assert base != cache_key("searxng>brave", "Heat pump sales?", TimeRange(RANGE.since))


def test_web_settings_from_env() -> None:
    env = {"RED_SEARCH_BACKENDS": "searxng, brave,corpus", "RED_SEARXNG_URL": "http://s:8080",
           "BRAVE_API_KEY": KEY, "RED_PAGE_MAX_BYTES": "5000", "RED_BRAVE_RATE_PER_S": "0.5"}
    web = Settings.from_env(env).web
    assert web.backends == ("searxng", "brave", "corpus")
    assert web.page_max_bytes == 5000 and web.rate_per_s("brave") == 0.5
    assert KEY not in repr(web)
    assert Settings.from_env({}).web.backends == ("corpus",)
    with pytest.raises(SettingsError, match="TAVILY_API_KEY"):
        Settings.from_env({"RED_SEARCH_BACKENDS": "tavily"})
    with pytest.raises(SettingsError, match="unknown"):
        Settings.from_env({"RED_SEARCH_BACKENDS": "google"})


def test_build_backend_keeps_the_corpus_default(corpus_dir: Path) -> None:
    corpus = CorpusBackend.from_folder(corpus_dir)
    assert build_backend(Settings(), corpus) is corpus
    web = WebSettings(backends=("brave", "searxng"), searxng_url="http://s",
                      brave_api_key=Secret(KEY))
    built = build_backend(dataclasses.replace(Settings(), web=web), corpus)
    assert isinstance(built, WebBackend) and built.name == "brave>searxng"
    assert built.corpus is None
