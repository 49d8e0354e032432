"""The safe page reader: fetch one http(s) page under a time cap, a byte cap and a content-type
allow-list (HTML, plain text, PDF), refusing unsafe addresses on every redirect hop, then
extract its text and publish date (`research_core.search.web.extract`) in a child process
that is killed when the page's time cap runs out (`research_core.search.web.extract_process`).
The cap covers the fetch and the extraction together (the child's start-up aside)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import aiohttp
from yarl import URL

from research_core import metrics
from research_core.search.web.extract import (
    PDF_TYPES,
    READABLE_TYPES,
    TEXT_TYPES,
    FetchedPage,
    PageText,
    Unreadable,
)
from research_core.search.web.extract_process import extract_in_process
from research_core.search.web.net_guard import (
    AddressPolicy,
    GuardedResolver,
    ResolveFn,
    UnsafeAddress,
    parse_ip,
    system_resolve,
)
from research_core.settings import WebSettings

MAX_REDIRECTS = 5
CHUNK_BYTES = 64 * 1024
REDIRECTS = frozenset({301, 302, 303, 307, 308})
USER_AGENT = "RED-Searcher/0.1 (research bot; +https://example.invalid/red-searcher)"


# Why a page was refused (a metric's label: a small fixed set).
REFUSALS = ("unsafe_address", "scheme", "redirects", "status", "content_type", "binary",
            "timeout", "network", "unreadable")


class PageRefused(Exception):
    """The page was not read: unsafe address, bad scheme, status, type or redirect chain;
    `reason` is one of REFUSALS."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass
class PageReader:
    """`policy` lets tests allow their local server; by default only public addresses pass."""

    max_bytes: int = 2_000_000
    timeout_s: float = 15.0
    policy: AddressPolicy = field(default_factory=AddressPolicy)
    resolve_fn: ResolveFn = system_resolve
    max_redirects: int = MAX_REDIRECTS

    @classmethod
    def from_settings(cls, web: WebSettings) -> PageReader:
        return cls(max_bytes=web.page_max_bytes, timeout_s=web.page_timeout_s)

    async def read(self, url: str) -> PageText:
        """The page's main text and publish date; PageRefused when it cannot be read safely."""
        try:
            kind, text = await self._read(url)
        except PageRefused as refused:
            metrics.PAGES_REFUSED.labels(refused.reason).inc()
            raise
        metrics.PAGES_READ.labels(kind).inc()
        return text

    async def _read(self, url: str) -> tuple[str, PageText]:
        """The page's type (html, text, pdf) and its text."""
        started = time.monotonic()
        page = await self.fetch(url)
        left = self.timeout_s - (time.monotonic() - started)
        try:
            text = await extract_in_process(page, left)
        except Unreadable as exc:
            raise PageRefused(str(exc), "unreadable") from exc
        kind = "pdf" if page.content_type in PDF_TYPES else \
            "text" if page.content_type in TEXT_TYPES else "html"
        return kind, text

    async def fetch(self, url: str) -> FetchedPage:
        try:
            async with asyncio.timeout(self.timeout_s):
                return await self._follow(URL(url))
        except TimeoutError as exc:
            raise PageRefused(f"{url}: no complete answer within {self.timeout_s:g}s",
                              "timeout") from exc
        except UnsafeAddress as exc:
            raise PageRefused(str(exc), "unsafe_address") from exc
        except (aiohttp.ClientError, ValueError) as exc:
            raise PageRefused(f"{url}: {type(exc).__name__}: {exc}", "network") from exc

    async def _follow(self, url: URL) -> FetchedPage:
        resolver = GuardedResolver(self.policy, self.resolve_fn)
        connector = aiohttp.TCPConnector(resolver=resolver, use_dns_cache=False,
                                         force_close=True)
        async with aiohttp.ClientSession(
            connector=connector, trust_env=False, cookie_jar=aiohttp.DummyCookieJar(),
            timeout=aiohttp.ClientTimeout(total=self.timeout_s),
            headers={"User-Agent": USER_AGENT},
        ) as session:
            for _ in range(self.max_redirects + 1):
                self._check_url(url)
                async with session.get(url, allow_redirects=False) as resp:
                    if resp.status in REDIRECTS:
                        url = self._next_hop(url, resp)
                        continue
                    return await self._body(url, resp)
        raise PageRefused(f"more than {self.max_redirects} redirects", "redirects")

    def _check_url(self, url: URL) -> None:
        if url.scheme not in ("http", "https") or not url.host:
            raise PageRefused(f"{url}: only http(s) URLs with a host are read", "scheme")
        literal = parse_ip(url.host)
        if literal is not None:
            self.policy.check(literal, url.host)

    @staticmethod
    def _next_hop(url: URL, resp: aiohttp.ClientResponse) -> URL:
        location = resp.headers.get("Location")
        if not location:
            raise PageRefused(f"{url}: redirect without a Location", "redirects")
        return url.join(URL(location))

    async def _body(self, url: URL, resp: aiohttp.ClientResponse) -> FetchedPage:
        if resp.status != 200:
            raise PageRefused(f"{url}: HTTP {resp.status}", "status")
        kind = resp.content_type.lower()
        if kind not in READABLE_TYPES:
            raise PageRefused(f"{url}: content type {kind} is not read", "content_type")
        body, received = await self._capped(resp)
        if kind not in PDF_TYPES and b"\x00" in body:
            raise PageRefused(f"{url}: binary content labelled {kind}", "binary")
        return FetchedPage(str(url), kind, resp.charset, body[: self.max_bytes],
                           received > self.max_bytes, received)

    async def _capped(self, resp: aiohttp.ClientResponse) -> tuple[bytes, int]:
        """The body and how many bytes were read: reading stops at the first chunk past
        `max_bytes` and the connection is dropped."""
        parts: list[bytes] = []
        size = 0
        async for chunk in resp.content.iter_chunked(CHUNK_BYTES):
            parts.append(chunk)
            size += len(chunk)
            if size > self.max_bytes:
                resp.close()
                break
        return b"".join(parts), size

