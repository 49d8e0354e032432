"""The web search backend the engine sees: web services tried in the configured order, each
failure (error, timeout, 429 after its retries) counted and noted in the run log before the
next is used, optionally combined with the local corpus (when no web service answers, the
corpus's hits alone are not cached: `failures.py`); bodies of web hits are read by the page
reader."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Protocol

from research_core.errors import SearchUnavailable
from research_core.protocols import SearchBackend, SearchHit, SearchRequest
from research_core.runlog import note
from research_core.search.failures import count, did_not_answer
from research_core.search.web.api_client import BackendFailed
from research_core.search.web.hits import WEB_ID_PREFIX
from research_core.search.web.page_reader import PageReader, PageRefused

REMEMBERED = 20_000  # source ids whose page a worker can still read (oldest dropped)


class WebSearch(Protocol):
    """One web search service."""

    @property
    def name(self) -> str: ...

    async def search(self, request: SearchRequest) -> list[SearchHit]: ...


def merge(first: list[SearchHit], second: list[SearchHit], limit: int) -> list[SearchHit]:
    """Alternate the two lists, dropping repeated URLs, up to `limit` hits."""
    merged: list[SearchHit] = []
    seen: set[str] = set()
    for pair in zip(first + [None] * len(second), second + [None] * len(first), strict=True):
        for hit in pair:
            if hit is not None and hit.url not in seen:
                seen.add(hit.url)
                merged.append(hit)
    return merged[:limit]


@dataclass
class WebBackend:
    searches: list[WebSearch]
    reader: PageReader
    corpus: SearchBackend | None = None
    _urls: dict[str, str] = field(default_factory=dict)
    _dates: dict[str, dt.date] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """Part of the response cache key: the order and the corpus, e.g. searxng>brave+corpus."""
        web = ">".join(s.name for s in self.searches)
        return f"{web}+{self.corpus.name}" if self.corpus else web

    async def search(self, request: SearchRequest) -> list[SearchHit]:
        local = await self.corpus.search(request) if self.corpus else []
        found = await self._web(request)
        self.remember(found)
        return merge(local, found, request.limit) if local else found

    def published_of(self, source_id: str) -> dt.date | None:
        """The publish date found on the page when it was read (None before, or if none)."""
        return self._dates.get(source_id)

    def remember(self, hits: list[SearchHit]) -> None:
        """Web hits (also those the engine serves from its cache) can have their pages read."""
        web = (h for h in hits if h.source_id.startswith(WEB_ID_PREFIX))
        self._urls.update((h.source_id, h.url) for h in web)
        for known in (self._urls, self._dates):  # a long-lived worker: keep the newest only
            excess = len(known) - REMEMBERED
            for oldest in list(known)[:excess] if excess > 0 else []:
                del known[oldest]

    async def _web(self, request: SearchRequest) -> list[SearchHit]:
        failures: list[str] = []
        for position, service in enumerate(self.searches):
            try:
                return await service.search(request)
            except BackendFailed as exc:
                count(service.name, exc.kind)
                failures.append(str(exc))
                after = self.searches[position + 1:]
                then = f"using {after[0].name}" if after else "no web backend left"
                note("fallback", f"{exc}; {then}", backend=service.name, reason=exc.reason)
        if self.corpus is None:
            raise SearchUnavailable(f"every search backend failed for {request.query!r}: "
                                    + "; ".join(failures))
        if self.searches:  # the corpus answers alone: not an answer to keep in the cache
            web = ">".join(s.name for s in self.searches)
            did_not_answer(web, "unavailable", "fallback",
                           f"{web}: no web backend answered {request.query!r}; the corpus "
                           "answers alone")
        return []

    async def read_body(self, source_id: str) -> str | None:
        if self.corpus is not None and (body := await self.corpus.read_body(source_id)):
            return body
        url = self._urls.get(source_id)
        if url is None:
            return None
        try:
            page = await self.reader.read(url)
        except PageRefused as exc:
            note("page", f"{source_id} not read: {exc}", source_id=source_id)
            return None
        if page.published is not None:
            self._dates[source_id] = page.published  # trimmed with the URLs in remember()
        cut = ", cut at the byte cap" if page.truncated else ""
        note("page", f"{source_id} read: {len(page.text)} characters, published "
             f"{page.published or 'undated'}{cut}", source_id=source_id, url=url)
        return page.text or None
