"""The root's split when the planner's is unusable (issue 25): read off the question's clauses
*and* off the evidence. The sources retrieved for the question decide both which clauses are
asked of them (a clause no source speaks to — a greeting, a deadline, "numbers and sources
please" — is a request to the bot, not a sub-question) and what else to research: the titles
of the most relevant credible sources, each one a facet the sources themselves are about.
The same reading of the evidence refills the tree before a run ends early
(`research_core.loop.review.gaps`).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections import Counter
from dataclasses import replace

from research_core.loop.memory.evidence import combined_score, credibility, recency
from research_core.loop.planning import judgement, subquestions
from research_core.loop.planning.asked import known_names, names_any
from research_core.loop.planning.judgement import scaled
from research_core.models.schemas import SubQuestion
from research_core.protocols import SearchHit, Similarity
from research_core.settings import EngineSettings
from research_core.text.terms import content_terms

TOPIC_CREDIBILITY = 0.6  # a source a facet is read off: news and better, no release or blog
SAME_TOPIC = 0.75  # two titles this close name one facet (either language: not scaled)
TITLE_CHARS = 140
KNOWN_BY = 2  # hits that must name a name of the question before it tells hits apart
PARALLEL = 0.35  # two runs this alike (embedder and surroundings) name things of one kind
AROUND = 4  # words a side that say how the sources write about a thing
_WORDS = re.compile(r"[\w.%-]+")
KEPT_SHARE = 0.5  # a clause half as close to the sources as the closest one is asked of them


async def split(similarity: Similarity, question: str, hits: list[SearchHit], limit: int,
                cfg: EngineSettings, as_of: dt.date) -> list[SubQuestion]:
    """Up to `limit` sub-questions: the question's clauses that the sources speak to (one per
    thing it names first), then facets the sources are about; never the question alone."""
    c = subquestions.clauses(question)
    texts = [f"{h.title}. {h.snippet}" for h in hits]
    if not c.things:
        c = named_as_sources(c, await coordinated(similarity, c.topic, texts), texts)
    # each clause as it will be searched: "the gap between them" names the two things
    searched = {a: subquestions.resolved(a, c.things) for a in c.asks}
    spoken = await spoken_to(similarity, list(searched.values()), texts, cfg)
    kept = [a for a in c.asks if a == c.topic or searched[a] in spoken]
    own = subquestions.compose(subquestions.Clauses(c.topic, kept, c.things), question)
    if len(own) < 2 and subquestions.is_part(c.topic, question) and c.topic not in own:
        own.insert(0, subquestions.as_question(c.topic))
    room = max(limit - len(own), 1 if hits else 0, 2 - len(own))
    about = await related(similarity, question,
                          await facets_of(similarity, question, hits, own, room, cfg, as_of), cfg)
    return subquestions.as_subquestions([*own[: limit - min(room, len(about))], *about], limit)


async def related(similarity: Similarity, question: str, facets: list[str],
                  cfg: EngineSettings) -> list[str]:
    """The facets the plan would take (`judgement.vet_subquestions` holds every sub-question
    to the same test): one it would refuse takes no clause's place in the split."""
    if not facets:
        return []
    row = await judgement.relatedness(similarity, question, facets)
    return [f for f, sim in zip(facets, row, strict=True)
            if sim >= scaled(cfg.related_similarity, question, f)]


async def coordinated(similarity: Similarity, clause: str, texts: list[str]) -> list[str]:
    """The two things an English clause sets side by side across a conjunction, where its
    wording does not say it plainly ("carbonate went one way and hydroxide the other", "what
    caused A and B prices to move"): of the runs before the conjunction and after it, the
    pair of equal length the embedder finds most alike, different words, both named by the
    retrieved sources; none below `PARALLEL`."""
    best: tuple[float, list[str]] = (PARALLEL, [])
    for lefts, rights in subquestions.conjuncts(clause):
        if not lefts or not rights:
            continue
        rows = await similarity.matrix(lefts, rights)
        for a, row in zip(lefts, rows, strict=True):
            for b, cosine in zip(rights, row, strict=True):
                alike = (cosine + written_alike(a, b, texts)) / 2
                if alike >= best[0] and _parallel(a, b, texts):
                    best = (alike, [a, b])
    return best[1]


def written_alike(a: str, b: str, texts: list[str]) -> float:
    """How alike the sources write about two things: the cosine of the content words around
    each (four a side). Things of one kind share their surroundings ("Gala apple prices
    averaged …", "Packham pear prices averaged …"), which the embedder, reading two bare names,
    cannot see."""
    around_a, around_b = _surroundings(a, texts), _surroundings(b, texts)
    shared = sum(n * around_b[w] for w, n in around_a.items())
    norms = math.sqrt(sum(n * n for n in around_a.values()) * sum(n * n for n in around_b.values()))
    return shared / norms if norms else 0.0


def _surroundings(thing: str, texts: list[str]) -> Counter[str]:
    wanted, width = thing.casefold().split(), len(thing.split())
    found: Counter[str] = Counter()
    for text in texts:
        words = _WORDS.findall(text.casefold())
        for i in range(len(words) - width + 1):
            if words[i:i + width] == wanted:
                around = words[max(0, i - AROUND):i] + words[i + width:i + width + AROUND]
                found.update(w for w in around if content_terms(w))
    return found


def named_as_sources(c: subquestions.Clauses, things: list[str],
                     texts: list[str]) -> subquestions.Clauses:
    """The clauses with their things, and the topic that names them, as the sources name
    them."""
    topic = c.topic
    named = [as_sources_name(t, texts) for t in things]
    for written, name in zip(things, named, strict=True):
        topic = re.sub(rf"(?<![\w-]){re.escape(written)}\b", name, topic, count=1)
    return replace(c, topic=topic, things=named,
                   asks=[topic if a == c.topic else a for a in c.asks])


def as_sources_name(thing: str, texts: list[str]) -> str:
    """The thing as the sources name it: "carbonate" is "lithium carbonate", "Gala" is "Gala
    apple", where at least half the texts' mentions of it write the same common word (not a
    name, not a measure) before or after it: the bundled embedder finds little in a bare
    "carbonate"."""
    word = re.escape(thing)
    written = [m.group(1) + " " + thing for t in texts
               for m in re.finditer(rf"\b([a-z][\w-]+)\s+{word}\b", t, re.I)]
    written += [thing + " " + m.group(1) for t in texts
                for m in re.finditer(rf"\b{word}\s+([a-z][\w-]+)\b", t, re.I)]
    mentions = sum(len(re.findall(rf"\b{word}\b", t, re.I)) for t in texts)
    fuller = [w for w in written if _common_word(w, thing)]
    name, count = Counter(fuller).most_common(1)[0] if fuller else ("", 0)
    return name if count and 2 * count >= mentions else thing


def _common_word(phrase: str, thing: str) -> bool:
    """Whether the word a phrase adds to the thing is a common word: written in lower case,
    a content word, no measure ("prices") and not one of the thing's own words."""
    added = phrase.replace(thing, "", 1).strip()
    return added.islower() and bool(content_terms(added)) and added not in thing.casefold() \
        and not subquestions.measures_in(added)


def _parallel(a: str, b: str, texts: list[str]) -> bool:
    """Two runs that may be a pair: as many words, other last words, each named by
    `KNOWN_BY` retrieved texts."""
    wa, wb = a.casefold().split(), b.casefold().split()
    return len(wa) == len(wb) and wa[-1] != wb[-1] and all(
        sum(w in t.casefold() for t in texts) >= KNOWN_BY for w in (a.casefold(), b.casefold()))


async def spoken_to(similarity: Similarity, clauses: list[str], texts: list[str],
                    cfg: EngineSettings) -> set[str]:
    """The clauses some retrieved text is close to (the off-goal scale); a clause that names
    nothing ("why") or opens as a question ("how has it moved over the past year": its
    "it" is the topic, which the sources are close to) asks about the topic and is kept."""
    if not texts:
        return set(clauses)
    named = [c for c in clauses if content_terms(c)]
    rows = await similarity.matrix(named, texts) if named else []
    best = max((max(row) for row in rows), default=0.0)
    close = {c for c, row in zip(named, rows, strict=True)
             if max(row) >= min(scaled(cfg.off_goal_similarity, c, texts[0]),
                                best * KEPT_SHARE)}
    return close | {c for c in clauses if not content_terms(c) or subquestions.asks(c)}


async def facets_of(similarity: Similarity, question: str, hits: list[SearchHit],
                    taken: list[str], most: int, cfg: EngineSettings, as_of: dt.date,
                    seen: list[SearchHit] | None = None) -> list[str]:
    """The titles of the hits that would be kept as evidence on their title alone (the
    evidence score of relevance, credibility and recency) from credible sources of the
    recency window (an outdated article names no facet of now), closest to
    the question first, one per facet: none close to another chosen title or to a sub-question
    already `taken`; `seen`: all the hits of the run, which tell the question's names apart."""
    known = known_names(question, (f"{h.title} {h.snippet}" for h in seen or hits), KNOWN_BY)
    credible = [h for h in hits if credibility(h.source_type) >= TOPIC_CREDIBILITY
                and recency(h.published, as_of, cfg) > 0
                and (not known or names_any(_text(h), known))]
    if not credible or most < 1:
        return []
    by_title = {_title(h): h for h in credible}
    titles = list(by_title)
    cosines = (await similarity.matrix([question], titles))[0]
    scored = [(t, _score(c, question, by_title[t], cfg, as_of)) for t, c in
              zip(titles, cosines, strict=True)]
    ranked = [t for t, score in sorted(scored, key=lambda x: -x[1])
              if score >= cfg.evidence_threshold]
    chosen: list[str] = []
    for title in ranked:
        if len(chosen) >= most:
            break
        if not await _near_any(similarity, title, [*taken, *chosen]):
            chosen.append(title)
    return chosen


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
