"""Brave Search API: GET https://api.search.brave.com/res/v1/web/search with the key in
`X-Subscription-Token`. The time range goes in `freshness` as YYYY-MM-DDtoYYYY-MM-DD, the
language in `search_lang`; results are under `web.results` (title, url, description,
page_age, profile.name)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from research_core.protocols import SearchHit, SearchRequest, TimeRange
from research_core.search.web.api_client import ApiClient, BackendFailed
from research_core.search.web.hits import parse_date, web_hit
from research_core.settings import Secret

MAX_COUNT = 20
EPOCH = dt.date(1970, 1, 1)
_LANGS = {"zh": "zh-hans", "zh-cn": "zh-hans", "zh-tw": "zh-hant", "pt": "pt-pt"}


def freshness_param(time_range: TimeRange, today: dt.date) -> str | None:
    if time_range.since is None and time_range.until is None:
        return None
    since = time_range.since or EPOCH
    until = time_range.until or today
    return f"{since.isoformat()}to{until.isoformat()}"


@dataclass
class BraveSearch:
    url: str
    api_key: Secret
    client: ApiClient
    today: Callable[[], dt.date] = field(default=dt.date.today)

    @property
    def name(self) -> str:
        return "brave"

    def params(self, request: SearchRequest) -> dict[str, str]:
        params = {"q": request.query, "count": str(min(request.limit, MAX_COUNT))}
        fresh = freshness_param(request.time_range, self.today())
        if fresh:
            params["freshness"] = fresh
        if request.lang:
            lang = request.lang.lower()
            params["search_lang"] = _LANGS.get(lang, lang)
        return params

    async def search(self, request: SearchRequest) -> list[SearchHit]:
        headers = {"X-Subscription-Token": str(self.api_key)}
        payload = await self.client.get_json(self.url, self.params(request), headers)
        if not isinstance(payload, dict):
            raise BackendFailed(self.name, "response is not an object")
        web = payload.get("web")
        results = web.get("results", []) if isinstance(web, dict) else []
        return [_hit(r) for r in results if _usable(r)][: request.limit]


def _usable(result: Any) -> bool:
    return isinstance(result, dict) and isinstance(result.get("url"), str)


def _hit(result: dict[str, Any]) -> SearchHit:
    profile = result.get("profile")
    publisher = str(profile.get("name") or "") if isinstance(profile, dict) else ""
    return web_hit(result["url"], str(result.get("title") or ""),
                   str(result.get("description") or ""),
                   parse_date(result.get("page_age")), lang=str(result.get("language") or ""),
                   publisher=publisher)
