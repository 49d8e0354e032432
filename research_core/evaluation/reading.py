"""What a reader reads of an answer: its text in reading order, cut at the reading budget.

A `Cited` text carries each citation it makes as a mark: the offset where the citing text ends
(a `[3]` marker's closing bracket, a source id's place) and the source id it names. Cutting the
text at the budget keeps only the marks whose citing text lies wholly before the cut, so a
source cited only past the budget is not cited at all.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from research_core.loop.report.citing import CITATION

Mark = tuple[int, str]  # (offset where the citing text ends, the source id it names)
PART_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Cited:
    """A text and the citations in it, in reading order."""

    text: str
    marks: tuple[Mark, ...] = ()

    def cited_ids(self) -> frozenset[str]:
        return frozenset(source_id for _, source_id in self.marks)

    def cut(self, limit: int) -> Cited:
        """The first `limit` characters and the citations that end within them."""
        if len(self.text) <= limit:
            return self
        return Cited(self.text[:limit], tuple(m for m in self.marks if m[0] <= limit))


def join(parts: Sequence[Cited], separator: str = PART_SEPARATOR) -> Cited:
    """The parts one after another, as a reader reads them; marks move with their part."""
    marks: list[Mark] = []
    offset = 0
    for part in parts:
        marks += [(end + offset, source_id) for end, source_id in part.marks]
        offset += len(part.text) + len(separator)
    return Cited(separator.join(p.text for p in parts), tuple(marks))


def numbered(text: str, numbers: Mapping[int, str]) -> Cited:
    """A text whose `[n]` / `[n, m]` markers cite `numbers[n]` (unknown numbers cite nothing)."""
    marks = [(m.end(), numbers[n]) for m in CITATION.finditer(text)
             for n in (int(x) for x in m.group(1).split(",")) if n in numbers]
    return Cited(text, tuple(marks))


def without_ids(text: str, ids: re.Pattern[str] | None) -> Cited:
    """The text with every source id written in it replaced by a space, each one a mark where
    it stood (a source id is an attribution, not words of the answer)."""
    if ids is None:
        return Cited(text)
    pieces: list[str] = []
    marks: list[Mark] = []
    start = length = 0
    for match in ids.finditer(text):
        pieces += [text[start:match.start()], " "]
        length += match.start() - start + 1
        marks.append((length, match.group()))
        start = match.end()
    pieces.append(text[start:])
    return Cited("".join(pieces), tuple(marks))


def merged(first: Cited, second: Cited) -> Cited:
    """One text's marks of two kinds (same text), in order of their place."""
    return Cited(first.text, tuple(sorted(first.marks + second.marks)))
