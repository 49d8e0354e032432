"""Whole sentences of the kept evidence: the material of an extractive answer. A fragment (a
snippet cut short, marked "…"), a heading or a sentence too short to say anything is left out,
and a sentence that several items repeat is kept once, from its best-scored source."""

from __future__ import annotations

import re
from dataclasses import dataclass

from research_core.loop.evidence import Evidence
from research_core.loop.sentences import sentences
from research_core.search.snippets import is_cut
from research_core.terms import CJK, terms

_CITATION = re.compile(r"\s*\[[^\]\n]{1,80}\]")
_MIN_TERMS = 4
_NUMBERED_HEADING = re.compile(r"^\s*(?:[一二三四五六七八九十]+|\d{1,2})[、.]\s*\S")
_SENTENCE_END = re.compile(r"[。！？!?；;]|\.\s*(?:\[\d+\])?\s*$")
_MIN_CJK = 10


@dataclass(frozen=True)
class Line:
    """One whole sentence of one evidence item."""

    text: str
    evidence: Evidence

    @property
    def source_id(self) -> str:
        return self.evidence.source_id

    @property
    def key(self) -> str:
        return key(self.text)


def key(text: str) -> str:
    """What makes two sentences the same: their words, without citations, case or spacing."""
    return " ".join(re.sub(r"[^\w%]+", " ", _CITATION.sub("", text).casefold()).split())


def lines_of(items: list[Evidence]) -> list[Line]:
    """The whole sentences of the items, best-scored item first, each sentence once."""
    seen: set[str] = set()
    out: list[Line] = []
    for item in sorted(items, key=lambda e: -e.score):
        for text in sentences(item.text, headings=False, clauses=False):
            k = key(text)
            if k and k not in seen and whole(text):
                seen.add(k)
                out.append(Line(text, item))
    return out


def whole(text: str) -> bool:
    """A sentence that can stand in an answer: not a fragment, not a bare heading."""
    if is_cut(text) or text.rstrip().endswith((":", "：")) or text.count("|") >= 2:
        return False  # a fragment, a lead-in, a table row
    if _NUMBERED_HEADING.match(text) and not _SENTENCE_END.search(text):
        return False  # "三、铜价不是铜箔盈利的核心变量": a section heading
    if len(CJK.findall(text)) >= _MIN_CJK:
        return True
    return len(terms(text)) >= _MIN_TERMS
