"""Everything a run knows, in one place, so it can be checkpointed and resumed."""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from research_core.budget.axes import Mode, parse_mode
from research_core.delivery.publications import Publication
from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.goal_tree import GoalTree
from research_core.loop.memory.memory import Summary, WorkingMemory
from research_core.models.ledger import Ledger
from research_core.protocols import TimeRange
from research_core.runlog import RunLog
from research_core.search.reading import DeepRead
from research_core.settings import Settings
from research_core.text.asking import Asked


@dataclass(frozen=True)
class QueryRecord:
    id: str
    node_id: str
    step: int
    text: str
    time_range: TimeRange
    from_cache: bool
    result_ids: list[str]


RunStatus = Literal["running", "finished", "stopped", "failed"]
RUN_STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)


def parse_status(text: str) -> RunStatus:
    for status in RUN_STATUSES:
        if text == status:
            return status
    raise ValueError(f"run status {text!r} is not one of {', '.join(RUN_STATUSES)}")


@dataclass
class RunExtras:
    """What a run keeps beside its tree, memory and evidence, saved with each checkpoint."""

    budget: dict[str, Any] = field(default_factory=dict)  # the resource owner's own checkpoint
    part_evidence: dict[str, list[str]] = field(default_factory=dict)  # weighed per part
    followup_nodes: dict[str, str] = field(default_factory=dict)  # follow-up key -> node id
    announced: list[str] = field(default_factory=list)  # progress note keys already posted
    corpus: str = ""  # the corpus folder of a terminal run (so `resume` finds it)
    strategy: str = "hierarchical"  # hierarchical (the goal tree) or the monolithic baseline
    team: str = ""  # the Slack workspace the run belongs to ("" outside Slack)
    watch_since: str = ""  # a watch cycle searches only what is newer than this (ISO date)
    watch_from_step: int = 0  # the step a watch cycle started after (its queries are new)
    coverage: dict[str, dict[str, Any]] = field(default_factory=dict)  # node id (or "root")
    unknowns: list[str] = field(default_factory=list)  # root facets left uncovered
    upgrade_asks: int = 0  # how often the planner was asked whether to upgrade
    retrieved: dict[str, list[str]] = field(default_factory=dict)  # source id -> [title, type]
    steers_read: int = 0  # steers of the thread read so far (research_core.loop.review.steering)
    rechecked: list[str] = field(default_factory=list)  # nodes re-searched for corrections

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunExtras:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


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
    extra: RunExtras = field(default_factory=RunExtras)
    publications: list[Publication] = field(default_factory=list)
    step: int = 0
    status: RunStatus = "running"
    mode: Mode = "auto"
    requester: str | None = None

    @classmethod
    def new(cls, question: str, as_of: dt.date, settings: Settings, mode: str = "auto",
            requester: str | None = None) -> RunState:
        return cls(mode=parse_mode(mode), requester=requester,
            run_id=uuid.uuid4().hex[:12], question=question, as_of=as_of,
            tree=GoalTree.for_question(question),
            working=WorkingMemory(cap=settings.engine.working_memory_cap),
            ledger=Ledger(prices=dict(settings.tiers)),
        )

    @property
    def asked(self) -> Asked:
        """The run's question, read once: the root's reading."""
        return self.tree.root.asked

    def kept(self) -> list[Evidence]:
        return [e for e in self.evidence if e.kept]

    def kept_for(self, node_ids: set[str]) -> list[Evidence]:
        return [e for e in self.evidence if e.kept and e.node_id in node_ids]

    def judged_sources(self, node_id: str) -> set[str]:
        return {e.source_id for e in self.evidence if e.node_id == node_id}

    def reads_for(self, node_id: str) -> int:
        return sum(r.node_id == node_id for r in self.deep_reads)

    def sent_queries(self) -> list[str]:
        """The queries of this run (of this watch cycle only, in a watch cycle: the same
        query asks something new of a newer time range)."""
        return [q.text for q in self.queries if q.step > self.extra.watch_from_step]
