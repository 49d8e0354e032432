"""Splitting a report into sentences, in English and Chinese.

Lines are split first (a list item or a heading is its own sentence, its marker removed),
then each line after a sentence end: ". ", "! ", "? ", "; " in English (a decimal point is no
end), and after 。！？； in Chinese. A fragment that holds only citations ("[2]" after the
full stop, "[2] Next sentence") belongs to the sentence before it.
"""

from __future__ import annotations

import re

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
