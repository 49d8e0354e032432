"""Whole sentences of the kept evidence: the material of an extractive answer, and what the
conflicts of memory, the progress log and the plan are found among. A fragment (a
snippet cut short, marked "…"), a question, a heading or a sentence too short to say anything
is left out, and a sentence that several items repeat is kept once, from its best-scored
source."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain

from research_core.loop.memory.evidence import Evidence
from research_core.search.snippets import is_cut
from research_core.text.figures import measured
from research_core.text.periods import periods_in
from research_core.text.sentences import sentences
from research_core.text.terms import CJK, terms

_CITATION = re.compile(r"\s*\[[^\]\n]{1,80}\]")
_MIN_TERMS = 4
_NUMBERED_HEADING = re.compile(r"^\s*(?:[一二三四五六七八九十]+|\d{1,2})[、.]\s*\S")
_SENTENCE_END = re.compile(r"[。！？!?；;]|\.\s*(?:\[\d+\])?\s*$")
_MIN_CJK = 10
LIST_FIGURES = 2  # measured figures of a listed line
_ZH_LABEL = re.compile(r"^([\u4e00-\u9fffA-Za-z0-9μ]{2,12}?)(?:（[^）]{1,24}）)?[：:]")
_EN_LABEL = re.compile(r"^([A-Z][\w\-/ ]{1,40}?)(?: \([^)]{1,30}\))?:\s")
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
    return " ".join(re.sub(r"[^\w%]+", " ", _CITATION.sub("", text).casefold()).split())


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
    if not _SENTENCE_END.search(text) and (_NUMBERED_HEADING.match(text)
                                           or len(text) <= UNENDED_MOST):
        return False  # "三、羊毛价格不是牧场盈利的关键", "某协会 2026年10月31日": no sentence
    if len(CJK.findall(text)) >= _MIN_CJK:
        return True
    return len(terms(text)) >= _MIN_TERMS


def label(text: str) -> str:
    """The label a listed line starts with ("细羊毛" of "细羊毛（19微米）：5.62万元/吨，同比
    +6.1%"), or "": a listed line states two figures with a unit or a percent sign at least (a
    table's row does; a paragraph that opens "羊毛脂：" and mentions one does not list)."""
    match = _ZH_LABEL.match(text) or _EN_LABEL.match(text)
    name = match.group(1).strip() if match and measured(text, LIST_FIGURES) else ""
    return "" if periods_in(name) or name.isdigit() else name  # "Q3 2026：" is no item


def same_item(a: str, b: str) -> bool:
    """Whether two labels name one item: one is the other with a qualifier before it
    ("澳洲美利奴羊毛") or a specification after it ("羊毛条MX450"); "羊毛脂" is not
    "羊毛"."""
    short, long = sorted((a.casefold(), b.casefold()), key=len)
    if not short:
        return False
    if not CJK.search(long):  # "copper" is not "copper foil"; "total" not "subtotal"
        return long == short
    return long.endswith(short) or (
        long.startswith(short) and not CJK.match(long[len(short):]))
