"""Hybrid retrieval for the local corpus: the lexical ranking (FTS5's BM25 over jieba words)
and a dense one (the embedder's similarity of the query to each document's gist: its title
and opening) fused by reciprocal rank fusion (Cormack, Clarke & Büttcher, "Reciprocal Rank
Fusion outperforms Condorcet and individual Rank Learning Methods", SIGIR 2009; k = 60).

The dense ranking carries a question across languages: an English query finds a Chinese
report that shares none of its words, which BM25 alone never returns (issue 42)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from research_core.protocols import SearchRequest, Similarity

RRF_K = 60  # the paper's constant: a rank's weight falls slowly, no list dominates
GIST_CHARS = 400  # of a document's opening, after its title, that stands for it
DENSE_DEPTH = 20  # documents of the dense ranking that take part in the fusion
DENSE_FLOOR = 0.7  # of the best document's similarity: below it a document is no dense match


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
    """What the dense ranking compares a query with: one document's title and opening."""

    source_id: str
    text: str
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
    admitted = [g for g in gists if g.admits(request)]
    if not admitted or not request.query.strip():
        return []
    [scores] = await similarity.matrix([request.query], [g.text for g in admitted])
    floor = DENSE_FLOOR * max(scores)
    order = sorted((i for i in range(len(admitted)) if scores[i] >= floor),
                   key=lambda i: -scores[i])
    return [admitted[i].source_id for i in order[:DENSE_DEPTH]]
