"""Builds the search backend a run uses from the settings (the CLI and the workers call it)."""

from __future__ import annotations

from research_core.errors import SettingsError
from research_core.protocols import RateLimiter, SearchBackend
from research_core.search.combined import CombinedBackend
from research_core.search.mcp.backend import McpBackend
from research_core.search.web.api_client import ApiClient
from research_core.search.web.brave import BraveSearch
from research_core.search.web.chain import WebBackend, WebSearch
from research_core.search.web.page_reader import PageReader
from research_core.search.web.rate_limit import LocalRateLimiter
from research_core.search.web.searxng import SearxngSearch
from research_core.search.web.tavily import TavilySearch
from research_core.settings import Settings, WebSettings


def web_names(web: WebSettings) -> list[str]:
    return [name for name in web.backends if name not in ("corpus", "mcp")]


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
    (e.g. a RedisRateLimiter shared by workers) defaults to an in-process one; "mcp" adds
    each server of RED_MCP_SERVERS beside the rest (`CombinedBackend`)."""
    web = settings.web
    if uses_corpus(settings) and corpus is None:
        raise SettingsError("RED_SEARCH_BACKENDS names corpus but no corpus was given")
    local = corpus if uses_corpus(settings) else None
    members: list[SearchBackend] = []
    if web_names(web):
        limiter = limiter or LocalRateLimiter(rate_table(web))
        searches = [make_search(name, web, limiter) for name in web_names(web)]
        members.append(WebBackend(searches, reader or PageReader.from_settings(web), local))
    elif local is not None:
        members.append(local)
    members += mcp_backends(settings)
    return members[0] if len(members) == 1 else CombinedBackend(members)


def mcp_backends(settings: Settings) -> list[SearchBackend]:
    """One backend per server of RED_MCP_SERVERS when RED_SEARCH_BACKENDS names mcp."""
    if "mcp" not in settings.web.backends:
        return []
    return [McpBackend(server, settings.mcp) for server in settings.mcp.servers]
