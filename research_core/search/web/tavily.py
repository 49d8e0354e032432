"""Tavily search API: POST https://api.tavily.com/search with `Authorization: Bearer <key>`.
The time range goes in `start_date` / `end_date` (YYYY-MM-DD); Tavily has no language
parameter. Results: title, url, content, score, published_date (news topic)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from research_core.protocols import SearchHit, SearchRequest
from research_core.search.web.api_client import ApiClient, BackendFailed
from research_core.search.web.hits import parse_date, web_hit
from research_core.settings import Secret

MAX_RESULTS = 20


@dataclass
class TavilySearch:
    url: str
    api_key: Secret
    client: ApiClient

    @property
    def name(self) -> str:
        return "tavily"

    def body(self, request: SearchRequest) -> dict[str, Any]:
        body: dict[str, Any] = {"query": request.query, "search_depth": "basic",
                                "topic": "general", "include_answer": False,
                                "max_results": min(request.limit, MAX_RESULTS)}
        if request.time_range.since:
            body["start_date"] = request.time_range.since.isoformat()
        if request.time_range.until:
            body["end_date"] = request.time_range.until.isoformat()
        return body

    async def search(self, request: SearchRequest) -> list[SearchHit]:
        headers = {"Authorization": f"Bearer {self.api_key}"}
        payload = await self.client.post_json(self.url, self.body(request), headers)
        results = payload.get("results") if isinstance(payload, dict) else None
        if not isinstance(results, list):
            raise BackendFailed(self.name, "response without results")
        return [_hit(r) for r in results if _usable(r)][: request.limit]


def _usable(result: Any) -> bool:
    return isinstance(result, dict) and isinstance(result.get("url"), str)


def _hit(result: dict[str, Any]) -> SearchHit:
    return web_hit(result["url"], str(result.get("title") or ""),
                   str(result.get("content") or ""), parse_date(result.get("published_date")))
