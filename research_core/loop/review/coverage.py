"""Coverage, not a count, ends a sub-question (issue 16): a node is done when the facets of
its question (the measures, periods, causes and further questions it asks, read off the
node's question as read once, `Node.asked`, by `research_core.loop.planning.subquestions`)
are answered by its kept evidence.

Applied deep asks the executor which facets the evidence answers and needs all of them;
standard keeps a lighter rule without a model call: the embedder (with a figure for a facet
that asks for figures) must cover a share of the facets. An unusable model reply (an empty
one included: it judges nothing) falls back on the embedder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.goal_tree import Node
from research_core.loop.memory.state import RunState
from research_core.loop.planning import judgement, subquestions
from research_core.models.gateway import Gateway
from research_core.models.prompts import render
from research_core.models.schemas import CoverageOut
from research_core.protocols import Similarity
from research_core.settings import EngineSettings
from research_core.text.asking import Asked, read_question
from research_core.text.figures import figures_in

MAX_FACETS = 5
RELIED_CHARS = 160


@dataclass
class Coverage:
    """What a judge found: the facets, the indexes answered, the unknowns it named."""

    facets: list[str]
    answered: list[int]
    unknowns: list[str] = field(default_factory=list)
    by: str = "embedder"  # "model" or "embedder"

    @property
    def share(self) -> float:
        return len(self.answered) / len(self.facets) if self.facets else 1.0

    def uncovered(self) -> list[str]:
        return [f for i, f in enumerate(self.facets) if i not in self.answered]

    def to_dict(self) -> dict[str, Any]:
        return {"facets": self.facets, "answered": self.answered, "unknowns": self.unknowns,
                "by": self.by}


def facets(asked: Asked) -> list[str]:
    """The facets of a question: its derived sub-questions (a cause only when it asks why),
    or the question itself when it asks one thing."""
    derived = [s.question for s in subquestions.derive(asked, limit=MAX_FACETS)]
    kept = [d for d in derived if asked.explains or not read_question(d).explains]
    return kept if len(kept) > 1 else [asked.text]


async def by_embedder(similarity: Similarity, wanted: list[str], texts: list[str],
                      cfg: EngineSettings) -> Coverage:
    """A facet is covered when some text is close to it (the relevance scale of the hit
    judge) and, unless it asks for causes, states a figure."""
    if not wanted or not texts:
        return Coverage(wanted, [])
    matrix = await similarity.matrix(wanted, texts)
    answered = []
    for i, (facet, row) in enumerate(zip(wanted, matrix, strict=True)):
        cause = read_question(facet).explains
        if any(_close(c, facet, t, cfg) and (cause or figures_in(t))
               for c, t in zip(row, texts, strict=True)):
            answered.append(i)
    return Coverage(wanted, answered)


def _close(cosine: float, facet: str, text: str, cfg: EngineSettings) -> bool:
    full = judgement.scaled(cfg.relevance_full_similarity, facet, text)
    return min(1.0, max(0.0, cosine) / full) >= cfg.coverage_relevance


async def by_model(gw: Gateway, tier: str, purpose: str, question: str, wanted: list[str],
                   lines: list[str]) -> Coverage | None:
    """The model's judgement of which facets the lines answer; None when unusable."""
    messages = render(purpose, question=question,
                      facets="\n".join(f"#{i} {f}" for i, f in enumerate(wanted)),
                      evidence="\n".join(lines), findings="\n".join(lines))

    def check(out: CoverageOut) -> str | None:
        bad = [i for i in out.answered if not 0 <= i < len(wanted)]
        if bad:
            return f"unknown facet indexes {bad}; use 0..{len(wanted) - 1}"
        if not out.answered and not out.unknowns:  # an empty reply judges nothing
            return "list the answered facet indexes in answered, or what is missing in unknowns"
        return None

    out = await gw.try_structured(tier, purpose, messages, CoverageOut, check)
    if out is None:
        return None
    return Coverage(wanted, sorted(set(out.answered)), list(out.unknowns), by="model")


async def of_node(gw: Gateway, similarity: Similarity, asked: Asked, items: list[Evidence],
                  cfg: EngineSettings, deep: bool) -> Coverage:
    """How far a sub-question's kept evidence covers it: the executor's judgement in deep
    (the embedder when its reply is unusable), the embedder alone in standard."""
    wanted = facets(asked)
    if deep:
        judged = await by_model(gw, "executor", "judge_coverage", asked.text, wanted,
                                [e.line() for e in items])
        if judged is not None:
            return judged
    return await by_embedder(similarity, wanted, [e.text for e in items], cfg)


VERIFYING = "verifying"  # in a node's saved coverage: covered, one round seeks corrections


def is_covered(cov: Coverage, cfg: EngineSettings, deep: bool) -> bool:
    """Deep needs every facet answered; standard the lighter share."""
    return cov.share >= (1.0 if deep else cfg.standard_coverage_share)


async def settle(gw: Gateway, similarity: Similarity, state: RunState, node: Node,
                 cfg: EngineSettings, deep: bool) -> None:
    """After a round: the node is done when covered, insufficient when its rounds are spent
    at the deepest level, otherwise it stays open (and is split deeper once its rounds are
    spent). The judgement is kept in the checkpoint for the plan view and the upgrade."""
    if node.status != "open":
        return
    items = state.kept_for({node.id})
    cov = Coverage(facets(node.asked), [])
    if len(items) >= cfg.evidence_per_done_node:
        cov = await of_node(gw, similarity, node.asked, items, cfg, deep)
    state.extra.coverage[node.id] = cov.to_dict()
    got = f"{len(cov.answered)} of {len(cov.facets)} facets covered ({cov.by})"
    if items and is_covered(cov, cfg, deep) and _verifies(state, node, cov, deep):
        state.extra.coverage[node.id][VERIFYING] = True  # answered: its part may go out
        state.log.emit("verify", f"{node.id}: {got}, by the embedder; one more round seeks "
                       "corrections and newer versions of the figures it relies on", node=node.id)
    elif items and is_covered(cov, cfg, deep):
        node.status = "done"
        state.log.emit("done", f"{node.id}: {got} by {len(items)} items", node=node.id)
    elif node.rounds >= cfg.rounds_per_node and node.depth >= cfg.max_depth:
        node.status = "insufficient"
        state.log.emit("thin", f"{node.id}: insufficient evidence after {node.rounds} rounds: "
                       f"{got}", node=node.id)
    elif node.rounds >= cfg.rounds_per_node:
        state.log.emit("thin", f"{node.id}: {got}; will split deeper", node=node.id)


def _verifies(state: RunState, node: Node, cov: Coverage, deep: bool) -> bool:
    """Deep does not take the embedder's word that a node is covered after one round when
    the node leans on figures: its second round seeks what corrects them (seed 003)."""
    return deep and cov.by == "embedder" and node.rounds == 1 and bool(
        relied_figures(state, node))


def should_expand(node: Node, cfg: EngineSettings) -> bool:
    """The root is always split; a node still open after its rounds is not covered."""
    if node.depth == 0:
        return True
    return node.status == "open" and node.rounds >= cfg.rounds_per_node and (
        node.depth < cfg.max_depth)


def known_text(state: RunState, deep: bool) -> str:
    """What the planner is told is already known when it splits a node: the latest
    conclusions, and in deep what the judged nodes still miss."""
    known = "; ".join(s.conclusion[:120] for s in list(state.summaries.values())[-4:])
    return "; ".join(filter(None, [known, uncovered_note(state) if deep else ""]))


def uncovered_note(state: RunState) -> str:
    """What the judged nodes still miss, for the planner's "already known" (deep)."""
    missing = [f for c in state.extra.coverage.values() if isinstance(c, dict)
               for f in [*_uncovered(c), *c.get("unknowns", [])]]
    return "not yet covered: " + "; ".join(dict.fromkeys(missing)) if missing else ""


def _uncovered(saved: dict[str, Any]) -> list[str]:
    answered = set(saved.get("answered", []))
    return [f for i, f in enumerate(saved.get("facets", [])) if i not in answered]


def relied_figures(state: RunState, node: Node, limit: int = 3) -> str:
    """The figures the node's answer leans on (its best kept items that state one), with
    their source and date: what a deep round seeks corrections and newer versions of."""
    items = sorted(state.kept_for({node.id}), key=lambda e: -e.score)
    with_figures = [e for e in items if figures_in(e.text)][:limit]
    return "\n".join(f"{e.text[:RELIED_CHARS]} ({e.source_id}, "
                     f"{e.published.isoformat() if e.published else 'undated'})"
                     for e in with_figures)
