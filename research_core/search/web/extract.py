"""Text out of a fetched page: the main text and publish date of HTML (trafilatura), plain
text as it is, and the text of a PDF (pypdf, first pages only). Paragraphs come back separated
by blank lines, the shape the engine's paragraph selection (`research_core.search.reading`) splits.

Pages are hostile input: a charset Python does not know (or one that is not a text encoding,
like rot13 or base64) falls back to UTF-8, a malformed PDF is `Unreadable`, and NUL characters
(which PostgreSQL refuses in text) never reach the result. The page reader runs `extract` in
a helper process it can kill (`research_core.search.web.extract_process`)."""

from __future__ import annotations

import datetime as dt
import io
from dataclasses import dataclass

import pypdf
import trafilatura
from pypdf.errors import PyPdfError

from research_core.question import scrub_surrogates
from research_core.search.web.hits import parse_date

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset({"text/plain"})
PDF_TYPES = frozenset({"application/pdf"})
READABLE_TYPES = HTML_TYPES | TEXT_TYPES | PDF_TYPES
PDF_MAX_PAGES = 40


class Unreadable(Exception):
    """The page's bytes could not be turned into text (e.g. a PDF cut at the byte cap)."""


@dataclass(frozen=True)
class FetchedPage:
    url: str
    content_type: str
    charset: str | None
    body: bytes
    truncated: bool
    received: int


@dataclass(frozen=True)
class PageText:
    url: str
    title: str
    text: str
    published: dt.date | None
    truncated: bool


def paragraphs(text: str) -> str:
    """Non-empty lines as paragraphs separated by blank lines (NUL characters dropped)."""
    lines = scrub_surrogates(text.replace("\x00", "")).splitlines()
    return "\n\n".join(line.strip() for line in lines if line.strip())


def decode(body: bytes, charset: str | None) -> str:
    """The body in its declared charset; UTF-8 when none is declared or the declared one is
    unknown or no text encoding (x-no-such, rot13, base64 all fall back)."""
    if charset:
        try:
            return body.decode(charset, errors="replace")
        except (LookupError, ValueError):
            pass
    return body.decode("utf-8", errors="replace")


def _title(value: object) -> str:
    return scrub_surrogates(str(value or "").replace("\x00", "")).strip()


def extract(page: FetchedPage) -> PageText:
    """The text of a page of one of the READABLE_TYPES (CPU work: run it in a thread)."""
    if page.content_type in PDF_TYPES:
        return extract_pdf(page)
    if page.content_type in TEXT_TYPES:
        text = decode(page.body, page.charset)
        return PageText(page.url, "", paragraphs(text), None, page.truncated)
    return extract_html(page)


def extract_html(page: FetchedPage) -> PageText:
    """Main text, title and publish date of an HTML page (trafilatura, no comments)."""
    html = decode(page.body, page.charset)
    doc = trafilatura.bare_extraction(html, url=page.url, with_metadata=True,
                                      include_comments=False, include_tables=True)
    if doc is None or isinstance(doc, dict):
        return PageText(page.url, "", "", None, page.truncated)
    return PageText(page.url, _title(doc.title), paragraphs(doc.text or ""),
                    parse_date(doc.date), page.truncated)


def extract_pdf(page: FetchedPage) -> PageText:
    """Text of the first PDF_MAX_PAGES pages, title and creation date from the metadata."""
    if page.truncated:
        raise Unreadable(f"{page.url}: a PDF cut at the byte cap cannot be read")
    try:
        reader = pypdf.PdfReader(io.BytesIO(page.body))
        text = "\n".join(p.extract_text() or "" for p in reader.pages[:PDF_MAX_PAGES])
        title, created = _pdf_metadata(reader)
    except (PyPdfError, ValueError, KeyError) as exc:
        raise Unreadable(f"{page.url}: unreadable PDF ({type(exc).__name__})") from exc
    return PageText(page.url, title, paragraphs(text), created, page.truncated)


def _pdf_metadata(reader: pypdf.PdfReader) -> tuple[str, dt.date | None]:
    """Title and creation date; a malformed date (pypdf raises ValueError) counts as none."""
    meta = reader.metadata
    if meta is None:
        return "", None
    try:
        created = meta.creation_date
    except ValueError:
        created = None
    return _title(meta.title), created.date() if created else None
