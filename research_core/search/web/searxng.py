"""SearxNG (self-hosted metasearch, JSON API, no key): GET {base}/search?q=…&format=json.

SearxNG takes a time range only as `time_range` = day | month | year back from today, so the
request's range is widened to the smallest of those that covers its start (an approximation
done by the service, not a filter applied afterwards); `language` passes the language."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from research_core.protocols import SearchHit, SearchRequest, TimeRange
from research_core.search.web.api_client import ApiClient, BackendFailed
from research_core.search.web.hits import parse_date, web_hit

_SPANS = (("day", 1), ("month", 31), ("year", 366))


def time_range_param(time_range: TimeRange, today: dt.date) -> str | None:
    """The narrowest SearxNG range reaching back to `since`; None for no or a distant start."""
    if time_range.since is None:
        return None
    age = (today - time_range.since).days
    return next((name for name, days in _SPANS if age <= days), None)


@dataclass
class SearxngSearch:
    base_url: str
    client: ApiClient
    today: Callable[[], dt.date] = field(default=dt.date.today)

    @property
    def name(self) -> str:
        return "searxng"

    def params(self, request: SearchRequest) -> dict[str, str]:
        params = {"q": request.query, "format": "json", "pageno": "1"}
        span = time_range_param(request.time_range, self.today())
        if span:
            params["time_range"] = span
        if request.lang:
            params["language"] = request.lang
        return params

    async def search(self, request: SearchRequest) -> list[SearchHit]:
        url = self.base_url.rstrip("/") + "/search"
        payload = await self.client.get_json(url, self.params(request))
        results = payload.get("results") if isinstance(payload, dict) else None
        if not isinstance(results, list):
            raise BackendFailed(self.name, "response without results")
        return [_hit(r, request) for r in results if _usable(r)][: request.limit]


def _usable(result: Any) -> bool:
    return isinstance(result, dict) and isinstance(result.get("url"), str)


def _hit(result: dict[str, Any], request: SearchRequest) -> SearchHit:
    return web_hit(result["url"], str(result.get("title") or ""),
                   str(result.get("content") or ""), parse_date(result.get("publishedDate")),
                   lang=request.lang or "")
