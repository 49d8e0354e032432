"""Before finalising, the root question's facets (periods, measures, comparisons, causes,
dates it asks for, and the last month its span reaches) are checked against the findings
(issue 16): uncovered facets become new sub-questions while the budget allows; what stays
uncovered is reported as unknown.

Applied deep asks the planner which facets the findings answer (the embedder when its
reply is unusable) and refills as long as the budget allows; standard, the lighter rule,
uses the embedder alone and refills once.
"""

from __future__ import annotations

from research_core.budget.owner import BudgetOwner
from research_core.delivery.publications import Delivery
from research_core.loop.memory.state import RunState
from research_core.loop.planning import decomposition, judgement, period_end
from research_core.loop.review import coverage
from research_core.loop.review.coverage import Coverage
from research_core.models.gateway import Gateway
from research_core.models.schemas import SubQuestion
from research_core.protocols import Similarity
from research_core.settings import EngineSettings
from research_core.wording import for_question

GAP_VALUE = 0.75
EVIDENCE_VALUE = 0.65
ROOT = "root"


async def judge_root(gw: Gateway, similarity: Similarity, state: RunState,
                     cfg: EngineSettings, deep: bool) -> Coverage:
    """How far the findings cover the root question's facets, the last month it asks about
    included (`period_end`)."""
    cov = await _judge_facets(gw, similarity, state, cfg, deep)
    kept = state.kept()
    last = period_end.facet(state.asked, state.as_of, [e.text for e in kept],
                            [e.published for e in kept])
    if last is None:
        return cov
    question, reached = last
    answered = [*cov.answered, len(cov.facets)] if reached else cov.answered
    return Coverage([*cov.facets, question], answered, cov.unknowns, cov.by)


async def _judge_facets(gw: Gateway, similarity: Similarity, state: RunState,
                        cfg: EngineSettings, deep: bool) -> Coverage:
    wanted = coverage.facets(state.asked)
    kept = state.kept()
    findings = [f"{s.question}: {s.conclusion}" for s in state.summaries.values()]
    if deep and (kept or findings):
        lines = [*findings, *(e.line() for e in kept[-16:])]
        judged = await coverage.by_model(gw, "planner", "check_coverage", state.question,
                                         wanted, lines)
        if judged is not None:
            return judged
    return await coverage.by_embedder(similarity, wanted, [e.text for e in kept], cfg)


async def judge_and_record(gw: Gateway, similarity: Similarity, state: RunState,
                           cfg: EngineSettings, deep: bool) -> Coverage:
    """Judge the root's coverage; the facets still uncovered become the run's unknowns."""
    cov = await judge_root(gw, similarity, state, cfg, deep)
    asked: list[str] = state.extra.coverage.get(ROOT, {}).get("asked", [])
    state.extra.coverage[ROOT] = {**cov.to_dict(), "asked": asked}
    state.extra.unknowns = list(dict.fromkeys([*cov.uncovered(), *cov.unknowns]))
    state.log.emit("coverage", f"root: {len(cov.answered)} of {len(cov.facets)} facets "
                   f"covered ({cov.by}); unknown: {'; '.join(state.extra.unknowns) or 'none'}")
    return cov


async def refill(gw: Gateway, similarity: Similarity, state: RunState, owner: BudgetOwner,
                 delivery: Delivery, cfg: EngineSettings, deep: bool) -> bool:
    """Add the uncovered root facets as sub-questions; False when the run may finalise.
    The facets still uncovered are kept as the run's unknowns either way."""
    cov = await judge_and_record(gw, similarity, state, cfg, deep)
    asked: list[str] = state.extra.coverage[ROOT]["asked"]
    if owner.finalising:
        return False
    new = [f for f in cov.uncovered() if f not in asked]
    if not new or (asked and not deep) or not _affordable(owner):
        return await refill_from_evidence(similarity, state, owner, delivery, cfg)
    taken = {n.question for n in state.tree.nodes.values()}
    vetted = await judgement.vet_subquestions(
        similarity, state.asked, [SubQuestion(question=f, value=GAP_VALUE) for f in new],
        taken, cfg)
    state.extra.coverage[ROOT]["asked"] = [*asked, *new]
    for question, why in vetted.rejected:
        state.log.emit("subquestion-refused", f"{question[:80]!r}: {why}")
    if not vetted.accepted:
        return await refill_from_evidence(similarity, state, owner, delivery, cfg)
    owner.spend("discoveries")
    root = state.tree.root_id
    added = [state.tree.add_child(root, s.question, s.value) for s in vetted.accepted]
    state.log.emit("coverage-gap", "uncovered facets of the question → " + ", ".join(
        f"{n.id} {n.question!r}" for n in added))
    w = for_question(state.question)
    await delivery.progress(w("Not covered yet, researching: {questions}", questions=w(
        "; ").join(n.question for n in added)), key=f"gap-{added[0].id}")
    return True


async def refill_from_evidence(similarity: Similarity, state: RunState, owner: BudgetOwner,
                               delivery: Delivery, cfg: EngineSettings) -> bool:
    """No early stop while the evidence says more (issue 25): with more than half of the
    steps left, what the retrieved but uncited sources are about (their titles, one per facet
    no sub-question covers) becomes new sub-questions; False when there is none."""
    if not _affordable(owner) or owner.available("steps") * 2 <= owner.total("steps"):
        return False
    cited = {e.source_id for e in state.kept()}
    seen = decomposition.retrieved_hits(state.extra.retrieved)
    unread = [hit for source_id, hit in seen.items() if source_id not in cited]
    taken = [n.question for n in state.tree.nodes.values() if n.depth > 0]
    found = await decomposition.facets_of(similarity, state.asked, unread, taken,
                                          cfg.max_children, cfg, state.as_of,
                                          list(seen.values()))
    if not found:
        return False
    owner.spend("discoveries")
    added = [state.tree.add_child(state.tree.root_id, q, EVIDENCE_VALUE) for q in found]
    state.log.emit("evidence-gap", "retrieved sources no sub-question covers → " + ", ".join(
        f"{n.id} {n.question!r}" for n in added))
    w = for_question(state.question)
    await delivery.progress(w("More in the sources, researching: {questions}", questions=w(
        "; ").join(n.question for n in added)), key=f"gap-{added[0].id}")
    return True


def _affordable(owner: BudgetOwner) -> bool:
    return owner.available("steps") >= 1 and owner.available("discoveries") >= 1
