"""A local web of hostile pages for the page reader: charsets Python cannot decode with, PDFs
with malformed metadata or that take seconds to parse, NUL bytes past the first chunk, a gzip
bomb, deeply nested HTML and bytes that are no PDF at all."""

from __future__ import annotations

import gzip
import zlib
from dataclasses import dataclass, field

from aiohttp import web

from tests.fakes.web_server import article, tiny_pdf

PARAGRAPH = "Heat pump sales reached 214,000 units in September 2026, up 12.4% on the year."
SLOW_PDF_PAGES = 4
SLOW_PDF_OPERATORS = 250_000  # per page: about 7 s of pypdf text extraction, 3 KB compressed
GZIP_BOMB_BYTES = 64 * 1024 * 1024


def pdf_of(objects: list[bytes]) -> bytes:
    """A PDF 1.4 file of the given objects (1 = catalog), with a correct xref table."""
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref)
    return out


def one_page_pdf(content: bytes, compress: bool = False) -> bytes:
    """A one-page PDF whose page content stream is `content` (Flate-compressed if asked)."""
    stream = zlib.compress(content, 9) if compress else content
    flate = b" /Filter /FlateDecode" if compress else b""
    return pdf_of([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d%s >>\nstream\n" % (len(stream), flate) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ])


def slow_pdf(pages: int = SLOW_PDF_PAGES, operators: int = SLOW_PDF_OPERATORS) -> bytes:
    """Tiny on the wire, slow to extract: pages of one-letter text operators, each page under
    pypdf's per-stream parsing budget (so it is parsed to the end, not refused early)."""
    stream = zlib.compress(b"BT /F1 12 Tf 72 720 Td " + b"(a) Tj " * operators + b"ET", 9)
    kids = b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(pages))
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages),
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    for i in range(pages):
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                       b"/Resources << /Font << /F1 3 0 R >> >> >>" % (5 + 2 * i))
        objects.append(b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream)
                       + stream + b"\nendstream")
    return pdf_of(objects)


def nul_text_pdf() -> bytes:
    """Text with NUL characters in it (PostgreSQL refuses them in text columns)."""
    return one_page_pdf(b"BT /F1 12 Tf 72 720 Td (Heat\\000pump\\000sales) Tj ET")


@dataclass
class HostileWeb:
    host: str = "127.0.0.2"
    base_url: str = ""
    hits: list[str] = field(default_factory=list)
    _runner: web.AppRunner | None = None

    async def start(self) -> str:
        app = web.Application()
        routes = {"/charset/{name}": self._charset, "/text-charset/{name}": self._text_charset,
                  "/pdf/bad-date": self._pdf_bad_date, "/pdf/slow": self._pdf_slow,
                  "/pdf/nul": self._pdf_nul, "/pdf/garbage": self._pdf_garbage,
                  "/late-nul": self._late_nul, "/deep-html": self._deep_html,
                  "/gzip-bomb": self._gzip_bomb, "/fine": self._fine}
        for path, handler in routes.items():
            app.router.add_get(path, handler)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, 0).start()
        self.base_url = f"http://{self.host}:{self._runner.addresses[0][1]}"
        return self.base_url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def url(self, path: str) -> str:
        return self.base_url + path

    @staticmethod
    def _article() -> bytes:
        return article("Heat pump sales rise", "2026-10-12", [PARAGRAPH]).encode()

    async def _charset(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        return web.Response(body=self._article(),
                            headers={"Content-Type": f"text/html; charset={name}"})

    async def _text_charset(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        return web.Response(body=PARAGRAPH.encode(),
                            headers={"Content-Type": f"text/plain; charset={name}"})

    async def _pdf_bad_date(self, request: web.Request) -> web.Response:
        return web.Response(body=tiny_pdf([PARAGRAPH], created="2026-13-45 not a date"),
                            content_type="application/pdf")

    async def _pdf_slow(self, request: web.Request) -> web.Response:
        return web.Response(body=slow_pdf(), content_type="application/pdf")

    async def _pdf_nul(self, request: web.Request) -> web.Response:
        return web.Response(body=nul_text_pdf(), content_type="application/pdf")

    async def _pdf_garbage(self, request: web.Request) -> web.Response:
        return web.Response(body=b"%PDF-1.7\n" + bytes(range(256)) * 40,
                            content_type="application/pdf")

    async def _late_nul(self, request: web.Request) -> web.Response:
        body = b"<html><body><p>" + b"x" * 100_000 + b"\x00</p></body></html>"
        return web.Response(body=body, content_type="text/html")

    async def _deep_html(self, request: web.Request) -> web.Response:
        depth = 100_000
        body = "<html><body>" + "<div>" * depth + PARAGRAPH + "</div>" * depth + "</body></html>"
        return web.Response(text=body, content_type="text/html")

    async def _gzip_bomb(self, request: web.Request) -> web.Response:
        html = b"<html><body><p>" + b" " * GZIP_BOMB_BYTES + b"</p></body></html>"
        return web.Response(body=gzip.compress(html, 9),
                            headers={"Content-Type": "text/html", "Content-Encoding": "gzip"})

    async def _fine(self, request: web.Request) -> web.Response:
        return web.Response(body=self._article(), content_type="text/html")
