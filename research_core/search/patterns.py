"""Query patterns that runs learn from (docs/design.md §1, the search replay; docs/learning.md).

Every query sent is reduced to its pattern: what the query makes of the sub-question it
searches for. Its normalised shape says how much of the question it keeps (all, most, some or
none of its terms) and the kinds of words it adds (W a word, Y a year, N another number, Q a
quoted phrase); its terms are the words it adds (years and numbers as Y and N). So "heat pump
sales 2026 forum discussion" for "How did heat pump sales develop in 2026?" is the pattern
`most+W {discussion, forum}`, the same for any question it is used on. Per search backend
(whose name also names the corpus) the store keeps each pattern's record: how often it was
sent, how many results it returned and how many of those the run's report cited. Before a
batch is sent, each proposed query is compared with the records: one that resembles a pattern
that was sent at least MIN_SENT times and whose results were cited less than WASTE_RATE of
the time (nothing cited, at worst) is rewritten without the words
that only wasted patterns add (or dropped when that leaves nothing new), and the queries
resembling patterns that paid off go first. Each decision is logged with the pattern and its
record.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from research_core.text.terms import ask_apart
from research_core.text.terms import terms as content_terms

MIN_SENT = 2  # a pattern is "repeatedly wasted" after this many sends …
WASTE_RATE = 0.2  # … when fewer than this share of its results were ever cited
RESEMBLES = 0.5  # Jaccard similarity of terms from which a query resembles a pattern
_YEAR = re.compile(r"(19|20)\d\d")
_NUMBER = re.compile(r"\d[\d.,%]*")
_TOKEN = re.compile(r'"[^"]*"|\S+')


@dataclass(frozen=True)
class Pattern:
    shape: str
    terms: frozenset[str]

    @property
    def key(self) -> str:
        raw = self.shape + "|" + " ".join(sorted(self.terms))
        return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]

    def label(self) -> str:
        return f"[{self.shape}] {' '.join(sorted(self.terms))}"[:120]


@dataclass(frozen=True)
class PatternRecord:
    pattern: Pattern
    sent: int
    results: int
    cited: int

    @property
    def citation_rate(self) -> float:
        return self.cited / self.results if self.results else 0.0

    @property
    def wasted(self) -> bool:
        return self.sent >= MIN_SENT and self.citation_rate < WASTE_RATE

    def describe(self) -> str:
        return (f"{self.pattern.label()} (sent {self.sent}, {self.results} results, "
                f"{self.cited} cited)")


@dataclass(frozen=True)
class Outcome:
    """One query of a finished run: what it returned and how much of it the report cited."""

    query: str
    question: str  # the sub-question it searched for
    results: int
    cited: int


class QueryLearning(Protocol):
    """Where the records live (the store, for one search backend)."""

    async def records(self) -> list[PatternRecord]: ...

    async def record(self, outcomes: list[Outcome]) -> None: ...


def _kind(token: str) -> str:
    if token.startswith('"'):
        return "Q"
    if _YEAR.fullmatch(token.strip(".,;:?!")):
        return "Y"
    if _NUMBER.fullmatch(token.strip(".,;:?!")):
        return "N"
    return "W"


def _term(word: str) -> str:
    if _YEAR.fullmatch(word):
        return "Y"
    return "N" if _NUMBER.fullmatch(word) else word


def _coverage(kept: int, total: int) -> str:
    if total == 0 or kept == total:
        return "all"
    if kept == 0:
        return "none"
    return "most" if kept * 2 >= total else "some"


def pattern_of(query: str, question: str) -> Pattern:
    """The pattern of `query` sent for the sub-question `question`."""
    asked = {_term(w) for w in content_terms(question)}
    added_tokens = [t for t in _TOKEN.findall(query)
                    if not {_term(w) for w in content_terms(t)} <= asked]
    words = {_term(w) for w in content_terms(query)}
    kinds = "".join(sorted({_kind(t) for t in added_tokens}))
    shape = _coverage(len(words & asked), len(asked)) + ("+" + kinds if kinds else "")
    return Pattern(shape, frozenset(words - asked))


def similarity(a: Pattern, b: Pattern) -> float:
    """Jaccard similarity of the added terms; two patterns that add nothing are alike when
    they keep as much of their questions."""
    if not a.terms and not b.terms:
        return 1.0 if a.shape == b.shape else 0.5
    return len(a.terms & b.terms) / len(a.terms | b.terms)


def nearest(pattern: Pattern, records: list[PatternRecord]) -> PatternRecord | None:
    """The record of the patterns the query resembles most (None below RESEMBLES): those
    equally close (the same added words kept more or less of their questions) are counted
    together, under the closest pattern of the same shape when there is one."""
    scored = [(similarity(pattern, r.pattern), r) for r in records]
    best = max((sc for sc, _ in scored), default=0.0)
    if best < RESEMBLES:
        return None
    closest = [r for sc, r in scored if sc == best]
    named = next((r.pattern for r in closest if r.pattern.shape == pattern.shape),
                 closest[0].pattern)
    return PatternRecord(named, sum(r.sent for r in closest), sum(r.results for r in closest),
                         sum(r.cited for r in closest))


Emit = Callable[[str, str], object]


def vet(queries: list[str], question: str, records: list[PatternRecord],
        emit: Emit) -> list[str]:
    """The queries to send for `question`: wasted ones rewritten (when the rewrite still asks
    something no other query asks) or dropped, paying ones first. At least one query is
    always kept, so a sub-question is never left unsearched."""
    paying = {t for r in records if r.cited and not r.wasted for t in r.pattern.terms}
    kept: list[tuple[float, str]] = []
    for query in queries:
        record = nearest(pattern_of(query, question), records)
        if record is None:
            kept.append((0.0, query))
            continue
        if not record.wasted:
            kept.append((record.citation_rate, query))
            continue
        rewritten = _rewrite(query, record.pattern.terms - paying)
        others = [q for q in queries if q != query] + [q for _, q in kept]
        if rewritten and all(ask_apart(rewritten, q) for q in others):
            emit("learned", f"rewrote {query!r} → {rewritten!r}: resembles wasted pattern "
                 f"{record.describe()}")
            kept.append((0.0, rewritten))
        else:
            emit("learned", f"dropped {query!r}: resembles wasted pattern {record.describe()}")
    if not kept and queries:
        kept.append((0.0, queries[0]))
        emit("learned", f"kept {queries[0]!r}: every proposed query resembled a wasted pattern")
    ordered = [q for _, q in sorted(kept, key=lambda k: -k[0])]
    if ordered != [q for _, q in kept]:
        emit("learned", f"preferred queries like patterns that paid off: {ordered}")
    return ordered


def _rewrite(query: str, waste_terms: frozenset[str]) -> str:
    """The query without the words only wasted patterns have ('' when nothing is left that
    still says something)."""
    if not waste_terms:
        return ""
    words = [w for w in query.split()
             if not (set(_term(t) for t in content_terms(w)) & waste_terms)]
    rewritten = " ".join(words).strip()
    return rewritten if len(content_terms(rewritten)) >= 2 else ""


def outcomes(queries: list[tuple[str, str, list[str], list[str]]],
             cited: set[str]) -> list[Outcome]:
    """`queries`: (text, sub-question, result source ids, kept evidence source ids) of a
    finished run."""
    return [Outcome(text, question, len(results), sum(s in cited for s in kept))
            for text, question, results, kept in queries]
