"""Answer parts of finished sub-questions: published when the cadence says they are ready,
revised in place when later evidence corrects a figure they state (`corrections`), or when
later evidence about their own facet (close to their question, and naming what sets it apart
from the root question) brings figures they lack. A part's revisions are bounded (the
design's 2 per part in standard): new figures never take a part's last revision, which stays
for a correction. Where the summary fell back, the part is the extractive builder's
(`research_core.loop.answering`); the model, where one is configured, says there whether two
bodies' figures set side by side are two counts (`builder.conflict_lines`)."""

from __future__ import annotations

from collections.abc import Sequence

from research_core.delivery.publications import Delivery
from research_core.loop.answering import builder
from research_core.loop.answering.completion import Reader, local_reader, page_lines
from research_core.loop.gathering import executor
from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.goal_tree import Node
from research_core.loop.memory.memory import Summary
from research_core.loop.memory.pool import Line, lines_of
from research_core.loop.memory.state import RunState
from research_core.loop.publishing import cadence, followup
from research_core.loop.publishing.corrections import Correction, corrections
from research_core.loop.report import claims
from research_core.loop.review import coverage
from research_core.models.gateway import Gateway
from research_core.protocols import SearchBackend, Similarity
from research_core.settings import EngineSettings
from research_core.text.figures import figures_in, states_figure, telling_figures
from research_core.text.sentences import sentences
from research_core.text.terms import speaks_to

PARTS_SHARE = 2 / 3  # of the reading budget; the report has the rest
MIN_PARTS = 3


class Parts:
    def __init__(self, state: RunState, delivery: Delivery, gw: Gateway,
                 similarity: Similarity, cfg: EngineSettings,
                 backend: SearchBackend | None = None) -> None:
        self.state = state
        self.delivery = delivery
        self.gateway = gw
        self.similarity = similarity
        self.config = cfg
        self.reason_prefix = ""  # a watch cycle's revisions say "update <date>: …"
        # pages that complete cut snippets (the local corpus's; None: none)
        self.read: Reader | None = local_reader(backend) if backend else None
        self._verdicts: dict[tuple[str, str], bool | None] = {}  # the model's, per claim

    async def publish(self, node: Node, deep: bool) -> None:
        """A finished sub-question's part goes out when the cadence says it is ready."""
        summary = self.state.summaries.get(node.id)
        if summary is None or node.id in followup.followup_node_ids(self.state):
            return
        if self.delivery.latest(node.id) is not None:  # published before a crash
            self._weigh(node.id, [e.id for e in self.state.kept_for({node.id})])
            return
        judged = self.state.extra.coverage.get(node.id)
        answered = node.status == "done" or bool(judged and judged.get(coverage.VERIFYING))
        if cadence.ready(summary, answered, deep, judged):
            text = await self._text(node, summary, self.state.kept_for({node.id}))
            await self.delivery.part(node.id, text, summary.source_ids)
            self._weigh(node.id, [e.id for e in self.state.kept_for({node.id})])

    async def revise_all(self, deep: bool = False) -> None:
        """Later evidence with new figures on a published part's question revises it."""
        for part in self.delivery.parts():
            if part.part_key in self.state.tree.nodes:
                await self._revise(self.state.tree.nodes[part.part_key], part.text, deep)

    def _others(self, node: Node) -> list[str]:
        """The root question, then the node's siblings' questions."""
        tree = self.state.tree
        parent = tree.nodes.get(node.parent_id or "")
        siblings = [tree.nodes[c].question for c in (parent.children if parent else [])
                    if c != node.id]
        return [self.state.question, *siblings]

    def _weighed(self, part_key: str) -> set[str]:
        """Evidence already weighed for a published part (kept in the checkpoint)."""
        return set(self.state.extra.part_evidence.get(part_key, []))

    def _weigh(self, part_key: str, evidence_ids: list[str]) -> None:
        parts = self.state.extra.part_evidence
        parts[part_key] = sorted(set(parts.get(part_key, [])) | set(evidence_ids))

    async def _revise(self, node: Node, published: str, deep: bool) -> None:
        weighed = self._weighed(node.id)
        fresh = [e for e in self.state.kept() if e.id not in weighed]
        if not fresh:
            return
        self._weigh(node.id, [e.id for e in fresh])
        scores = (await self.similarity.matrix([node.question], [e.text for e in fresh]))[0]
        close = [e for e, sc in zip(fresh, scores, strict=True)
                 if sc >= self.config.revise_similarity
                 and speaks_to(e.text, node.question, self._others(node))]
        corrected = await self._corrections(node, fresh, published)
        adding = cadence.revising_evidence(published, close) if self._spare(node.id) else []
        news = list({e.id: e for e in [*(c.later.evidence for c in corrected),
                                       *adding]}.values())
        if not news:
            return
        summary = await executor.summarise(self.gateway, node.id, node.question, news,
                                           self.state.summaries.get(node.id), deep)
        self.state.summaries[node.id] = summary
        sources = frozenset(e.source_id for e in news)
        how = "corrected by " if corrected else "new evidence from "
        reason = self.reason_prefix + how + ", ".join(sorted(sources))
        text = await self._text(node, summary, [*news, *self.state.kept_for({node.id})],
                                sources, [c.later for c in corrected])
        await self.delivery.part(node.id, text, summary.source_ids, reason=reason)

    async def _corrections(self, node: Node, fresh: list[Evidence], published: str
                           ) -> list[Correction]:
        """Later evidence, kept for any sub-question, that gives another value for a figure
        the `published` part states (`corrections`): a correction revises the part it
        corrects, and no other. The sources' pages are read whole where reading is free: a
        kept snippet may be a table's row alone."""
        recent = {e.id for e in fresh}  # kept for the part's own sub-question (a recheck) too
        own = [e for e in self.state.kept_for({node.id}) if e.id not in recent]
        latest = self.delivery.latest(node.id)
        # a source kept twice is no news, nor one the part cites already (a correction kept
        # again for another sub-question once revised the part it had revised a second time)
        known = {e.source_id for e in own} | set(latest.sources if latest else [])
        new = [f for f in fresh if f.source_id not in known]
        if not new:
            return []
        lines = await self._lines(own)
        stated = [ln for ln in lines if _states_one(published, ln.text)]
        return await corrections(self.similarity, stated, await self._lines(new), published,
                                 lines)

    def _spare(self, part_key: str) -> bool:
        """Whether the part has a revision to spare for new figures: more than one left, so
        that its last stays for a correction (a run once spent a part's two on new figures
        and refused the correction that followed)."""
        owner = self.delivery.owner
        if owner is None:
            return True
        return owner.revisions.get(part_key, 0) + 1 < owner.revision_limits.per_part

    async def _judge(self, claim: str, passage: str) -> bool | None:
        """The model's word on a claim against one passage (the claim check's call), once per
        claim; None where no model answers."""
        key = (claim, passage)
        if key not in self._verdicts:
            asked = claims.Claim(claim, [1], figures_in(claim))
            verdict = (await claims.judge_claims(self.gateway, [asked], {1: [passage]}))[0]
            self._verdicts[key] = None if verdict is None else verdict.supported
        return self._verdicts[key]

    async def _lines(self, items: list[Evidence]) -> list[Line]:
        """The items' and their pages' sentences that an answer may cite."""
        lines = lines_of(items, await page_lines(items, self.read))
        return builder.usable(lines, lambda e: e.source_id)

    async def _text(self, node: Node, summary: Summary, items: list[Evidence],
                    first: frozenset[str] = frozenset(), leading: Sequence[Line] = ()) -> str:
        """The model's summary as a part; a fallback summary's part is extractive: the node's
        best sentences not already said by another part, each citing its source id, the
        `leading` ones (the sentences that correct it) first."""
        if not summary.lossless_fallback:
            return cadence.part_text(summary, first)
        said = [s for p in self.delivery.parts() if p.part_key != node.id
                for s in sentences(p.text, clauses=False)]
        return await builder.part(self.similarity, builder.Section(node.question, items),
                                  lambda e: f"[{e.source_id}]", said, self.read,
                                  self._budget(), leading, self._judge)

    def _budget(self) -> int:
        """A part's share of the reading budget: the parts share what the report leaves
        them, one share per sub-question of the plan (three at least)."""
        subs = [n for n in self.state.tree.nodes.values() if n.depth == 1
                and n.status != "pruned"]
        share = self.config.reading_budget_chars * PARTS_SHARE
        return int(share / max(MIN_PARTS, len(subs)))


def _states_one(published: str, text: str) -> bool:
    """Whether the published part states one of the telling figures of `text` (a year it
    shares with every line of the period is none)."""
    return any(states_figure(published, f) for f in telling_figures(text))
