"""Whole sentences from the pages the evidence came from, where a page costs nothing to read
(the local corpus; a web page is not fetched again for this): a snippet cut short ("… cut its
household heat pump g…" is no sentence to quote) is completed from its page, a snippet that
ends announcing a disagreement without its figures gets the next sentence too, and the kept
pages' other sentences are offered to the extractive answer (`page_lines`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.pool import Line
from research_core.protocols import SearchBackend
from research_core.search.corpus import CorpusBackend
from research_core.search.reading import clean_markdown, split_paragraphs
from research_core.search.snippets import ELLIPSIS, is_cut
from research_core.text.conflicts import CUE
from research_core.text.figures import figures_in
from research_core.text.sentences import (
    is_heading,
    lead_in,
    sentence_end,
    sentence_start,
    sentences,
)

Reader = Callable[[str], Awaitable[str | None]]
MAX_CHARS = 600


def local_reader(backend: SearchBackend) -> Reader | None:
    """The backend's page reader where reading is free (the corpus), else None."""
    return backend.read_body if isinstance(backend, CorpusBackend) else None


async def completed(items: list[Evidence], read: Reader | None) -> list[Evidence]:
    """The items, each cut snippet replaced in place by its whole sentences from its page (as
    a deep read replaces it by paragraphs), so that the claim check that follows the report
    sees the text the answer quotes."""
    if read is None:
        return items
    for item in items:
        announces = announces_figures(item.text)
        body = await read(item.source_id) if is_cut(item.text) or announces else None
        whole = whole_text(item.text, clean_markdown(body)) if body else None
        if whole and announces:
            whole = next_sentence(whole, clean_markdown(body or "")) or whole
        if whole:
            item.text = whole
    return items


async def page_lines(items: list[Evidence], read: Reader | None) -> list[Line]:
    """The whole sentences of the pages the items came from, where reading is free, each
    attributed to its page's best-scored item: a kept page's other sentences (the next
    paragraph's hydroxide price, the third of its three reasons) are as citable as the few the
    search snippet or the deep read put in the model's context."""
    if read is None:
        return []
    best: dict[str, Evidence] = {}
    for item in sorted(items, key=lambda e: -e.score):
        best.setdefault(item.source_id, item)
    out: list[Line] = []
    for source_id, item in best.items():
        out += _lines_under_headings(await read(source_id), item)
    return out


def _lines_under_headings(body: str | None, item: Evidence) -> list[Line]:
    """A page's sentences as lines of `item`, each with the heading it stands under."""
    out: list[Line] = []
    heading = ""
    for paragraph in split_paragraphs(body or ""):
        if is_heading(paragraph):
            heading = clean_markdown(paragraph)
            continue
        title, rest = lead_in(paragraph)  # "1. *Fibre mix.* Finer wools …": a label
        under = f"{heading} {title}".strip() if title else heading
        said = [clean_markdown(t) for t in sentences(rest, headings=False, clauses=False)]
        out += [Line(text, item, under, i == 0) for i, text in enumerate(t for t in said if t)]
    return out


def announces_figures(text: str) -> bool:
    """A text whose last sentence announces a disagreement ("Two credible sources give different
    figures for …") without stating the figures, which the next sentence then gives."""
    last = sentences(text)[-1] if text.strip() else ""
    return bool(CUE.search(last)) and len(figures_in(last)) < 2


def next_sentence(text: str, body: str) -> str | None:
    """The text with the body's sentence that follows it (None: the body does not hold it)."""
    at = body.find(text)
    if at < 0:
        return None
    end = at + len(text)
    extended = body[at:sentence_end(body, end + 1)].strip()
    return extended if len(extended) <= MAX_CHARS else None


def whole_text(snippet: str, body: str) -> str | None:
    """The snippet extended to the sentence boundaries of the body around it (None: the body
    does not hold it)."""
    head = snippet.strip().strip(ELLIPSIS).strip()
    at = body.find(head)
    if at < 0 or not head:
        return None
    start = sentence_start(body, at)
    end = sentence_end(body, at + len(head) - 1)
    text = body[start:end].strip()
    return text if len(text) <= MAX_CHARS else None
