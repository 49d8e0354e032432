"""Builds the search backend a run uses from the settings (the CLI and the workers call it)."""

from __future__ import annotations

from research_core.errors import SettingsError
from research_core.protocols import RateLimiter, SearchBackend
from research_core.search.web.api_client import ApiClient
from research_core.search.web.brave import BraveSearch
from research_core.search.web.chain import WebBackend, WebSearch
from research_core.search.web.page_reader import PageReader
from research_core.search.web.rate_limit import LocalRateLimiter
from research_core.search.web.searxng import SearxngSearch
from research_core.search.web.tavily import TavilySearch
from research_core.settings import Settings, WebSettings


def web_names(web: WebSettings) -> list[str]:
    return [name for name in web.backends if name != "corpus"]


def uses_corpus(settings: Settings) -> bool:
    return "corpus" in settings.web.backends


def rate_table(web: WebSettings) -> dict[str, float]:
    return {name: web.rate_per_s(name) for name in ("searxng", "brave", "tavily")}


def make_search(name: str, web: WebSettings, limiter: RateLimiter) -> WebSearch:
    client = ApiClient(name, limiter, timeout_s=web.search_timeout_s,
                       retries=web.search_retries, max_wait_s=web.max_retry_wait_s)
    if name == "searxng":
        return SearxngSearch(web.searxng_url, client)
    if name == "brave":
        return BraveSearch(web.brave_url, web.brave_api_key, client)
    if name == "tavily":
        return TavilySearch(web.tavily_url, web.tavily_api_key, client)
    raise ValueError(f"unknown web backend {name!r}")


def build_backend(settings: Settings, corpus: SearchBackend | None,
                  limiter: RateLimiter | None = None,
                  reader: PageReader | None = None) -> SearchBackend:
    """RED_SEARCH_BACKENDS as a backend. `corpus` is used when "corpus" is named; `limiter`
    (e.g. a RedisRateLimiter shared by workers) defaults to an in-process one."""
    web = settings.web
    if uses_corpus(settings) and corpus is None:
        raise SettingsError("RED_SEARCH_BACKENDS names corpus but no corpus was given")
    local = corpus if uses_corpus(settings) else None
    names = web_names(web)
    if not names:
        assert local is not None
        return local
    limiter = limiter or LocalRateLimiter(rate_table(web))
    searches = [make_search(name, web, limiter) for name in names]
    return WebBackend(searches, reader or PageReader.from_settings(web), local)
