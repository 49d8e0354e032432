"""A message's citations as the reader sees them, shared by the thread's messages
(`workers.answer_blocks`) and the kept document (`contract.research_document`): the text's
citations numbered by first use (`research_core.delivery.numbering`), each linking to its
source, and a revision's note naming its sources by those numbers. Built in one place, so a
canvas or a Markdown file numbers every source as the thread does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from contract import markdown
from research_core.delivery import numbering
from research_core.delivery.numbering import Numbered
from research_core.loop.memory.evidence import Evidence
from research_core.loop.report.reporter import FLAGGED_HEADING, split_rendered
from research_core.wording import ENGLISH_WORDS, Words

Describe = Callable[[str], "tuple[str, str] | None"]  # source id -> (url, title), if known


def describe_evidence(evidence: list[Evidence]) -> Describe:
    """Source id -> (url, title) from a run's evidence: a web page's title, or for an MCP
    server's resource (no web page) its title and server."""
    def describe(source_id: str) -> tuple[str, str] | None:
        found = next((e for e in evidence if e.source_id == source_id and e.url), None)
        if found is None:
            return None
        web = found.url.startswith(("http://", "https://"))
        label = found.title if web or not found.publisher else f"{found.title}, {found.publisher}"
        return found.url, label or found.publisher

    return describe


def numbered_text(text: str, sources: list[str],
                  describe: Describe | None = None) -> Numbered:
    """The message's text with its citations numbered by first use (`numbering`), without a
    report's own source list (its flagged claims kept, numbered alike)."""
    body, listed = split_rendered(text)
    if listed:
        _, heading, flagged = text.partition(FLAGGED_HEADING)
        body += heading + flagged
    return numbering.number(body, listed, _Known(sources, listed.values(), describe))


class _Known:
    """Whether a bracket's item is a source the message may cite by id."""

    def __init__(self, sources: Iterable[str], listed: Iterable[str],
                 describe: Describe | None) -> None:
        self.ids = {*sources, *listed}
        self.describe = describe

    def __contains__(self, item: object) -> bool:
        return item in self.ids or bool(
            isinstance(item, str) and self.describe and self.describe(item) is not None)


def cite_url(source: str, describe: Describe | None) -> str:
    """The address a citation links to: the described page, or the id when it is one."""
    known = describe(source) if describe else None
    return known[0] if known is not None else source


def markdown_body(numbered: Numbered, describe: Describe | None = None) -> str:
    """The text as standard Markdown: escaped, each citation a link `[[n]](url)`."""
    return "".join(markdown.escape(p) if isinstance(p, str) else
                   markdown.link(cite_url(p.source_id, describe), f"[{p.number}]")
                   or markdown.escape(f"[{p.number}]") for p in numbered.pieces)


def readable(note: str, numbered: Numbered, describe: Describe | None = None,
             w: Words = ENGLISH_WORDS) -> str:
    """A note that names sources by id, each named as the reader knows it: its citation
    number where the message cites it, else its title."""
    for source in sorted(_ids_in(note, numbered, describe), key=len, reverse=True):
        cited = numbered.sources.index(source) + 1 if source in numbered.sources else 0
        known = describe(source) if describe else None
        note = note.replace(source, f"[{cited}]" if cited else
                            (known[1] if known and known[1] else w("another source")))
    return note


def _ids_in(note: str, numbered: Numbered, describe: Describe | None) -> set[str]:
    words = set(re.split(r"[\s,;:]+", note))
    return {w for w in words if w in numbered.sources or (describe and describe(w))}
