"""What a research round does with its hits: each new hit is scored into evidence, kept or
discarded with the reason, read in full where it is highly relevant to a node still short
of evidence (a body read, within the node's and the run's read caps), and added to working
memory (closed into a summary first when it is full)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from research_core.budget.owner import BudgetOwner
from research_core.loop.memory.evidence import Evidence, combined_score, credibility, recency
from research_core.loop.memory.goal_tree import Node
from research_core.loop.memory.state import QueryRecord, RunState
from research_core.models.schemas import HitScore
from research_core.protocols import SearchBackend, SearchHit, Similarity
from research_core.search.reading import deep_read
from research_core.search.tool import DatesPages, QueryResult
from research_core.settings import EngineSettings
from research_core.text.figures import figure_keys

RETRIEVED_SNIPPET_CHARS = 200  # what the run keeps of a retrieved hit it did not keep


class Admission:
    """Admits a run's hits as evidence (one per run, over its state)."""

    def __init__(self, state: RunState, config: EngineSettings, owner: BudgetOwner,
                 backend: SearchBackend, similarity: Similarity,
                 close_memory: Callable[[], Awaitable[None]]) -> None:
        self.state = state
        self.config = config
        self.owner = owner
        self.backend = backend
        self.similarity = similarity
        self.close_memory = close_memory

    def new_hits(self, node: Node, results: list[QueryResult]) -> list[tuple[str, SearchHit]]:
        """Hits not yet judged for this node, each with the id of the query that found it."""
        seen = self.state.judged_sources(node.id)
        fresh: list[tuple[str, SearchHit]] = []
        for result in results:
            qid = f"Q{len(self.state.queries) + 1}"
            self.state.queries.append(QueryRecord(
                qid, node.id, self.state.step, result.query, result.time_range, result.from_cache,
                [h.source_id for h in result.hits]))
            for hit in result.hits:
                self.state.extra.retrieved.setdefault(hit.source_id, [
                    hit.title, hit.source_type, hit.published.isoformat() if hit.published
                    else "", hit.snippet[:RETRIEVED_SNIPPET_CHARS]])
                if hit.source_id not in seen:
                    seen.add(hit.source_id)
                    fresh.append((qid, hit))
        return fresh

    async def admit(self, node: Node, hits: list[tuple[str, SearchHit]],
                     scores: list[HitScore]) -> None:
        items = []
        for (qid, hit), score in zip(hits, scores, strict=True):
            items.append(self._evidence(node, qid, hit, score))  # numbered in hit order
            self.state.evidence.append(items[-1])
        kept = len(self.state.kept_for({node.id})) - sum(e.kept for e in items)
        for item in sorted(items, key=lambda e: -e.score):  # the best are read first
            if not item.kept:
                self.state.log.emit("discard", f"{item.id} {item.source_id}: "
                                    f"{item.discarded_reason}", evidence=item.id, score=item.score)
                continue
            if self.state.working.full:
                self.state.log.emit("memory", "working memory at its cap of "
                                    f"{self.state.working.cap}")
                await self.close_memory()
            if self._needs_body(node, item, kept):
                await self._deep_read(node, item)
            kept += 1
            self.state.working.add(item)
            self.state.log.emit("keep", f"{item.id} {item.source_id}: score {item.score:.2f} "
                            f"(rel {item.relevance:.2f}) {item.reason[:80]}", evidence=item.id)

    def _needs_body(self, node: Node, item: Evidence, kept: int) -> bool:
        """Only highly relevant evidence for a node still short of evidence (`kept` items
        admitted before it) is read in full."""
        short = kept <= self.config.evidence_per_done_node
        return node.status == "open" and short and (
            item.relevance >= self.config.deep_read_relevance)

    async def _deep_read(self, node: Node, item: Evidence) -> None:
        """Replace a highly relevant hit's snippet by its body's best paragraphs."""
        if self.state.reads_for(node.id) >= self.config.deep_reads_per_node:
            node.status = "insufficient"
            self.state.log.emit("read-cap", f"{node.id}: body-read cap of "
                            f"{self.config.deep_reads_per_node} reached; marked insufficient "
                            "evidence", node=node.id)
            return
        if not self.owner.spend("reads"):
            return
        prefer = None if node.asked.why else stated_figures
        read = await deep_read(self.backend, self.similarity, node.id, node.question,
                               item.source_id, self.config.deep_read_paragraphs, prefer)
        if read is None:
            return
        self.state.deep_reads.append(read)
        item.text = read.text
        self._date_from_page(item)
        self.state.log.emit("deep-read", f"{item.id} {item.source_id}: {len(read.chosen)} of "
                        f"{read.paragraphs_total} paragraphs, ~{read.tokens_read} of "
                        f"~{read.tokens_full} tokens", tokens_read=read.tokens_read,
                        tokens_full=read.tokens_full, evidence=item.id)

    def _date_from_page(self, item: Evidence) -> None:
        """An undated hit takes the publish date its page states, and is rescored with it."""
        if item.published is not None or not isinstance(self.backend, DatesPages):
            return
        item.published = self.backend.published_of(item.source_id)
        if item.published is not None:
            item.recency = recency(item.published, self.state.as_of, self.config)
            item.score = combined_score(item.relevance, item.credibility, item.recency,
                                        self.config)

    def _evidence(self, node: Node, qid: str, hit: SearchHit, score: HitScore) -> Evidence:
        cred = credibility(hit.source_type)
        rec = recency(hit.published, self.state.as_of, self.config)
        total = combined_score(score.relevance, cred, rec, self.config)
        kept = total >= self.config.evidence_threshold
        why = "" if kept else (f"score {total:.2f} < {self.config.evidence_threshold} (rel "
                               f"{score.relevance:.2f}, cred {cred:.2f}, rec {rec:.2f})")
        return Evidence(
            id=f"E{len(self.state.evidence) + 1}", node_id=node.id, query_id=qid,
            source_id=hit.source_id, title=hit.title, url=hit.url, published=hit.published,
            source_type=hit.source_type, publisher=hit.publisher, text=hit.snippet,
            relevance=score.relevance, credibility=cred, recency=rec, score=total,
            reason=score.reason, kept=kept, discarded_reason=why,
        )



FIGURES_BONUS = 0.15  # a paragraph full of figures, for a question that asks for them
FIGURES_FULL = 6  # figures at which a paragraph gets the whole bonus


def stated_figures(paragraph: str) -> float:
    """How much a paragraph's figures add to its claim on a read: a table's rows, a page of
    prices rank above a page's introduction for a question that asks what the figures are."""
    return FIGURES_BONUS * min(1.0, len(figure_keys(paragraph)) / FIGURES_FULL)
