"""Text out of a fetched page: the main text and publish date of HTML (trafilatura), plain
text as it is, and the text of a PDF (pypdf, first pages only). Paragraphs come back separated
by blank lines, the shape the engine's paragraph selection (`research_core.reading`) splits."""

from __future__ import annotations

import datetime as dt
import io
from dataclasses import dataclass

import pypdf
import trafilatura
from pypdf.errors import PyPdfError

from research_core.web.hits import parse_date

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
    """Non-empty lines as paragraphs separated by blank lines."""
    return "\n\n".join(line.strip() for line in text.splitlines() if line.strip())


def extract(page: FetchedPage) -> PageText:
    """The text of a page of one of the READABLE_TYPES (CPU work: run it in a thread)."""
    if page.content_type in PDF_TYPES:
        return extract_pdf(page)
    if page.content_type in TEXT_TYPES:
        text = page.body.decode(page.charset or "utf-8", errors="replace")
        return PageText(page.url, "", paragraphs(text), None, page.truncated)
    return extract_html(page)


def extract_html(page: FetchedPage) -> PageText:
    """Main text, title and publish date of an HTML page (trafilatura, no comments)."""
    html = page.body.decode(page.charset or "utf-8", errors="replace")
    doc = trafilatura.bare_extraction(html, url=page.url, with_metadata=True,
                                      include_comments=False, include_tables=True)
    if doc is None or isinstance(doc, dict):
        return PageText(page.url, "", "", None, page.truncated)
    return PageText(page.url, doc.title or "", paragraphs(doc.text or ""),
                    parse_date(doc.date), page.truncated)


def extract_pdf(page: FetchedPage) -> PageText:
    """Text of the first PDF_MAX_PAGES pages, title and creation date from the metadata."""
    if page.truncated:
        raise Unreadable(f"{page.url}: a PDF cut at the byte cap cannot be read")
    try:
        reader = pypdf.PdfReader(io.BytesIO(page.body))
        text = "\n".join(p.extract_text() or "" for p in reader.pages[:PDF_MAX_PAGES])
        meta = reader.metadata
    except (PyPdfError, ValueError, KeyError) as exc:
        raise Unreadable(f"{page.url}: unreadable PDF ({type(exc).__name__})") from exc
    created = meta.creation_date if meta is not None else None
    title = str(meta.title or "") if meta is not None else ""
    return PageText(page.url, title, paragraphs(text),
                    created.date() if created else None, page.truncated)
