"""Whole sentences of the kept evidence: the material of an extractive answer, and what the
conflicts of memory, the progress log and the plan are found among. A fragment (a
snippet cut short, marked "…"), a question, a heading or a sentence too short to say anything
is left out, and a sentence that several items repeat is kept once, from its best-scored
source."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain

from research_core.loop.memory.evidence import Evidence
from research_core.search.snippets import is_cut
from research_core.text.sentences import (
    ends_sentence,
    is_numbered_heading,
    sentence_key,
    sentences,
)
from research_core.text.terms import CJK, terms

_MIN_TERMS = 4
_MIN_CJK = 10
UNENDED_MOST = 40  # a line this short without a sentence end: a heading or a signature


@dataclass(frozen=True)
class Line:
    """One whole sentence of one evidence item."""

    text: str
    evidence: Evidence
    heading: str = ""  # the page's heading above the sentence, where known
    opens: bool = False  # the first sentence of its paragraph on the page

    @property
    def source_id(self) -> str:
        return self.evidence.source_id

    @property
    def published(self) -> dt.date | None:
        return self.evidence.published

    @property
    def credibility(self) -> float:
        return self.evidence.credibility

    @property
    def publisher(self) -> str:
        return self.evidence.publisher

    @property
    def about(self) -> tuple[str, ...]:
        """What the sentence stands under: the heading above it, its page's title."""
        return self.heading, self.evidence.title

    @property
    def key(self) -> str:
        return key(self.text)


def key(text: str) -> str:
    """What makes two sentences the same: their words, without citations, case or spacing."""
    return sentence_key(text)


def lines_of(items: list[Evidence], pages: Iterable[Line] = ()) -> list[Line]:
    """The whole sentences of the items, best-scored item first, then those of their `pages`
    (`completion.page_lines`) the items do not hold, each sentence once."""
    pages = list(pages)
    placed = {line.key: line for line in pages}
    own = (Line(text, item, *_place(placed.get(key(text))))
           for item in sorted(items, key=lambda e: -e.score)
           for text in sentences(item.text, headings=False, clauses=False))
    seen: set[str] = set()
    out: list[Line] = []
    for line in chain(own, pages):
        k = line.key
        if k and k not in seen and whole(line.text):
            seen.add(k)
            out.append(line)
    return out


def _place(line: Line | None) -> tuple[str, bool]:
    return (line.heading, line.opens) if line else ("", False)


def quoted(lines: Iterable[Line], text: str) -> None:
    """Each line `text` quotes becomes part of its evidence's text where it came from the page
    (so that the claim check and later steps see what the answer quotes)."""
    for line in lines:
        if line.text in text and line.text not in line.evidence.text:
            line.evidence.text = f"{line.evidence.text}\n{line.text}".strip()


def whole(text: str) -> bool:
    """A sentence that can stand in an answer: not a fragment, not a bare heading."""
    if is_cut(text) or text.rstrip().endswith((":", "：", "?", "？")) or text.count("|") >= 2:
        return False  # a fragment, a lead-in, a question, a table row
    if not ends_sentence(text) and (is_numbered_heading(text) or len(text) <= UNENDED_MOST):
        return False  # "三、羊毛价格不是牧场盈利的关键", "某协会 2026年10月31日": no sentence
    if len(CJK.findall(text)) >= _MIN_CJK:
        return True
    return len(terms(text)) >= _MIN_TERMS

