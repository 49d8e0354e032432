"""The floor every answer must beat: the plain BM25 paragraph quoter of
`../shared/tools/bm25_quote.py`, in the project (issue 42).

Every document of a corpus is split into paragraphs (blank lines; 40 characters at least);
paragraphs are ranked against the question with Okapi BM25 (Robertson & Zaragoza, "The
Probabilistic Relevance Framework: BM25 and Beyond", 2009; k1 = 1.2, b = 0.75, over the
document's title and the paragraph, jieba words for Chinese), weighed by source type, and the
best are quoted with their document ids (at most two a document, near-duplicates skipped) until
the reading budget is spent. No model, no late documents, no research loop. `redsearch eval`
grades it beside every run, as the shared script grades it, on the whole corpus.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from research_core.search.bm25 import scores, words
from research_core.search.corpus import CorpusDocument

WEIGHT = {"official_statistics": 1.0, "exchange_data": 1.0, "company_filing": 0.95,
          "research_report": 0.95, "industry_association": 0.85, "news": 0.8,
          "press_release": 0.6, "blog": 0.4, "forum": 0.3}
OTHER_WEIGHT = 0.7
MIN_PARAGRAPH = 40
PER_DOCUMENT = 2
SAME_OPENING = 60  # paragraphs that open with the same characters are one paragraph
_FRONT = re.compile(r"\n\s*\n")


@dataclass(frozen=True)
class Quote:
    source_id: str
    text: str


def quote(question: str, documents: Sequence[CorpusDocument], budget: int) -> list[Quote]:
    """The quoter's answer: the best paragraphs with their ids, within `budget` characters."""
    units = [(d, p, Counter(words(f"{d.title} {p}"))) for d in documents
             for p in _paragraphs(d.raw_body or d.body)]
    if not units:
        return []
    ranks = scores(Counter(words(question)), [c for _, _, c in units])
    ranked = sorted(((s * WEIGHT.get(d.source_type, OTHER_WEIGHT), i)
                     for i, (s, (d, _, _)) in enumerate(zip(ranks, units, strict=True))),
                    key=lambda t: (-t[0], t[1]))
    return _take([(units[i][0].source_id, units[i][1]) for _, i in ranked], budget)


def _paragraphs(body: str) -> list[str]:
    return [p.strip() for p in _FRONT.split(body) if len(p.strip()) >= MIN_PARAGRAPH]


def _take(ranked: list[tuple[str, str]], budget: int) -> list[Quote]:
    out: list[Quote] = []
    used, per = 0, Counter[str]()
    for source_id, text in ranked:
        if per[source_id] >= PER_DOCUMENT or any(text[:SAME_OPENING] == q.text[:SAME_OPENING]
                                                 for q in out):
            continue
        piece = len(text) + len(source_id) + 3
        if used + piece > budget:
            continue
        out.append(Quote(source_id, text))
        used, per[source_id] = used + piece + 2, per[source_id] + 1
    return out


def as_text(quotes: Sequence[Quote]) -> str:
    """The quotes as the reader reads them (ids as citations): paragraphs, blank lines apart."""
    return "\n\n".join(f"{q.text} [{q.source_id}]" for q in quotes)
