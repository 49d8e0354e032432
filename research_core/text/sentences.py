"""Splitting a report into sentences, in English and Chinese.

Lines are split first (a list item or a heading is its own sentence, its marker removed),
then each line after a sentence end: ". ", "! ", "? ", "; " in English (a decimal point is no
end), and after 。！？； in Chinese. A fragment that holds only citations ("[2]" after the
full stop, "[2] Next sentence") belongs to the sentence before it.

Also the sentence grammar that other code reads a text with: where a sentence around a snippet
starts and ends on its page (`sentence_start`, `sentence_end`), a paragraph's emphasised title
(`lead_in`), whether a line ends as a sentence or is a numbered heading, and what makes two
sentences the same (`sentence_key`).
"""

from __future__ import annotations

import re
from functools import lru_cache

from research_core.text.terms import TEXTS_CACHED

_HEADING = re.compile(r"^\s*(?:#{1,6}\s.*|\*{1,2}[^*\n]+\*{1,2}\s*[:：]?)\s*$")
_LINE_MARKER = re.compile(r"^\s*(?:#{1,6}\s+|>\s*|[-*•◦▪]\s+|\d{1,2}[.)]\s+)+")
# A full stop after an abbreviation ("Oct. 30", "Mr. Li", "e.g. LFP") ends no sentence.
_NOT_AFTER = "".join(
    rf"(?<!\b{a}\.)" for a in ("Jan", "Feb", "Mar", "Apr", "Jun", "Jul", "Aug", "Sep", "Sept",
                               "Oct", "Nov", "Dec", "Mr", "Ms", "Mrs", "Dr", "No", "vs", "St",
                               "approx", r"e\.g", r"i\.e"))
_END = re.compile(rf"(?<=[.!?;]){_NOT_AFTER}\s+(?=\S)|(?<=[。！？；])")
_FULL_STOP = re.compile(rf"(?<=[.!?]){_NOT_AFTER}\s+(?=\S)|(?<=[。！？])")
_LEADING_CITATIONS = re.compile(r"^(?:\[\d+(?:\s*,\s*\d+)*\][\s.。;；]*)+")
# A paragraph's emphasised title ("1. *Fibre mix.* …"), not a subject ("**北岭牧业：** …").
_LEAD_IN = re.compile(r"^\s*(?:\d{1,2}[.)]\s*)?(\*{1,2})([^*\n]{1,80}[.。])\1\s*(?=\S)")
# A sentence's closing mark with the quotes and brackets closed after it.
_CLOSING = re.compile(r"[。！？][”’」』)）]*|[.!?][\"'”’)\]]*(?=\s|$)")
_CITATION = re.compile(r"\s*\[[^\]\n]{1,80}\]")
_NOT_WORD = re.compile(r"[^\w%]+")
_NUMBERED_HEADING = re.compile(r"^\s*(?:[一二三四五六七八九十]+|\d{1,2})[、.]\s*\S")
_SENTENCE_END = re.compile(r"[。！？!?；;]|\.\s*(?:\[\d+\])?\s*$")


def is_heading(line: str) -> bool:
    """A heading line: "# …", or a line wholly in bold ("**Why the two wools diverged**")."""
    return _HEADING.match(line) is not None


def sentences(text: str, headings: bool = True, clauses: bool = True) -> list[str]:
    """The sentences of `text`, stripped, in order; empty ones dropped. With `headings`
    False, heading lines ("# …", a line in bold) are left out; with `clauses` False, a
    semicolon does not end a sentence (what an extractive answer quotes is whole)."""
    out: list[str] = []
    end = _END if clauses else _FULL_STOP
    for line in text.splitlines():
        if not headings and _HEADING.match(line):
            continue
        body = _LINE_MARKER.sub("", line).strip()
        for part in (p.strip() for p in end.split(body)):
            lead = _LEADING_CITATIONS.match(part) if out else None
            if lead:
                out[-1] = f"{out[-1]} {lead.group(0).strip()}"
                part = part[lead.end():].strip()
            if part:
                out.append(part)
    return out


def lead_in(paragraph: str) -> tuple[str, str]:
    """A paragraph's emphasised title and the rest of it ("1. *Fibre mix.* Finer wools …":
    "Fibre mix.", "Finer wools …"); the title is "" and the rest the whole paragraph where it
    opens with none."""
    lead = _LEAD_IN.match(paragraph)
    return (lead.group(2), paragraph[lead.end():]) if lead else ("", paragraph)


def sentence_end(text: str, start: int) -> int:
    """Where the first sentence end at or after `start` finishes (its closing quotes and
    brackets included); the end of the text where none follows."""
    match = _CLOSING.search(text, start)
    return match.end() if match else len(text)


def sentence_start(text: str, at: int) -> int:
    """Where the sentence that holds position `at` starts: just after the last sentence end
    before it (0 where none is)."""
    start = 0
    for match in _CLOSING.finditer(text, 0, at + 1):
        start = match.end() if match.end() <= at else start
    return start


def ends_sentence(line: str) -> bool:
    """Whether the line holds a sentence end: 。！？!?；; anywhere, or a full stop at its end
    (a citation after it allowed: "… rose. [2]")."""
    return _SENTENCE_END.search(line) is not None


def is_numbered_heading(line: str) -> bool:
    """Whether the line opens as a numbered heading does ("三、羊毛价格…", "2. Prices")."""
    return _NUMBERED_HEADING.match(line) is not None


@lru_cache(maxsize=TEXTS_CACHED)
def sentence_key(text: str) -> str:
    """What makes two sentences the same: their words, without citations, case or spacing.
    Once per text: the picker compares every candidate with every chosen sentence."""
    return " ".join(_NOT_WORD.sub(" ", _CITATION.sub("", text).casefold()).split())
