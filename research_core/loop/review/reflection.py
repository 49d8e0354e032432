"""Reflection every few steps; on drift, backtrack one level and drop the branch's evidence.

The model's answers are not taken on its word alone (`research_core.loop.planning.judgement`):
evidence is dropped as off-goal, or a branch pruned for drift, only when the embedder agrees it
is far from the goal; a neglected sub-question is added only when it passes the same checks as a
decomposition's."""

from __future__ import annotations

from research_core.budget.axes import Budget
from research_core.loop.memory.goal_tree import Node
from research_core.loop.memory.state import RunState
from research_core.loop.planning import judgement, planner
from research_core.models.gateway import Gateway
from research_core.models.schemas import ReflectionOut
from research_core.protocols import Similarity
from research_core.settings import EngineSettings

NEGLECTED_VALUE = 0.85


async def reflect_and_correct(gw: Gateway, state: RunState, node: Node, owner: Budget,
                              similarity: Similarity, cfg: EngineSettings) -> ReflectionOut:
    """Ask the three questions about `node`'s evidence and act on the answers the embedder
    agrees with."""
    open_nodes = [n for n in state.tree.nodes.values() if n.status == "open" and n is not node]
    evidence = state.kept_for({node.id})
    out = await planner.reflect(gw, state.question, node, open_nodes, evidence)
    state.log.emit("reflect", f"answers goal: {out.answers_goal}; off-goal: "
                   f"{out.off_goal or 'none'}; drifted: {out.drifted}; neglected: "
                   f"{out.neglected or 'none'}", node=node.id)
    if out.off_goal:
        named = [e for e in state.kept() if e.id in set(out.off_goal)]
        far = await judgement.far_from_goal(similarity, state.question, named, cfg, state.log)
        discard(state, far, "off-goal (reflection, embedder agrees)")
    if out.drifted and node.parent_id is not None and await judgement.drift_confirmed(
            similarity, state.question, node.question, evidence, cfg, state.log):
        backtrack(state, node)
    if out.neglected and owner.available("discoveries") > 0 \
            and await _add_neglected(state, out.neglected, similarity, cfg):
        owner.spend("discoveries")
    return out


def discard(state: RunState, evidence_ids: set[str], reason: str) -> list[str]:
    """Take evidence out of the run: it never reaches memory or the report."""
    dropped = []
    for item in state.evidence:
        if item.id in evidence_ids and item.kept:
            item.kept = False
            item.discarded_reason = reason
            dropped.append(item.id)
    state.working.drop(evidence_ids)
    if dropped:
        state.log.emit("discard", f"{', '.join(dropped)}: {reason}", evidence=dropped)
    return dropped


def backtrack(state: RunState, node: Node) -> None:
    """Prune the drifted branch, drop its evidence and summaries, return to the parent level."""
    branch = set(state.tree.subtree(node.id))
    ids = {e.id for e in state.kept_for(branch)}
    parent = state.tree.backtrack(node.id)
    for nid in branch:
        state.summaries.pop(nid, None)
    if state.working.node_id in branch:
        state.working.reset(None)
    discard(state, ids, f"off-branch: {node.id} drifted")
    where = parent.id if parent else "root"
    state.log.emit("backtrack", f"drift at {node.id}: branch {sorted(branch)} pruned, "
                   f"back to {where}; {len(ids)} evidence items dropped", node=node.id)


async def _add_neglected(state: RunState, question: str, similarity: Similarity,
                         cfg: EngineSettings) -> bool:
    """A neglected sub-question joins the root's children if it passes the checks a
    decomposition's sub-questions pass."""
    candidate = judgement.real_subquestion(question.strip(), NEGLECTED_VALUE)
    if isinstance(candidate, str):
        return _refused(state, question, candidate)
    taken = {n.question for n in state.tree.nodes.values()}
    vetted = await judgement.vet_subquestions(similarity, state.asked, [candidate], taken,
                                              cfg)
    if vetted.rejected:
        return _refused(state, question, vetted.rejected[0][1])
    child = state.tree.add_child(state.tree.root.id, candidate.question, NEGLECTED_VALUE)
    state.log.emit("expand", f"reflection added a neglected sub-question {child.id}: "
                   f"{child.question!r}", node=child.id)
    return True


def _refused(state: RunState, question: str, why: str) -> bool:
    state.log.emit("neglected-refused", f"reflection's sub-question {question[:80]!r} not "
                   f"added: {why}")
    return False
