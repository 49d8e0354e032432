"""The embedder's second opinion on model decisions that would otherwise be taken on the model's
word alone. Each override is logged with both values.

- Relevance: the model's relevance of a hit against the embedder's, which is the hit's
  similarity to the sub-question on the relevance scale: min(1, similarity /
  `relevance_full_similarity`), because a cosine is not a relevance (with the bundled encoder a
  clearly relevant hit scores 0.4–0.6, a cross-language one 0.25, an unrelated one below 0.15).
  When the two differ by more than `relevance_margin` (0.5) the lower governs, so only a
  gross disagreement is overridden: 1.0 for a hit about cat food (embedder ~0.2) becomes
  ~0.2, while 0.9 for a relevant Chinese hit to an English question (~0.5) stands.
- Off-goal evidence and drift: evidence is dropped, or a branch pruned, only when the
  embedder agrees that it is far from the goal: similarity to the root question below
  `off_goal_similarity` (0.25; a cat-food text scores 0.13 against a heat-pump question).
- New sub-questions (decomposition and reflection alike): real text, not a duplicate of a
  question already in the tree, and related to the root question: similarity at least
  `related_similarity` (0.3; genuine English sub-questions score 0.5–0.75, unrelated ones
  0.1–0.28). Related to the question means to the whole of it or to its main clause: a long
  request ("Please report A and describe B, including C, with sources") dilutes the whole
  below the threshold for the very source that answers A (0.27 against 0.41 for the clause).
Both thresholds are for English pairs. The similarity of a Chinese pair is half bigram overlap
(`research_core.models.embeddings.blend`), which scores a long, chatty Chinese question's genuine
sub-questions at only 0.15–0.3, so a threshold shrinks by the same weight for such a pair.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError

from research_core.loop.memory.evidence import Evidence
from research_core.loop.planning import subquestions
from research_core.models.embeddings import CJK_LEXICAL_WEIGHT, cjk_share
from research_core.models.schemas import HitScore, SubQuestion
from research_core.protocols import SearchHit, Similarity
from research_core.runlog import RunLog
from research_core.settings import EngineSettings
from research_core.text.asking import Asked


@dataclass(frozen=True)
class Vetted:
    """Sub-questions that passed, and why the others did not."""

    accepted: list[SubQuestion]
    rejected: list[tuple[str, str]]


async def cross_check_relevance(similarity: Similarity, question: str, hits: list[SearchHit],
                                scores: list[HitScore], cfg: EngineSettings,
                                log: RunLog) -> list[HitScore]:
    """The scores with the lower of model and embedder where they disagree by > margin."""
    texts = [f"{h.title} {h.snippet}" for h in hits]
    cosines = (await similarity.matrix([question], texts))[0] if hits else []
    checked = []
    for hit, score, cosine in zip(hits, scores, cosines, strict=True):
        emb = min(1.0, cosine / cfg.relevance_full_similarity)
        if score.relevance - emb <= cfg.relevance_margin:
            checked.append(score)
            continue
        log.emit("relevance", f"{hit.source_id}: model relevance {score.relevance:.2f}, "
                 f"embedder {emb:.2f} (similarity {cosine:.2f}); they differ by more than "
                 f"{cfg.relevance_margin}: the lower ({emb:.2f}) is used",
                 source=hit.source_id, model=score.relevance, embedder=round(emb, 4))
        checked.append(score.model_copy(update={
            "relevance": round(emb, 4), "reason": f"embedder overrode {score.relevance:.2f}: "
                                                  f"{score.reason}"[:120]}))
    return checked


async def far_from_goal(similarity: Similarity, goal: str, items: list[Evidence],
                        cfg: EngineSettings, log: RunLog) -> set[str]:
    """The ids of the items the embedder also finds far from the goal; the rest is kept."""
    if not items:
        return set()
    scores = (await similarity.matrix([goal], [e.text for e in items]))[0]
    far = set()
    for item, sim in zip(items, scores, strict=True):
        limit = scaled(cfg.off_goal_similarity, goal, item.text)
        if sim < limit:
            far.add(item.id)
        else:
            log.emit("off-goal-kept", f"{item.id}: reflection called it off-goal, but the "
                     f"embedder finds it close to the goal ({sim:.2f} >= {limit:.2f}): kept",
                     evidence=item.id, embedder=round(sim, 4))
    return far


async def drift_confirmed(similarity: Similarity, goal: str, question: str,
                          items: list[Evidence], cfg: EngineSettings, log: RunLog) -> bool:
    """Whether the embedder agrees that a node the model says drifted is far from the goal:
    its question and evidence, on average, below `off_goal_similarity` to the root."""
    texts = [question, *(e.text for e in items)]
    scores = (await similarity.matrix([goal], texts))[0]
    mean = sum(scores) / len(scores)
    limit = scaled(cfg.off_goal_similarity, goal, question)
    if mean < limit:
        return True
    log.emit("drift-refused", f"reflection said the research drifted, but the embedder finds "
             f"{question!r} and its evidence close to the goal ({mean:.2f} >= {limit:.2f}): "
             "no backtrack", embedder=round(mean, 4))
    return False


async def vet_subquestions(similarity: Similarity, root: Asked, candidates: list[SubQuestion],
                           taken: set[str], cfg: EngineSettings) -> Vetted:
    """Candidates that are real, new and related to the root question, in order."""
    seen = {_norm(t) for t in taken}
    related = await relatedness(similarity, root, [c.question for c in candidates])
    accepted: list[SubQuestion] = []
    rejected: list[tuple[str, str]] = []
    for candidate, sim in zip(candidates, related, strict=True):
        why = _problem(candidate, sim, root.text, seen, cfg)
        if why:
            rejected.append((candidate.question, why))
        else:
            accepted.append(candidate)
            seen.add(_norm(candidate.question))
    return Vetted(accepted, rejected)


async def relatedness(similarity: Similarity, root: Asked, texts: list[str]) -> list[float]:
    """Each text's similarity to the root question: to the whole or to one of its clauses
    (`research_core.text.clauses`), whichever is closer: a long request dilutes the whole."""
    if not texts:
        return []
    roots = [root.text, *(c for c in root.clauses if subquestions.is_part(c, root))]
    rows = await similarity.matrix(roots, texts)
    return [max(column) for column in zip(*rows, strict=True)]


def real_subquestion(question: str, value: float) -> SubQuestion | str:
    """The text as a sub-question, or why it is not one (placeholder, too short, too long)."""
    try:
        return SubQuestion(question=question, value=value)
    except ValidationError as exc:
        return "; ".join(e["msg"] for e in exc.errors())[:200]


def scaled(threshold: float, a: str, b: str) -> float:
    """An English-pair threshold for the pair (a, b), shrunk by the weight bigram overlap has
    in the similarity of a Chinese pair."""
    return threshold * (1.0 - CJK_LEXICAL_WEIGHT * min(cjk_share(a), cjk_share(b)))


def _problem(candidate: SubQuestion, related: float, root: str, seen: set[str],
             cfg: EngineSettings) -> str | None:
    if _norm(candidate.question) in seen:
        return "it repeats a question already in the plan"
    limit = scaled(cfg.related_similarity, root, candidate.question)
    if related < limit:
        return f"the embedder finds it unrelated to the question ({related:.2f} < {limit:.2f})"
    return None


def _norm(question: str) -> str:
    return " ".join(question.casefold().strip(" ?？。.!").split())
