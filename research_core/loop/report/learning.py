"""A run's side of the query patterns (docs/learning.md): its proposed queries vetted against
the records earlier runs taught, and its own queries' outcomes added once its report is
written."""

from __future__ import annotations

from research_core.loop.memory.state import RunState
from research_core.loop.report.reporter import Report
from research_core.search import patterns
from research_core.search.patterns import PatternRecord, QueryLearning


class Learner:
    def __init__(self, learning: QueryLearning | None, state: RunState) -> None:
        self.learning = learning
        self.state = state
        self._records: list[PatternRecord] | None = None  # read once per run

    async def vet(self, queries: list[str], question: str) -> list[str]:
        """The proposed queries for `question`, vetted against the records."""
        if self.learning is None or not queries:
            return queries
        if self._records is None:
            self._records = await self.learning.records()
        return patterns.vet(queries, question, self._records,
                            lambda kind, text: self.state.log.emit(kind, text))

    async def teach(self, report: Report) -> None:
        """The finished run's queries, with what the report cited, go to their patterns."""
        if self.learning is None:
            return
        cited = set(report.cited_source_ids())
        nodes = self.state.tree.nodes
        rows = []
        for q in self.state.queries:
            kept = [e.source_id for e in self.state.evidence if e.query_id == q.id and e.kept]
            question = nodes[q.node_id].question if q.node_id in nodes else q.text
            rows.append((q.text, question, list(q.result_ids), kept))
        await self.learning.record(patterns.outcomes(rows, cited))
