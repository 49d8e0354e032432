"""A local web for tests: the three search APIs in their documented response formats, and
pages (articles, redirects, a 50 MB stream, a binary, a slow page, an injection page).

Search responses follow each API's documentation: SearxNG's `format=json` search API,
Brave's web search response (`web.results[]` with description / page_age / profile), and
Tavily's search response (`results[]` with content / score / published_date). A queue of
statuses per API makes it answer e.g. 429 with Retry-After before it answers normally.
Every request is recorded."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

BIG_PAGE_BYTES = 50 * 1024 * 1024
BIG_CHUNK = 64 * 1024


@dataclass(frozen=True)
class Doc:
    slug: str
    title: str
    snippet: str
    published: str
    body_html: str


@dataclass(frozen=True)
class Failure:
    status: int
    retry_after: str | None = None
    delay_s: float = 0.0
    forever: bool = True  # False: answered once, then the next in the queue (or success)


@dataclass
class Seen:
    api: str
    query: dict[str, str]
    body: dict[str, Any] | None
    headers: dict[str, str]


def tiny_pdf(lines: list[str], created: str = "20261012080000") -> bytes:
    """A one-page PDF 1.4 with Helvetica text lines and an Info dictionary."""
    text = " ".join(f"({line}) Tj T*" for line in lines)
    content = f"BT /F1 12 Tf 72 720 Td 14 TL {text} ET"
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        "/Resources << /Font << /F1 5 0 R >> >> >>",
        f"<< /Length {len(content)} >>\nstream\n{content}\nendstream",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /CreationDate (D:{created}Z) /Title (Heat pump report) >>",
    ]
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += (f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R /Info 6 0 R >>\n"
            f"startxref\n{xref}\n%%EOF\n").encode()
    return out


PDF_LINES = ["Heat pump sales reached 214,000 units in September 2026.",
             "Prices fell 9.5% to 7,150 euros."]


def article(title: str, published: str, paragraphs: list[str]) -> str:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (f"<html><head><title>{title}</title><meta property=\"article:published_time\" "
            f"content=\"{published}T08:00:00Z\"></head><body><nav>Home | Markets | About</nav>"
            f"<article><h1>{title}</h1>{body}</article><footer>© Example</footer></body></html>")


@dataclass
class FakeWeb:
    host: str = "127.0.0.1"
    docs: list[Doc] = field(default_factory=list)
    failures: dict[str, list[Failure]] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    big_sent: int = 0
    base_url: str = ""
    _runner: web.AppRunner | None = None

    async def start(self) -> str:
        app = web.Application()
        app.router.add_get("/searxng/search", self._searxng)
        app.router.add_get("/brave/res/v1/web/search", self._brave)
        app.router.add_post("/tavily/search", self._tavily)
        app.router.add_get("/pages/{slug}", self._page)
        app.router.add_get("/redirect/{hops}", self._redirect)
        app.router.add_get("/big", self._big)
        app.router.add_get("/binary", self._binary)
        app.router.add_get("/nul", self._nul)
        app.router.add_get("/slow", self._slow)
        app.router.add_get("/plain", self._plain)
        app.router.add_get("/pdf", self._pdf)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, 0).start()
        port = self._runner.addresses[0][1]
        self.base_url = f"http://{self.host}:{port}"
        return self.base_url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def url(self, path: str) -> str:
        return self.base_url + path

    def of(self, api: str) -> list[Seen]:
        return [s for s in self.seen if s.api == api]

    async def _record(self, api: str, request: web.Request) -> web.Response | None:
        body = await request.json() if request.method == "POST" else None
        self.seen.append(Seen(api, dict(request.query), body, dict(request.headers)))
        queue = self.failures.get(api) or []
        if not queue:
            return None
        failure = queue[0] if queue[0].forever else queue.pop(0)
        await asyncio.sleep(failure.delay_s)
        if failure.status == 200:
            return None
        headers = {"Retry-After": failure.retry_after} if failure.retry_after else {}
        return web.json_response({"error": "rate limited"}, status=failure.status,
                                 headers=headers)

    async def _searxng(self, request: web.Request) -> web.Response:
        if (failed := await self._record("searxng", request)) is not None:
            return failed
        results = [{"url": self.url(f"/pages/{d.slug}"), "title": d.title, "content": d.snippet,
                    "engine": "duckduckgo", "engines": ["duckduckgo"], "positions": [i + 1],
                    "parsed_url": ["http", self.host, f"/pages/{d.slug}", "", "", ""],
                    "template": "default.html", "publishedDate": f"{d.published}T00:00:00",
                    "score": 1.0 / (i + 1), "category": "general"}
                   for i, d in enumerate(self.docs)]
        return web.json_response({"query": request.query.get("q", ""),
                                  "number_of_results": len(results), "results": results,
                                  "answers": [], "corrections": [], "infoboxes": [],
                                  "suggestions": [], "unresponsive_engines": []})

    async def _brave(self, request: web.Request) -> web.Response:
        if (failed := await self._record("brave", request)) is not None:
            return failed
        results = [{"type": "search_result", "title": d.title,
                    "url": self.url(f"/pages/{d.slug}"),
                    "description": f"<strong>{d.title}</strong>: {d.snippet}",
                    "page_age": f"{d.published}T00:00:00", "age": d.published,
                    "language": "en", "family_friendly": True,
                    "profile": {"name": "Example News", "url": self.base_url,
                                "long_name": self.host},
                    "meta_url": {"scheme": "http", "netloc": self.host,
                                 "hostname": self.host, "path": f"› pages › {d.slug}"}}
                   for d in self.docs]
        return web.json_response({
            "type": "search",
            "query": {"original": request.query.get("q", ""), "more_results_available": False},
            "mixed": {"type": "mixed", "main": [{"type": "web", "index": i, "all": False}
                                                for i in range(len(results))]},
            "web": {"type": "search", "family_friendly": True, "results": results},
        })

    async def _tavily(self, request: web.Request) -> web.Response:
        if (failed := await self._record("tavily", request)) is not None:
            return failed
        body = self.seen[-1].body or {}
        results = [{"title": d.title, "url": self.url(f"/pages/{d.slug}"),
                    "content": d.snippet, "score": 0.9 - i / 100, "raw_content": None,
                    "published_date": d.published}
                   for i, d in enumerate(self.docs)]
        return web.json_response({"query": body.get("query", ""), "follow_up_questions": None,
                                  "answer": None, "images": [], "results": results,
                                  "response_time": 0.42, "request_id": "fake-request"})

    async def _page(self, request: web.Request) -> web.Response:
        slug = request.match_info["slug"]
        doc = next((d for d in self.docs if d.slug == slug), None)
        if doc is None:
            raise web.HTTPNotFound()
        return web.Response(text=doc.body_html, content_type="text/html", charset="utf-8")

    async def _redirect(self, request: web.Request) -> web.Response:
        """/redirect/N?to=URL: N more hops through this server, then to URL."""
        hops = int(request.match_info["hops"])
        target = request.query["to"]
        location = target if hops <= 1 else f"/redirect/{hops - 1}?to={target}"
        raise web.HTTPFound(location)

    async def _big(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        await response.prepare(request)
        chunk = b"<p>" + b"x" * (BIG_CHUNK - 8) + b"</p>\n"
        try:
            while self.big_sent < BIG_PAGE_BYTES:
                await response.write(chunk)
                self.big_sent += len(chunk)
        except (ConnectionResetError, ConnectionError):
            return response
        await response.write_eof()
        return response

    async def _binary(self, request: web.Request) -> web.Response:
        return web.Response(body=bytes(range(256)) * 64, content_type="application/octet-stream")

    async def _nul(self, request: web.Request) -> web.Response:
        return web.Response(body=b"<html>\x00\x01\x02binary</html>", content_type="text/html")

    async def _slow(self, request: web.Request) -> web.Response:
        await asyncio.sleep(5)
        return web.Response(text="late", content_type="text/plain")

    async def _plain(self, request: web.Request) -> web.Response:
        return web.Response(text="First line of text.\nSecond line.", content_type="text/plain")

    async def _pdf(self, request: web.Request) -> web.Response:
        return web.Response(body=tiny_pdf(PDF_LINES), content_type="application/pdf")
