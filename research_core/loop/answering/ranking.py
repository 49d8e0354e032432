"""How well each sentence of the kept evidence answers a question, by statistics only.

Two rankers read every sentence in its context (the page heading it stands under and its
source's title): Okapi BM25 over words (`research_core.search.bm25`; IDF from the sentences
themselves; the sentence's own words weigh twice its title's and heading's, as BM25F's field
weights) and the embedder's cosine similarity. BM25 is taken as a share of the best score, the
cosines min–max scaled (they lie close together), and the two are added (CombSUM, Fox & Shaw,
"Combination of Multiple Searches", TREC-2 1994), once for each query: the question and, for
a section, its sub-question, weighed by `weights`. The fused relevance is then multiplied by
the source's priors, its credibility and its recency (the seed's), by a feature weight for a
sentence that states a measure (a figure with a unit, a percentage): an answer to a research
question gives figures; and, for the lead, by its support among the other sources.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from research_core.loop.memory.pool import Line
from research_core.protocols import Similarity
from research_core.search import bm25
from research_core.text.figures import states_measure, telling

MEASURE_WEIGHT = 1.25  # a sentence that states a measure
SUPPORT_WEIGHT = 0.25  # per other source that states one of a lead sentence's figures
SUPPORT_MOST = 2  # other sources that count
SENTENCE_WEIGHT = 2  # of a sentence's own words against its title's and heading's (BM25F)
RECENCY_SHARE = 0.25  # of the prior that recency moves (a stale source keeps 0.75)


async def relevance(similarity: Similarity, queries: Sequence[str], lines: Sequence[Line],
                    weights: Sequence[float] | None = None,
                    supported: bool = False) -> list[float]:
    """Each line's relevance to the queries times its priors, 0..1 before the feature weight
    (`supported`: times its support too, `support`)."""
    if not lines or not queries:
        return [0.0] * len(lines)
    contexts = [in_context(ln) for ln in lines]
    documents = [_fields(ln) for ln in lines]
    dense = await similarity.matrix(list(queries), contexts)
    weights = list(weights) if weights else [1.0] * len(queries)
    fused = [0.0] * len(lines)
    for query, row, weight in zip(queries, dense, weights, strict=True):
        lexical = bm25.scores(Counter(bm25.words(query)), documents)
        for i, (lex, sim) in enumerate(zip(_scaled(lexical), _spread(row), strict=True)):
            fused[i] += weight * (lex + sim) / 2
    total = sum(weights) or 1.0
    backing = support(lines) if supported else [0] * len(lines)
    return [f / total * prior(ln) * (1 + SUPPORT_WEIGHT * min(SUPPORT_MOST, n))
            for f, ln, n in zip(fused, lines, backing, strict=True)]


def support(lines: Sequence[Line]) -> list[int]:
    """For each line, how many other sources state one of its telling figures: a figure that
    several sources report is the one the answer should lead with (a sentence's centrality
    among the others, as in LexRank, Erkan & Radev 2004, here by the figures they share)."""
    sources: dict[tuple[str, bool], set[str]] = {}
    for line in lines:
        for figure in telling(line.text):
            sources.setdefault(figure, set()).add(line.source_id)
    return [len(set().union(*(sources[f] for f in telling(ln.text))) - {ln.source_id})
            if telling(ln.text) else 0 for ln in lines]


def prior(line: Line) -> float:
    """The source's credibility, a little less for a stale one, more for a stated measure."""
    evidence = line.evidence
    recent = 1 - RECENCY_SHARE + RECENCY_SHARE * max(0.0, min(1.0, evidence.recency))
    feature = MEASURE_WEIGHT if states_measure(line.text) else 1.0
    return evidence.credibility * recent * feature


def in_context(line: Line) -> str:
    """A sentence with its source's title and the page heading it stands under, which often
    name what the sentence leaves out."""
    return " ".join(p for p in (line.evidence.title, line.heading, line.text) if p)


def _fields(line: Line) -> Counter[str]:
    """The sentence's words counted SENTENCE_WEIGHT times, its title's and heading's once (the
    field weights of BM25F, Robertson, Zaragoza & Taylor, CIKM 2004): the title tells what a
    sentence is about, but every sentence of a page shares it, and a short sentence should
    not score on its title alone."""
    words = Counter(bm25.words(line.text))
    for word in words:
        words[word] *= SENTENCE_WEIGHT
    words.update(bm25.words(f"{line.evidence.title} {line.heading}"))
    return words


def _scaled(values: Sequence[float]) -> list[float]:
    """Each value as a share of the largest (0 where none is above 0): rows of one table that
    score nearly alike stay nearly alike, where min–max scaling would set them 0 and 1."""
    high = max(values, default=0.0)
    return [max(0.0, v) / high if high > 0 else 0.0 for v in values]


def _spread(values: Sequence[float]) -> list[float]:
    """Min–max scaled to 0..1: the embedder's cosines of one field's sentences lie close
    together, and only their spread tells them apart (all 0 where they are all alike)."""
    low, high = min(values, default=0.0), max(values, default=0.0)
    return [(v - low) / (high - low) if high > low else 0.0 for v in values]
