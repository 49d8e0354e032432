"""Reflection every few steps; on drift, backtrack one level and drop the branch's evidence."""

from __future__ import annotations

from research_core import planner
from research_core.budget import Budget
from research_core.gateway import Gateway
from research_core.goal_tree import Node
from research_core.schemas import ReflectionOut
from research_core.state import RunState


async def reflect_and_correct(gw: Gateway, state: RunState, node: Node,
                              owner: Budget) -> ReflectionOut:
    """Ask the three questions about `node`'s evidence and act on the answers."""
    open_nodes = [n for n in state.tree.nodes.values() if n.status == "open" and n is not node]
    evidence = state.kept_for({node.id})
    out = await planner.reflect(gw, state.question, node, open_nodes, evidence)
    state.log.emit("reflect", f"answers goal: {out.answers_goal}; off-goal: "
                   f"{out.off_goal or 'none'}; drifted: {out.drifted}; neglected: "
                   f"{out.neglected or 'none'}", node=node.id)
    if out.off_goal:
        discard(state, set(out.off_goal), "off-goal (reflection)")
    if out.drifted and node.parent_id is not None:
        backtrack(state, node)
    if out.neglected and owner.available("discoveries") > 0 \
            and _add_neglected(state, out.neglected):
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


def _add_neglected(state: RunState, question: str) -> bool:
    root = state.tree.root
    existing = {state.tree.nodes[c].question.strip().lower() for c in root.children}
    if question.strip().lower() in existing or len(question.strip()) < 8:
        return False
    child = state.tree.add_child(root.id, question.strip(), 0.85)
    state.log.emit("expand", f"reflection added a neglected sub-question {child.id}: "
                   f"{child.question!r}", node=child.id)
    return True
