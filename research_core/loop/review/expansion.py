"""A node split into sub-questions: by the planner when its reply is usable, else from the
question's clauses and what the sources retrieved for it are about (the root), or from what
the sources a sub-question's queries found but it did not keep are about (a node still open
after its rounds). Every proposal is vetted against the question before it joins the tree.
"""

from __future__ import annotations

from dataclasses import dataclass

from research_core.budget.owner import BudgetOwner
from research_core.loop.gathering.admission import Admission
from research_core.loop.memory.goal_tree import Node
from research_core.loop.memory.state import RunState
from research_core.loop.planning import decomposition, judgement, planner, subquestions
from research_core.loop.review import coverage
from research_core.models.gateway import Gateway
from research_core.models.schemas import SubQuestion
from research_core.protocols import SearchHit, Similarity
from research_core.search.tool import SearchTool
from research_core.settings import EngineSettings


@dataclass
class Expansion:
    """One run's node splitting, over its state."""

    state: RunState
    owner: BudgetOwner
    gateway: Gateway
    similarity: Similarity
    search: SearchTool
    admission: Admission
    config: EngineSettings

    @property
    def deep(self) -> bool:
        return self.owner.deep_applied

    async def expand(self, node: Node) -> list[Node]:
        """`node`'s new children (none when the discoveries budget is spent or nothing new
        survives the vetting: the node is then insufficient)."""
        if self.owner.available("discoveries") < 1:
            self.owner.spend("discoveries")  # refused and logged with its reason
            node.status = "insufficient" if node.depth else node.status
            return []
        subs = await self._proposals(node)
        if not subs:
            node.status = "insufficient"
            self.state.log.emit("thin", f"{node.id}: no new sub-question to split into",
                                node=node.id)
            return []
        self.owner.spend("discoveries")
        children = [self.state.tree.add_child(node.id, s.question, s.value) for s in subs]
        listing = ", ".join(f"{c.id} ({c.value:.2f}) {c.question!r}" for c in children)
        self.state.log.emit("expand", f"{node.id} → {listing}", node=node.id)
        return children

    async def _proposals(self, node: Node) -> list[SubQuestion]:
        """The planner's split, or the evidence's when its reply is unusable, vetted; the root
        is always split into more than one."""
        known = coverage.known_text(self.state, self.deep)
        taken = {n.question for n in self.state.tree.nodes.values()}
        proposed = await planner.decompose(self.gateway, self.state.question, node, known,
                                           self.config.max_children, taken, self.deep)
        from_evidence = proposed is None  # the planner's reply was unusable
        if proposed is None:
            proposed = await (self._split_from_evidence(node) if node.depth == 0
                              else self._split_by_sources(node))
        vetted = await judgement.vet_subquestions(self.similarity, self.state.asked, proposed,
                                                  taken, self.config)
        for question, why in vetted.rejected:
            self.state.log.emit("subquestion-refused", f"{question[:80]!r}: {why}", node=node.id)
        subs = vetted.accepted
        if len(subs) < 2 and node.depth == 0 and not from_evidence:
            subs += await self._widen_root(node, subs, taken)
        return subs

    async def _widen_root(self, node: Node, subs: list[SubQuestion],
                          taken: set[str]) -> list[SubQuestion]:
        """The evidence split's sub-questions beside a planner's plan of one (or none): the
        bundled model split "installers in X: day rates, backlog, a shortage?" into the one
        sub-question "How are installers doing in X?", and the run ended at step 2 of 8."""
        mine = taken | {s.question for s in subs}
        extra = [s for s in await self._split_from_evidence(node) if s.question not in mine]
        vetted = await judgement.vet_subquestions(self.similarity, self.state.asked, extra,
                                                  mine, self.config)
        room = max(0, self.config.max_children - len(subs))
        return vetted.accepted[:room]

    async def _split_from_evidence(self, node: Node) -> list[SubQuestion]:
        """The root's clauses that the sources retrieved for it speak to, and what those
        sources are about (`research_core.loop.planning.decomposition`); its queries are the
        run's."""
        plan = planner.query_fallback(node.asked)
        window = planner.time_range(plan, self.state.as_of, self.config.lookback_days)
        queries = await self.search.dedupe(plan.queries, self.state.sent_queries())
        results = await self.search.batch(queries, window) if queries else []
        hits = [h for _, h in self.admission.new_hits(node, results)]
        subs = await decomposition.split(self.similarity, self.state.asked, hits,
                                         self.config.max_children, self.config,
                                         self.state.as_of)
        self.state.log.emit("split-from-evidence", f"{len(hits)} hit(s) read for the split: "
                            + "; ".join(s.question for s in subs), node=node.id)
        return subs

    async def _split_by_sources(self, node: Node) -> list[SubQuestion]:
        """A sub-question still open after its rounds, without the planner: what the sources
        its queries retrieved but it did not keep are about."""
        seen = decomposition.retrieved_hits(self.state.extra.retrieved)
        titles = await decomposition.facets_of(
            self.similarity, node.asked, unkept_for(self.state, node, seen),
            [n.question for n in self.state.tree.nodes.values()], self.config.max_children,
            self.config, self.state.as_of, list(seen.values()))
        return subquestions.as_subquestions(titles, self.config.max_children)


def unkept_for(state: RunState, node: Node, seen: dict[str, SearchHit]) -> list[SearchHit]:
    """The hits `node`'s queries retrieved that it did not keep, kept for another sub-question
    or for none: what another sub-question keeps may still be a facet of this one."""
    kept = {e.source_id for e in state.kept_for({node.id})}
    found = {sid for q in state.queries if q.node_id == node.id
             for sid in q.result_ids if sid not in kept and sid in seen}
    return [seen[s] for s in sorted(found)]
