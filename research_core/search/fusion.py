"""Hybrid retrieval for the local corpus: the lexical ranking (FTS5's BM25 over jieba words)
and a dense one (the embedder's similarity of the query to each document's gist: its title
and opening) fused by reciprocal rank fusion (Cormack, Clarke & Büttcher, "Reciprocal Rank
Fusion outperforms Condorcet and individual Rank Learning Methods", SIGIR 2009; k = 60). A
document's dense score is that of its passage closest to the query (max-passage scoring,
Dai & Callan, "Deeper Text Understanding for IR with Contextual Neural Language Modeling",
SIGIR 2019): the fact a question needs is often deep in a report, not in its opening.

The dense ranking carries a question across languages: an English query finds a Chinese
report that shares none of its words, which BM25 alone never returns (issue 42)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from research_core.protocols import SearchRequest, Similarity

RRF_K = 60  # the paper's constant: a rank's weight falls slowly, no list dominates
PASSAGE_CHARS = 400  # of a passage (a paragraph, after its document's title) that is embedded
PASSAGES_MOST = 16  # of a document: its first paragraphs (embeddings are cached per text)
DENSE_DEPTH = 20  # documents of the dense ranking that take part in the fusion
DENSE_FLOOR = 0.5  # of the best document's similarity: below it a document is no dense match


def rrf(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> list[str]:
    """The ids of all rankings ordered by the sum of 1 / (k + rank) over the rankings that
    hold them (rank from 1); ties keep the order of first appearance."""
    score: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, 1):
            score[item] = score.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(score, key=lambda item: -score[item])


@dataclass(frozen=True)
class Gist:
    """What the dense ranking compares a query with: one document's passages, each with the
    document's title."""

    source_id: str
    passages: tuple[str, ...]
    published: dt.date
    lang: str

    def admits(self, request: SearchRequest) -> bool:
        """Within the request's time range and language, as the lexical search filters."""
        since, until = request.time_range.since, request.time_range.until
        lang = (request.lang or "").strip().lower()
        return (since is None or self.published >= since) and \
            (until is None or self.published <= until) and (not lang or self.lang == lang)


async def dense_ranking(similarity: Similarity, request: SearchRequest,
                        gists: Sequence[Gist]) -> list[str]:
    """The admitted documents' ids, most similar to the query first (DENSE_DEPTH at most),
    none below DENSE_FLOOR of the best: in a small corpus every document is in the ranking,
    and a document far from the query is no match however few others there are."""
    admitted = [g for g in gists if g.admits(request) and g.passages]
    if not admitted or not request.query.strip():
        return []
    [flat] = await similarity.matrix([request.query], [p for g in admitted for p in g.passages])
    scores, at = [], 0
    for g in admitted:
        scores.append(max(flat[at:at + len(g.passages)]))
        at += len(g.passages)
    floor = DENSE_FLOOR * max(scores)
    order = sorted((i for i in range(len(admitted)) if scores[i] >= floor),
                   key=lambda i: -scores[i])
    return [admitted[i].source_id for i in order[:DENSE_DEPTH]]
