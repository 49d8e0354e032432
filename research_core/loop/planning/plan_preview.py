"""The plan preview (docs/teams.md): the planner splits the question once, before any research
is spent; the requester may edit the sub-questions; the run then starts from that tree (its
first expansion), without a second decomposition."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from research_core.loop.memory.goal_tree import GoalTree
from research_core.loop.memory.state import RunState
from research_core.loop.planning import planner
from research_core.models.gateway import Gateway
from research_core.models.ledger import Ledger
from research_core.protocols import ModelTier
from research_core.runlog import RunLog
from research_core.settings import Settings
from research_core.wording import ENGLISH_WORDS, Words

SUBQUESTION_CHARS = 160  # what a sub-question may hold (schemas.SubQuestion)
MIN_SUBQUESTION_CHARS = 8


@dataclass(frozen=True)
class PlanPreview:
    subquestions: list[str]
    tokens: int
    cost_usd: float


async def preview_plan(settings: Settings, tiers: Mapping[str, ModelTier],
                       question: str) -> PlanPreview:
    """The planner's sub-questions for `question` (one decomposition, its fallback split when
    the model gives none), with what the call cost."""
    ledger = Ledger(prices=dict(settings.tiers))
    gateway = Gateway(tiers, ledger, RunLog(), settings.engine.json_max_tokens)
    root = GoalTree.for_question(question).root
    subs = await planner.decompose(gateway, question, root, "", settings.engine.max_children,
                                   set())
    if not subs:
        subs = planner.split_fallback(root.asked)
    totals = ledger.totals()
    return PlanPreview([s.question for s in subs], sum(t.total_tokens for t in totals),
                       sum(t.cost_usd for t in totals))


def edited_lines(text: str, limit: int,
                 w: Words = ENGLISH_WORDS) -> tuple[list[str], str | None]:
    """The sub-questions of an edited plan (one per line, blank lines dropped), or why they
    cannot be used (in the language of `w`)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return [], w("give at least one sub-question")
    if len(lines) > limit:
        return [], w("at most {limit} sub-questions, please (you gave {n})", limit=limit,
                     n=len(lines))
    if len({line.lower() for line in lines}) != len(lines):
        return [], w("two sub-questions are the same")
    for line in lines:
        if len(line) > SUBQUESTION_CHARS:
            return [], w("keep each sub-question under {n} characters", n=SUBQUESTION_CHARS)
        if len(line) < MIN_SUBQUESTION_CHARS:
            return [], w("{line} is too short to research", line=repr(line))
    return lines, None


def seed_plan(state: RunState, subquestions: list[str]) -> None:
    """Start a new run from the previewed (and maybe edited) plan: the root's children are
    the sub-questions, most valuable first, as if the first expansion had made them."""
    tree = state.tree
    if tree.root.children or not subquestions:
        return
    children = [tree.add_child(tree.root_id, q, round(max(0.1, 0.9 - 0.1 * i), 2))
                for i, q in enumerate(subquestions)]
    listing = ", ".join(f"{c.id} ({c.value:.2f}) {c.question!r}" for c in children)
    state.log.emit("expand", f"{tree.root_id} → {listing} (the previewed plan)",
                   node=tree.root_id)
