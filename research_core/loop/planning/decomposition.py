"""The root's split when the planner's is unusable (issue 25, issue 42 item 2): read off the
question's clauses *and* off the evidence. The passages retrieved for the question decide
which clauses are asked of them (a clause no passage is close to — a greeting, a deadline,
"numbers and sources please" — is a request to the bot, not a sub-question) and what else to
research: the facets the evidence clusters into, each named by its most central passage's
title. The same reading of the evidence refills the tree before a run ends early
(`research_core.loop.review.gaps`).
"""

from __future__ import annotations

import datetime as dt

from research_core.loop.memory.evidence import combined_score, credibility, recency
from research_core.loop.planning import judgement, subquestions
from research_core.loop.planning.asked import known_names, names_any
from research_core.loop.planning.judgement import scaled
from research_core.models.schemas import SubQuestion
from research_core.protocols import SearchHit, Similarity
from research_core.search.clustering import average_link, medoid
from research_core.settings import EngineSettings
from research_core.text.asking import Asked
from research_core.text.clauses import Reading

TOPIC_CREDIBILITY = 0.6  # a source a facet is read off: news and better, no release or blog
SAME_TOPIC = 0.75  # two titles this close name one facet (either language: not scaled)
TITLE_CHARS = 140
KNOWN_BY = 2  # hits that must name a name of the question before it tells hits apart
KEPT_SHARE = 0.5  # a clause half as close to the sources as the closest one is asked of them
CLUSTERED = 12  # the best-scored hits whose clusters name facets


async def split(similarity: Similarity, asked: Asked, hits: list[SearchHit], limit: int,
                cfg: EngineSettings, as_of: dt.date) -> list[SubQuestion]:
    """Up to `limit` sub-questions: the question's clauses that ask something or that the
    retrieved passages speak to (each as written, before it is completed with the topic: a
    deadline completed with the topic would be close to them), then facets the passages
    cluster into; never the question alone."""
    reading = asked.reading
    texts = [f"{h.title}. {h.snippet}" for h in hits]
    spoken = await spoken_to(similarity, list(reading.clauses), texts, cfg)
    kept = tuple(c for c in reading.clauses if c in spoken or c in asked.asking)
    own = subquestions.compose(Reading(kept, reading.topic), asked)
    if len(own) < 2 and subquestions.is_part(reading.topic, asked):
        topic = subquestions.as_question(reading.topic)
        own = [topic, *(a for a in own if a != topic)]
    room = max(limit - len(own), 1 if hits else 0, 2 - len(own))
    about = await related(similarity, asked,
                          await facets_of(similarity, asked, hits, own, room, cfg, as_of), cfg)
    return subquestions.as_subquestions([*own[: limit - min(room, len(about))], *about], limit)


async def related(similarity: Similarity, asked: Asked, facets: list[str],
                  cfg: EngineSettings) -> list[str]:
    """The facets the plan would take (`judgement.vet_subquestions` holds every sub-question
    to the same test): one it would refuse takes no clause's place in the split."""
    if not facets:
        return []
    row = await judgement.relatedness(similarity, asked, facets)
    return [f for f, sim in zip(facets, row, strict=True)
            if sim >= scaled(cfg.related_similarity, asked.text, f)]


async def spoken_to(similarity: Similarity, clauses: list[str], texts: list[str],
                    cfg: EngineSettings) -> set[str]:
    """The clauses some retrieved text is close to: at least the off-goal scale, or half as
    close as the closest clause is; with no texts, all of them."""
    if not texts or not clauses:
        return set(clauses)
    rows = await similarity.matrix(clauses, texts)
    best = max(max(row) for row in rows)
    return {c for c, row in zip(clauses, rows, strict=True)
            if max(row) >= min(scaled(cfg.off_goal_similarity, c, texts[0]), best * KEPT_SHARE)}


async def facets_of(similarity: Similarity, asked: Asked, hits: list[SearchHit],
                    taken: list[str], most: int, cfg: EngineSettings, as_of: dt.date,
                    seen: list[SearchHit] | None = None) -> list[str]:
    """Up to `most` facets of the hits: the `CLUSTERED` hits from credible sources of the
    recency window that would be kept as evidence on their title alone (the evidence score
    of relevance, credibility and recency), clustered by the embedder into as many clusters
    as there are facets and sub-questions `taken`; each cluster, the best-supported first
    (its members' scores summed), is named by its medoid's title,
    unless that title is close to a sub-question already `taken` or a facet chosen; `seen`:
    all the hits of the run, which tell the question's names apart."""
    known = known_names(asked, (f"{h.title} {h.snippet}" for h in seen or hits), KNOWN_BY)
    credible = [h for h in hits if credibility(h.source_type) >= TOPIC_CREDIBILITY
                and recency(h.published, as_of, cfg) > 0
                and (not known or names_any(_text(h), known))]
    if not credible or most < 1:
        return []
    scored = await _scored(similarity, asked.text, credible, cfg, as_of)
    chosen: list[str] = []
    for title in await _cluster_names(similarity, scored, most + len(taken)):
        if len(chosen) >= most:
            break
        if not await _near_any(similarity, title, [*taken, *chosen]):
            chosen.append(title)
    return chosen


async def _scored(similarity: Similarity, question: str, hits: list[SearchHit],
                  cfg: EngineSettings, as_of: dt.date) -> list[tuple[SearchHit, float]]:
    """The hits that pass the evidence threshold on their title, one per title, best
    first, at most `CLUSTERED`."""
    by_title = {_title(h): h for h in hits}
    cosines = (await similarity.matrix([question], list(by_title)))[0]
    scored = [(h, _score(c, question, h, cfg, as_of))
              for h, c in zip(by_title.values(), cosines, strict=True)]
    kept = [(h, s) for h, s in scored if s >= cfg.evidence_threshold]
    return sorted(kept, key=lambda hs: -hs[1])[:CLUSTERED]


async def _cluster_names(similarity: Similarity,
                         scored: list[tuple[SearchHit, float]], k: int) -> list[str]:
    """The titles of the clusters' medoids, the cluster with the most score first."""
    if not scored:
        return []
    texts = [f"{h.title}. {h.snippet}" for h, _ in scored]
    sims = await similarity.matrix(texts, texts)
    clusters = average_link(sims, k, SAME_TOPIC)
    weight = [sum(scored[i][1] for i in members) for members in clusters]
    order = sorted(range(len(clusters)), key=lambda c: -weight[c])
    return [_title(scored[medoid(sims, clusters[c])][0]) for c in order]


def _score(cosine: float, question: str, hit: SearchHit, cfg: EngineSettings,
           as_of: dt.date) -> float:
    full = scaled(cfg.relevance_full_similarity, question, hit.title)
    relevance = min(1.0, max(0.0, cosine) / full)
    return combined_score(relevance, credibility(hit.source_type),
                          recency(hit.published, as_of, cfg), cfg)


async def _near_any(similarity: Similarity, text: str, others: list[str]) -> bool:
    if not others:
        return False
    row = (await similarity.matrix([text], others))[0]
    return max(row) >= SAME_TOPIC


def _text(hit: SearchHit) -> str:
    return f"{hit.title} {hit.snippet}".casefold()


def retrieved_hits(retrieved: dict[str, list[str]]) -> dict[str, SearchHit]:
    """The hits a run retrieved, as it recorded them (title, source type, publish date,
    snippet), by source id."""
    return {source_id: _recorded(source_id, seen) for source_id, seen in retrieved.items()}


def _recorded(source_id: str, seen: list[str]) -> SearchHit:
    title, kind, published, snippet = [*seen, "", "", "", ""][:4]
    date = dt.date.fromisoformat(published) if published else None
    return SearchHit(source_id, title, snippet, "", date, kind)


def _title(hit: SearchHit) -> str:
    return " ".join(hit.title.split())[:TITLE_CHARS].rstrip(" .。")
