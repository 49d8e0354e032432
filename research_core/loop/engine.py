"""The REDSearcher loop: greedy goal-tree research with scored evidence, bounded memory,
periodic reflection, and one report at the end (docs/design.md §1)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from research_core import runlog
from research_core.budget.axes import Decision, parse_mode
from research_core.budget.caps import CapGuard
from research_core.budget.owner import BudgetOwner
from research_core.delivery.publications import Delivery, Outbox, Publication
from research_core.loop.answering.completion import Reader
from research_core.loop.gathering import across as across_languages
from research_core.loop.gathering import executor, relevance
from research_core.loop.gathering.admission import Admission
from research_core.loop.memory.goal_tree import Node
from research_core.loop.memory.state import RunState
from research_core.loop.planning import planner
from research_core.loop.publishing import followup, watch
from research_core.loop.publishing.answer_stream import AnswerStream
from research_core.loop.publishing.parts import Parts
from research_core.loop.publishing.progress_notes import Announcer
from research_core.loop.report import writing
from research_core.loop.report.learning import Learner
from research_core.loop.report.reporter import Report
from research_core.loop.review import coverage, gaps, steering, upgrade
from research_core.loop.review.expansion import Expansion
from research_core.loop.review.reflection import reflect_and_correct
from research_core.models.embeddings import build_similarity
from research_core.models.gateway import Gateway
from research_core.protocols import ModelTier, Publisher, SearchBackend, Similarity, SteerSource
from research_core.question import validate_question
from research_core.search.patterns import QueryLearning
from research_core.search.tool import (
    HitCache,
    QueryResult,
    RemembersHits,
    SearchTool,
)
from research_core.settings import Settings
from research_core.wording import for_question

FEEDBACK_TEXTS = 5  # a node's best judged hits its next round's query learns words from


class Checkpointer(Protocol):
    """Where a run's state is saved after every step (the store)."""

    async def save_checkpoint(self, state: RunState) -> None: ...

    async def save_report(self, run_id: str, report: Report) -> None: ...

    async def load_report(self, run_id: str) -> Report | None: ...


class RunStore(Checkpointer, Outbox, Protocol):
    """The store as the engine needs it: checkpoints and the publication outbox."""


class StoreAndCache(RunStore, HitCache, Protocol):
    """A store that also keeps the search cache (the SQL store does both)."""


@dataclass
class Engine:
    settings: Settings
    tiers: Mapping[str, ModelTier]
    backend: SearchBackend
    store: RunStore
    cache: HitCache
    similarity: Similarity
    publisher: Publisher | None = None
    exhaustive: bool = False  # every step of the budget: see `_Research.next_node`
    caps: CapGuard | None = None  # the run's spending caps (docs/teams.md); None: no caps
    learning: QueryLearning | None = None  # query patterns' records (docs/learning.md)
    steers: SteerSource | None = None  # what people write to the running research

    @classmethod
    def build(cls, settings: Settings, tiers: Mapping[str, ModelTier], backend: SearchBackend,
              store: StoreAndCache, *, similarity: Similarity | None = None,
              publisher: Publisher | None = None, exhaustive: bool = False,
              caps: CapGuard | None = None,
              learning: QueryLearning | None = None,
              steers: SteerSource | None = None) -> Engine:
        """The engine as every entry point builds it (CLI, evaluation, workers): the store is
        also the search cache; the similarity is the configured embedder unless given.
        `exhaustive` (equal-work benchmarks) uses every step instead of ending early;
        `learning`: proposed queries are vetted against the query patterns' records, and a
        finished run adds its queries' outcomes to them; `steers`: people's steers, read
        before each step (`research_core.loop.review.steering`)."""
        return cls(settings, tiers, backend, store, cache=store,
                   similarity=similarity or build_similarity(settings.embedding),
                   publisher=publisher, exhaustive=exhaustive, caps=caps,
                   learning=learning, steers=steers)

    async def run(self, state: RunState) -> Report:
        """Research until no node is open or the step limit is reached, then report."""
        research = _Research(self, state)
        with runlog.bound(state.log):
            return await research.run()

    async def follow_up(self, state: RunState, question: str,
                        key: str) -> followup.FollowUpAnswer:
        """Answer a follow-up in the run's thread: from memory, researching only if needed."""
        research = _Research(self, state)
        asked = validate_question(question, self.settings.engine.max_question_chars)
        stream = research.delivery.stream(key)
        research.gateway.stream_to("followup", AnswerStream(stream) if stream else None)
        with runlog.bound(state.log):
            done = await followup.answer(research, asked, key,
                                         self.settings.engine.followup_steps)
        await research.checkpoint()
        return done

    async def watch_cycle(self, state: RunState, as_of: dt.date) -> list[Publication]:
        """Research a finished run again as of `as_of`, from its tree, evidence and findings,
        searching only what is newer than its last date; returns the parts revised."""
        run = watch.prepare(state, as_of)
        research = _Research(self, state)
        research.parts.reason_prefix = watch.reason_prefix(as_of)
        with runlog.bound(state.log):
            return await watch.cycle(research, research.delivery, state, run)


class _Research:
    """One run's loop, over its state."""

    def __init__(self, engine: Engine, state: RunState) -> None:
        self.engine = engine
        self.state = state
        self.config = engine.settings.engine
        self.owner = _owner(engine.settings, state)
        self._nodes_at_last_regrowth = -1
        self.learner = Learner(engine.learning, state)
        self._decided: Decision | None = None  # the owner's decision on a pending upgrade
        self.gateway = Gateway(engine.tiers, state.ledger, state.log, self.config.json_max_tokens,
                          permit=lambda: bool(self.owner.spend("model_calls")))
        self.search = SearchTool(engine.backend, engine.cache, self.config, state.log,
                                 engine.similarity,
                                 permit_read=lambda: bool(self.owner.spend("reads")),
                                 scope=state.extra.team)
        self.delivery = Delivery(state.run_id, engine.publisher, engine.store, state.log,
                                 state.publications, self.owner)
        self.announcer = Announcer(state, self.delivery)
        self.admission = Admission(state, self.config, self.owner, engine.backend,
                                   engine.similarity, self.close_working_memory)
        self.parts = Parts(state, self.delivery, self.gateway, engine.similarity, self.config,
                           engine.backend)
        self.expansion = Expansion(state, self.owner, self.gateway, engine.similarity,
                                   self.search, self.admission, self.config)
        if isinstance(engine.backend, RemembersHits):  # a resumed run can read its pages
            engine.backend.remember([e.as_hit() for e in state.evidence])

    @property
    def similarity(self) -> Similarity:
        return self.engine.similarity

    @property
    def read(self) -> Reader | None:
        return self.parts.read

    @property
    def deep(self) -> bool:
        """Composed afresh every turn: only an applied deep changes behaviour."""
        return self.owner.deep_applied

    async def run(self) -> Report:
        what = "resume" if self.state.step else "start"
        self.state.log.emit(what, f"run {self.state.run_id}: {self.state.question!r} as of "
                        f"{self.state.as_of}, {self.owner.mode} mode", run_id=self.state.run_id)
        if self.state.status == "finished":  # resumed after the end: deliver what is missing
            return await self._report()
        await self._charge()  # how the caps stand before the first step (a resume included)
        if what == "start":  # a sign of life before the first (slow) model call
            w = for_question(self.state.question)
            await self.delivery.progress(w(
                "Planning: splitting the question into sub-questions ({mode}, up to {n} "
                "steps)", mode=w(self.owner.mode), n=self.owner.total('steps')), key="start")
        while await self._research_until_covered():
            pass
        self.state.log.emit("finalise", self.owner.final_reason or "no open sub-question left")
        await steering.close_steers(self.engine.steers, self.state)  # no step reads them now
        await self.close_working_memory()
        await self.announcer.at_end()
        return await self._report()

    async def _research_until_covered(self) -> bool:
        """Step through the open sub-questions; True when the root check added new ones."""
        while (node := await self._steered_next()) is not None and self.may_step():
            await self.step(node)
        if node is not None:  # stopped by the budget: unknowns by the embedder (the model
            await gaps.judge_and_record(self.gateway, self.similarity, self.state,  # calls
                                        self.config, deep=False)  # left are the report's)
            return False
        return await gaps.refill(self.gateway, self.similarity, self.state, self.owner,
                                 self.delivery, self.config, self.deep) or await self._recheck()

    async def _recheck(self) -> bool:
        """Steps left and nothing more to research (either mode): one more round for the most
        valuable sub-question whose part leans on figures, seeking their corrections and
        newer versions, each sub-question once, while steps last.
        Without it a correction published after the first part was never read (issue 25;
        keeping half the steps back for the answer revised no part on suites written after
        it, issue 42). True when a step was spent."""
        if self.owner.finalising or self.owner.available("steps") < 1:
            return False
        nodes = [n for n in self.state.tree.nodes.values() if n.depth > 0 and n.status == "done"
                 and n.id not in self.state.extra.rechecked
                 and coverage.relied_figures(self.state, n)]
        if not nodes or not self.may_step():
            return False
        node = max(nodes, key=lambda n: n.value)  # the first on ties
        await self.close_working_memory()  # the part out first: what a correction revises
        self.state.working.reset(node.id)  # its own progress line below, no "Checking:" twice
        self.state.extra.rechecked.append(node.id)
        self.state.log.emit("recheck", f"{node.id}: steps left; seeking corrections and newer "
                            "versions of the figures its part states", node=node.id)
        w = for_question(self.state.question)
        await self.delivery.progress(w("Checking for corrections and newer figures: {question}",
                                       question=node.question), key=f"recheck-{node.id}")
        await self.step(node, seek_corrections=True)
        return True

    async def _steered_next(self) -> Node | None:
        """The next node, once the steers written since the last step are applied."""
        await steering.read_steers(self.engine.steers, self.gateway, self.state, self.owner,
                                   self.similarity, self.config,
                                   steering.planner_steers(self.engine.settings))
        return self.next_node()

    def next_node(self) -> Node | None:
        """The most valuable open sub-question. An exhaustive run (equal-work benchmarks) does
        not end when none is open: the root is expanded again, until an expansion adds none."""
        node = self.state.tree.next_open(breadth_first=self.deep)
        if node is not None or not self.engine.exhaustive:
            return node
        if len(self.state.tree.nodes) == self._nodes_at_last_regrowth:
            self.state.log.emit("exhausted", "the tree is exhausted: expanding the root again "
                                "added no sub-question")
            return None
        self._nodes_at_last_regrowth = len(self.state.tree.nodes)
        root = self.state.tree.nodes[self.state.tree.root_id]
        root.status = "open"
        return root

    def may_step(self) -> bool:
        self._decided = self.owner.apply_pending()
        if self.owner.finalising:
            return False
        return bool(self.owner.spend("steps"))

    async def step(self, node: Node, seek_corrections: bool = False) -> None:
        self.state.step += 1
        self.state.log.step = self.state.step
        await upgrade.announce(self.state, self.delivery, self._decided)
        self._decided = None
        if node.id != self.state.working.node_id:
            await self._switch_to(node)
        picked = await self._expand_and_pick(node) if coverage.should_expand(
            node, self.config) else node
        if picked is not None:
            node = picked
            await self._research_round(node, seek_corrections)
        if self.state.step % self.config.reflect_every_steps == 0:
            await reflect_and_correct(self.gateway, self.state, node, self.owner, self.similarity,
                                      self.config)
        self.state.tree.settle_parents()
        await self.parts.revise_all(self.deep)
        await upgrade.consider(self.gateway, self.state, self.owner, self.delivery)
        await self.announcer.after_step()
        await self.checkpoint()

    async def revise_parts(self) -> None:
        await self.parts.revise_all()

    async def checkpoint(self) -> None:
        await self._charge()
        self.state.extra.budget = self.owner.to_dict()
        await self.engine.store.save_checkpoint(self.state)

    async def _charge(self) -> None:
        """Charge what the run has spent to its user and channel; a spending cap reached
        moves it to finalisation, and the thread is told."""
        if self.engine.caps is None:
            return
        totals = self.state.ledger.totals()
        tokens, cost = sum(t.total_tokens for t in totals), sum(t.cost_usd for t in totals)
        status = await self.engine.caps.charge(tokens, cost)
        if self.state.status != "running":
            return  # the report is written (or a follow-up answered): charged, nothing to end
        was_final = self.owner.final_reason is not None
        self.owner.note_caps(status, tokens, cost)
        if status.reached is not None and not was_final:
            w = for_question(self.state.question)
            await self.delivery.progress(w(
                "Spending cap reached: {what}. Writing the report from what I have found so "
                "far.", what=status.reached.message(w)), key="cap-reached")

    async def _switch_to(self, node: Node) -> None:
        """Sub-question switch: rewrite the previous one's working memory into a summary."""
        await self.close_working_memory()
        self.state.working.reset(node.id)
        self.state.log.emit("focus", f"{node.id} (value {node.value:.2f}): {node.question}",
                        node=node.id)
        if node.depth > 0:
            w = for_question(self.state.question)
            await self.delivery.progress(w("Checking: {question}", question=node.question),
                                         key=f"s{self.state.step}-{node.id}")

    async def close_working_memory(self) -> None:
        wm = self.state.working
        if wm.node_id is None or not wm.items:
            return
        node = self.state.tree.nodes[wm.node_id]
        previous = self.state.summaries.get(node.id)
        summary = await executor.summarise(self.gateway, node.id, node.question, wm.items, previous,
                                           self.deep, self.config.summary_model_min_chars)
        self.state.summaries[node.id] = summary
        how = "lossless fallback" if summary.lossless_fallback else "model summary"
        self.state.log.emit("memory", f"{node.id}: {len(wm.items)} items → summary v"
                        f"{summary.version} ({how})", node=node.id)
        wm.items = []
        await self.parts.publish(node, self.deep)

    async def _expand_and_pick(self, node: Node) -> Node | None:
        """Split `node` and research its best new sub-question in the same step: no step is
        spent on planning alone (issue 27). None when the split added none."""
        children = await self.expansion.expand(node)
        if not children:
            return None
        best = max(children, key=lambda c: c.value)  # the first on ties
        await self._switch_to(best)
        return best

    def _feedback(self, node: Node) -> list[str]:
        """The texts a node's next round learns its words from: its best-scored judged hits,
        kept or not (pseudo-relevance feedback)."""
        judged = [e for e in self.state.evidence if e.node_id == node.id]
        return [e.text for e in sorted(judged, key=lambda e: -e.score)[:FEEDBACK_TEXTS]]

    async def _research_round(self, node: Node, seek_corrections: bool = False) -> None:
        plan = await planner.plan_queries(self.gateway, node, self.state.sent_queries(),
                                          self.state.as_of, self.config.query_variants,
                                          self.deep or seek_corrections,
                                          coverage.relied_figures(self.state, node),
                                          self._feedback(node))
        window = watch.narrowed(
            planner.time_range(plan, self.state.as_of, self.config.lookback_days), self.state)
        across = across_languages.figures_query(  # the node's own sources, once it has some
            node.asked, self.state.kept_for({node.id}) or self.state.kept())
        fresh, twins = await self.search.sift([*plan.queries, *([across] if across else [])],
                                              self.state.sent_queries())
        queries = await self.learner.vet(fresh, node.question)
        results = [*(await self.search.batch(queries, window) if queries else []),
                   *await self._asked_before(twins)]
        hits = self.admission.new_hits(node, across_languages.stating(results, across))
        node.rounds += 1
        if hits:
            found = [h for _, h in hits]
            scores = await relevance.judge(self.gateway, self.similarity, node.question, found,
                                           self.config, self.state.log, self.state.asked.topic)
            await self.admission.admit(node, hits, scores)
        await coverage.settle(self.gateway, self.similarity, self.state, node, self.config,
                              self.deep)

    async def _asked_before(self, twins: list[str]) -> list[QueryResult]:
        """The hits that the queries a sub-question's plan repeats found when the run asked
        them for another, from the cache, to be judged for this sub-question: a query asked
        before is not sent again, but what it found may answer this one, whether or not the
        plan also has new queries."""
        ranges = {q.text: q.time_range for q in self.state.queries}
        found = [await self.search.cached(t, ranges[t]) for t in twins if t in ranges]
        return [r for r in found if r is not None]

    async def _report(self) -> Report:
        """The report: written and checked once and saved before it is published, so a
        resumed run publishes the saved one (no new model call) if it is not out yet."""
        report = await self.engine.store.load_report(self.state.run_id)
        if report is None:
            report = await writing.write(self.gateway, self.state, self.delivery, self.config,
                                         self.similarity, self.parts.read, self.deep)
            await self.engine.store.save_report(self.state.run_id, report)
            await self.learner.teach(report)
        if self.delivery.latest("report") is None:  # not already out before a crash
            await self.delivery.part("report", report.render(), report.cited_source_ids())
        if self.state.status != "finished":
            self.state.status = "finished"
            self.state.log.emit("budget", "usage at the end:\n" + self.owner.usage_table())
        await self.checkpoint()
        return report


def _owner(settings: Settings, state: RunState) -> BudgetOwner:
    """The run's resource owner: restored from the checkpoint, or started for its mode."""
    saved = state.extra.budget
    if saved:
        return BudgetOwner.from_dict(saved, settings.budget, emit=state.log.emit)
    return BudgetOwner.start(settings.budget, parse_mode(state.mode), state.requester,
                             emit=state.log.emit)
