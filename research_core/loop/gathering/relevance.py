"""How relevant each hit is to a sub-question: the executor model's score, checked against the
embedder (`judgement.cross_check_relevance`: where they differ wildly the lower governs, and
the log says so); without a model, the embedder and term overlap together.

The fallback is not term overlap alone, which keeps a keyword-stuffed page about something
else and drops an on-topic paraphrase: relevance = embedder × (0.85 + 0.15 × √overlap). The
embedder decides (shared words never lift a hit above what the embedder finds); the question's
own words confirm it, so a paraphrase keeps 85% of the embedder's relevance and a hit that
also names what was asked keeps all of it. The embedder's relevance is the similarity on the
relevance scale, min(1, similarity / `relevance_full_similarity`), that threshold shrunk for a
Chinese pair as `judgement.scaled` shrinks every English-pair threshold (half of a Chinese
pair's similarity is bigram overlap, which scores a long chatty question's genuine hits low).
"""

from __future__ import annotations

import math

from research_core.loop.gathering import executor
from research_core.loop.planning import judgement
from research_core.models.gateway import Gateway
from research_core.models.schemas import HitScore, HitScores
from research_core.protocols import SearchHit, Similarity
from research_core.runlog import RunLog
from research_core.settings import EngineSettings
from research_core.text.terms import overlap

PARAPHRASE_SHARE = 0.85  # of the embedder's relevance, for a hit without the question's words


async def judge(gw: Gateway, similarity: Similarity, question: str, hits: list[SearchHit],
                cfg: EngineSettings, log: RunLog, topic: str = "") -> list[HitScore]:
    """One checked relevance score per hit, in order; without a model, a hit as relevant to
    the run's `topic` (what its question is about) as to the sub-question counts as that
    relevant: a sub-question's own wording ("X went up over the year") is narrower than what
    the run asks of the sources."""
    embedder = await embedder_relevance(similarity, question, hits, cfg)
    if topic and topic != question:
        wide = await embedder_relevance(similarity, topic, hits, cfg)
        embedder = [max(a, b) for a, b in zip(embedder, wide, strict=True)]
    scores = await executor.score_hits(gw, question, hits,
                                       lambda: blended_scores(question, hits, embedder))
    return await judgement.cross_check_relevance(similarity, question, hits, scores, cfg, log)


async def embedder_relevance(similarity: Similarity, question: str, hits: list[SearchHit],
                             cfg: EngineSettings) -> list[float]:
    texts = [hit_text(h) for h in hits]
    cosines = (await similarity.matrix([question], texts))[0]
    return [min(1.0, max(0.0, c) / judgement.scaled(cfg.relevance_full_similarity, question, t))
            for c, t in zip(cosines, texts, strict=True)]


def blended_scores(question: str, hits: list[SearchHit], embedder: list[float]) -> HitScores:
    return HitScores(scores=[
        HitScore(index=i, relevance=blend(emb, overlap(question, hit_text(h))),
                 reason=f"fallback: embedder {emb:.2f} with term overlap")
        for i, (h, emb) in enumerate(zip(hits, embedder, strict=True))
    ])


def blend(embedder: float, term_overlap: float) -> float:
    share = PARAPHRASE_SHARE + (1 - PARAPHRASE_SHARE) * math.sqrt(term_overlap)
    return round(min(1.0, embedder * share), 3)


def hit_text(hit: SearchHit) -> str:
    return f"{hit.title} {hit.snippet}"
