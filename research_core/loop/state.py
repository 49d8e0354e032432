"""Everything a run knows, in one place, so it can be checkpointed and resumed."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import Any

from research_core.delivery.publications import Publication
from research_core.loop.evidence import Evidence
from research_core.loop.goal_tree import GoalTree
from research_core.loop.memory import Summary, WorkingMemory
from research_core.models.ledger import Ledger
from research_core.protocols import TimeRange
from research_core.runlog import RunLog
from research_core.search.reading import DeepRead
from research_core.settings import Settings


@dataclass(frozen=True)
class QueryRecord:
    id: str
    node_id: str
    step: int
    text: str
    time_range: TimeRange
    from_cache: bool
    result_ids: list[str]


@dataclass
class RunState:
    run_id: str
    question: str
    as_of: dt.date
    tree: GoalTree
    working: WorkingMemory
    ledger: Ledger
    log: RunLog = field(default_factory=RunLog)
    summaries: dict[str, Summary] = field(default_factory=dict)
    evidence: list[Evidence] = field(default_factory=list)
    queries: list[QueryRecord] = field(default_factory=list)
    deep_reads: list[DeepRead] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    publications: list[Publication] = field(default_factory=list)
    step: int = 0
    status: str = "running"
    mode: str = "auto"
    requester: str | None = None

    @classmethod
    def new(cls, question: str, as_of: dt.date, settings: Settings, mode: str = "auto",
            requester: str | None = None) -> RunState:
        return cls(mode=mode, requester=requester,
            run_id=uuid.uuid4().hex[:12], question=question, as_of=as_of,
            tree=GoalTree.for_question(question),
            working=WorkingMemory(cap=settings.engine.working_memory_cap),
            ledger=Ledger(prices=dict(settings.tiers)),
        )

    def kept(self) -> list[Evidence]:
        return [e for e in self.evidence if e.kept]

    def kept_for(self, node_ids: set[str]) -> list[Evidence]:
        return [e for e in self.evidence if e.kept and e.node_id in node_ids]

    def judged_sources(self, node_id: str) -> set[str]:
        return {e.source_id for e in self.evidence if e.node_id == node_id}

    def reads_for(self, node_id: str) -> int:
        return sum(r.node_id == node_id for r in self.deep_reads)

    def sent_queries(self) -> list[str]:
        return [q.text for q in self.queries]
