"""Whole sentences for evidence whose snippet was cut short ("… cut its household heat pump
g…" is no sentence to quote): the sentence is completed from the page it came from, where that
page costs nothing to read (the local corpus; a web page is not fetched again for this)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from research_core.loop.evidence import Evidence
from research_core.protocols import SearchBackend
from research_core.search.corpus import CorpusBackend
from research_core.search.reading import clean_markdown
from research_core.search.snippets import ELLIPSIS, is_cut

Reader = Callable[[str], Awaitable[str | None]]
MAX_CHARS = 600
_END = re.compile(r"[。！？][”’」』)）]*|[.!?][\"'”’)\]]*(?=\s|$)")


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
        body = await read(item.source_id) if is_cut(item.text) else None
        whole = whole_text(item.text, clean_markdown(body)) if body else None
        if whole:
            item.text = whole
    return items


def whole_text(snippet: str, body: str) -> str | None:
    """The snippet extended to the sentence boundaries of the body around it (None: the body
    does not hold it)."""
    head = snippet.strip().strip(ELLIPSIS).strip()
    at = body.find(head)
    if at < 0 or not head:
        return None
    start = 0
    for match in _END.finditer(body, 0, at + 1):
        start = match.end() if match.end() <= at else start
    end_match = _END.search(body, at + len(head) - 1)
    end = end_match.end() if end_match else len(body)
    text = body[start:end].strip()
    return text if len(text) <= MAX_CHARS else None
