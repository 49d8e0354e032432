"""The search tool: query variants sent as one batch, truncated hits, and a response cache.

An answer is cached only when every source answered it: one from which a source was missing
(an MCP server that did not start, every web service down beside the corpus) looks like
"nothing found" but is not, so the next query asks again (`research_core.search.failures`)."""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol, runtime_checkable

from research_core import metrics
from research_core.protocols import (
    SearchBackend,
    SearchHit,
    SearchRequest,
    Similarity,
    TimeRange,
)
from research_core.runlog import RunLog
from research_core.search import snippets
from research_core.search.failures import watching
from research_core.settings import EngineSettings
from research_core.text.terms import ask_apart


@runtime_checkable
class RemembersHits(Protocol):
    """A backend that must learn about hits served from the cache (a web backend maps their
    source ids to URLs so that it can read their pages)."""

    def remember(self, hits: list[SearchHit]) -> None: ...


@runtime_checkable
class DatesPages(Protocol):
    """A backend that learns a page's publish date when it reads the page (web pages)."""

    def published_of(self, source_id: str) -> dt.date | None: ...


@runtime_checkable
class KeepsHitsPrivate(Protocol):
    """A backend whose hits belong to one person and one run (the workspace's own Slack,
    searched with the asker's action token): when `private`, they are never cached."""

    @property
    def private(self) -> bool: ...


class HitCache(Protocol):
    """Stored search responses, keyed by backend + normalised query + time range."""

    async def cache_get(self, key: str, ttl_s: int) -> list[SearchHit] | None: ...

    async def cache_put(self, key: str, hits: list[SearchHit]) -> None: ...


@dataclass(frozen=True)
class QueryResult:
    query: str
    hits: list[SearchHit]
    from_cache: bool
    time_range: TimeRange


def normalise(query: str) -> str:
    return re.sub(r"\s+", " ", query.strip().lower()).strip(" ?？。.!！")


def cache_key(backend: str, query: str, time_range: TimeRange) -> str:
    raw = f"{backend}\n{normalise(query)}\n{time_range.key()}"
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def truncate(hit: SearchHit, chars: int) -> SearchHit:
    """Title + the snippet cut at a boundary within `chars` characters + date + url."""
    return replace(hit, snippet=snippets.cut(hit.snippet, chars))


@dataclass
class SearchTool:
    backend: SearchBackend
    cache: HitCache
    config: EngineSettings
    log: RunLog
    similarity: Similarity
    permit_read: Callable[[], bool] = lambda: True
    scope: str = ""  # the workspace a run belongs to: its cached hits are its own

    async def dedupe(self, queries: list[str], earlier: list[str]) -> list[str]:
        """Drop each query at `dedup_similarity` or more to an earlier one of the run that
        asks the same thing (one whose words differ both ways asks something else)."""
        return (await self.sift(queries, earlier))[0]

    async def sift(self, queries: list[str], earlier: list[str]) -> tuple[list[str], list[str]]:
        """`dedupe`, and the earlier queries that the dropped ones repeat (each once)."""
        kept: list[str] = []
        twins: list[str] = []
        for query in queries:
            seen = [s for s in earlier + kept if not ask_apart(query, s)]
            scores = (await self.similarity.matrix([query], seen))[0] if seen else []
            best = max(range(len(scores)), key=lambda i: scores[i], default=None)
            if best is not None and scores[best] >= self.config.dedup_similarity:
                self.log.emit("dedup", f"dropped {query!r}: {scores[best]:.2f} similar to "
                              f"{seen[best]!r}", query=query, duplicate_of=seen[best])
                twins += [seen[best]] if seen[best] in earlier and seen[best] not in twins else []
                continue
            kept.append(query)
        return kept, twins

    async def cached(self, query: str, time_range: TimeRange) -> QueryResult | None:
        """An earlier query's hits as the cache holds them (no read spent), or None."""
        scoped = f"{self.backend.name}@{self.scope}" if self.scope else self.backend.name
        hits = await self.cache.cache_get(cache_key(scoped, query, time_range),
                                          self.config.cache_ttl_s)
        if hits is None:
            return None
        self.log.emit("cache-hit", f"{query!r} asked before: its {len(hits)} hits judged again "
                      "for this sub-question", query=query)
        return QueryResult(query, hits, True, time_range)

    async def batch(self, queries: list[str], time_range: TimeRange) -> list[QueryResult]:
        """All variants at once, at most `search_concurrency` in flight."""
        gate = asyncio.Semaphore(self.config.search_concurrency)
        self.log.emit("batch", f"{len(queries)} variant(s) in one batch, concurrency "
                      f"{self.config.search_concurrency}, snippets cut to "
                      f"{self.config.snippet_chars} characters", queries=queries)

        async def one(query: str) -> QueryResult:
            async with gate:
                return await self._search(query, time_range)

        return list(await asyncio.gather(*(one(q) for q in queries)))

    async def _search(self, query: str, time_range: TimeRange) -> QueryResult:
        scoped = f"{self.backend.name}@{self.scope}" if self.scope else self.backend.name
        key = cache_key(scoped, query, time_range)
        private = isinstance(self.backend, KeepsHitsPrivate) and self.backend.private
        cached = None if private else await self.cache.cache_get(key, self.config.cache_ttl_s)
        if cached is not None:
            if isinstance(self.backend, RemembersHits):
                self.backend.remember(cached)
            metrics.SEARCH_CACHE_HITS.labels(metrics.backend_label(self.backend.name)).inc()
            self.log.emit("cache-hit", f"{query!r} served from cache ({len(cached)} hits)",
                          query=query)
            return QueryResult(query, cached, True, time_range)
        if not self.permit_read():
            self.log.emit("search", f"{query!r} not sent: no read left in the budget")
            return QueryResult(query, [], False, time_range)
        request = SearchRequest(query=query, time_range=time_range,
                                limit=self.config.hits_per_query)
        metrics.SEARCH_QUERIES.labels(metrics.backend_label(self.backend.name)).inc()
        with watching() as silent:
            raw = await self.backend.search(request)
        hits = [truncate(h, self.config.snippet_chars) for h in raw]
        missing = sorted({s.source for s in silent})
        if not private and not missing:
            await self.cache.cache_put(key, hits)
        unanswered = f" (not cached: no answer from {', '.join(missing)})" if missing else ""
        self.log.emit("search", f"{self.backend.name}: {query!r} range {time_range.key()} → "
                      f"{len(hits)} hits{unanswered}", query=query, hits=len(hits),
                      **({"unanswered": missing} if missing else {}))
        return QueryResult(query, hits, False, time_range)
