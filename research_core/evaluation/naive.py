"""The naive baseline: on the run's own retrieval, an answer made of figure-bearing sentences.

The sources the run kept, best evidence score first, are numbered from 1. Each source's page
(the corpus document's body; where there is none, the texts of its kept evidence) is split
into sentences and those with a digit are taken in page order, one from each source in turn
(round robin), each followed by its source's citation `[n]`, until the answer is as long as
the answer it is compared with; it is cut at exactly that length, so a citation the cut splits
does not count. It reads nothing the run did not find and decides nothing: what the builder
adds over it is the answer's choice and order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import zip_longest

from research_core.evaluation.reading import Cited, join
from research_core.loop.memory.evidence import Evidence

# A sentence ends at . ! ? followed by white space, at a CJK full stop, or at a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")
SEPARATOR = "\n"


@dataclass(frozen=True)
class Page:
    source_id: str
    text: str


def ranked_sources(kept: Iterable[Evidence]) -> list[str]:
    """Source ids of the kept evidence, by each source's best score (ties: first kept)."""
    ranked = sorted(kept, key=lambda e: -e.score)
    return list(dict.fromkeys(e.source_id for e in ranked))


def pages(kept: Sequence[Evidence], bodies: Mapping[str, str]) -> list[Page]:
    """The page of every kept source, in score order."""
    return [Page(sid, bodies.get(sid) or _evidence_text(kept, sid))
            for sid in ranked_sources(kept)]


def _evidence_text(kept: Sequence[Evidence], source_id: str) -> str:
    return SEPARATOR.join(e.text for e in kept if e.source_id == source_id)


def figure_sentences(text: str) -> list[str]:
    """The sentences of a text that contain a digit, in order."""
    pieces = (s.strip() for s in _SENTENCE_END.split(text))
    return [s for s in pieces if any(c.isdecimal() for c in s)]


def round_robin(columns: Sequence[Sequence[str]]) -> Iterator[tuple[int, str]]:
    """(column index, item): the first item of every column, then the second, …"""
    for row in zip_longest(*columns):
        yield from ((i, item) for i, item in enumerate(row) if item is not None)


def naive_answer(sources: Sequence[Page], length: int) -> Cited:
    """Figure sentences round robin, each cited `[n]`, cut at `length` characters."""
    lines: list[Cited] = []
    total = 0
    for index, sentence in round_robin([figure_sentences(p.text) for p in sources]):
        if total >= length:
            break
        lines.append(cited_line(sentence, index + 1, sources[index].source_id))
        total += len(lines[-1].text) + len(SEPARATOR)
    return join(lines, SEPARATOR).cut(length)


def cited_line(sentence: str, number: int, source_id: str) -> Cited:
    """The sentence and its citation; only the citation cites (a `[2]` on the page does not)."""
    line = f"{sentence} [{number}]"
    return Cited(line, ((len(line), source_id),))
