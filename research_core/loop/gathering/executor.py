"""The executor tier's work: scoring a batch of hits, and compressing memory losslessly."""

from __future__ import annotations

from collections.abc import Callable

from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.memory import (
    Summary,
    facts_of,
    lossless_summary,
    merge_source_ids,
    missing_facts,
    previous_facts,
    with_conflicts,
)
from research_core.models.gateway import Gateway
from research_core.models.prompts import max_tokens, render
from research_core.models.schemas import HitScore, HitScores, MemorySummaryOut
from research_core.protocols import SearchHit
from research_core.text.titles import restated


def hit_block(index: int, hit: SearchHit) -> str:
    """A hit as the scorer sees it; its title only where the snippet does not say it."""
    date = hit.published.isoformat() if hit.published else "undated"
    title = "" if restated(hit.title, [hit.snippet]) else f"{hit.title} "
    return f"#{index} {title}({hit.source_type}, {date}) {hit.snippet}"


async def score_hits(gw: Gateway, question: str, hits: list[SearchHit],
                     fallback: Callable[[], HitScores]) -> list[HitScore]:
    """One relevance score (0..1) and a reason per hit, in one batched call; `fallback` scores
    them without a model (`research_core.loop.gathering.relevance`)."""
    messages = render("score_hits", question=question,
                      hits="\n".join(hit_block(i, h) for i, h in enumerate(hits)))

    def check(out: HitScores) -> str | None:
        got = sorted(s.index for s in out.scores)
        want = list(range(len(hits)))
        return None if got == want else f"score every index {want} exactly once, got {got}"

    out = await gw.structured("executor", "score_hits", messages, HitScores, fallback, check,
                              max_tokens=max_tokens("score_hits") * len(hits))
    return sorted(out.scores, key=lambda s: s.index)


async def summarise(gw: Gateway, node_id: str, question: str, items: list[Evidence],
                    previous: Summary | None, deep: bool = False,
                    model_min_chars: int = 0) -> Summary:
    """Long-term memory for a sub-question; a summary that drops a fact is redone or replaced.
    Conflicts between its sources are recorded as such in its open doubts. In standard, notes
    shorter than `model_min_chars` are kept as they are, in code: a summary of them could only
    lose facts (deep always asks the model, which also aligns versions)."""
    size = sum(len(e.line()) + 1 for e in items) + (len(previous.text()) if previous else 0)
    if not deep and size < model_min_chars:
        gw.log.emit("memory", f"{node_id}: {size} characters of notes kept as the summary, "
                    f"no model call (under {model_min_chars})", node=node_id)
        summary = lossless_summary(node_id, question, items, previous)
    else:
        summary = await _summary(gw, node_id, question, items, previous, deep)
    return with_conflicts(summary, items)


async def _summary(gw: Gateway, node_id: str, question: str, items: list[Evidence],
                   previous: Summary | None, deep: bool) -> Summary:
    required = facts_of(items) | (previous_facts(previous) if previous else set())
    messages = render(
        "summarise", deep, question=question,
        previous=previous.text() if previous else "none",
        notes="\n".join(e.line() for e in items),
    )

    def check(out: MemorySummaryOut) -> str | None:
        text = "\n".join([out.conclusion, *out.evidence, *out.open_doubts])
        lost = missing_facts(text, required)
        return f"the summary dropped these numbers/dates/source ids: {lost[:20]}" if lost else None

    out = await gw.try_structured("executor", "summarise", messages, MemorySummaryOut, check)
    if out is None:
        return lossless_summary(node_id, question, items, previous)
    return Summary(
        node_id=node_id, question=question, conclusion=out.conclusion, evidence=out.evidence,
        open_doubts=out.open_doubts, source_ids=merge_source_ids(previous, items),
        version=(previous.version + 1) if previous else 1,
    )

