"""Rebuilds a run's state from its last checkpoint, so a killed run resumes where it stopped."""

from __future__ import annotations

from typing import Any

from research_core.budget.axes import parse_mode
from research_core.errors import RunNotFound
from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.goal_tree import GoalTree, Node
from research_core.loop.memory.memory import Summary, WorkingMemory
from research_core.loop.memory.state import QueryRecord, RunExtras, RunState, parse_status
from research_core.models.ledger import Ledger, LedgerEntry
from research_core.protocols import TimeRange
from research_core.runlog import LogEvent, RunLog
from research_core.search.reading import DeepRead
from research_core.settings import Settings
from research_core.store.models import (
    EventRow,
    EvidenceRow,
    LedgerRow,
    NodeRow,
    QueryRow,
    SummaryRow,
)
from research_core.store.sql import SqlStore


async def load_state(store: SqlStore, run_id: str, settings: Settings) -> RunState:
    run = await store.run_row(run_id)
    if run is None:
        raise RunNotFound(f"no stored run with id {run_id!r}")
    evidence = [_evidence(r) for r in _by_number(await store.rows(EvidenceRow, run_id), "E")]
    state = RunState(
        run_id=run_id, question=run.question, as_of=run.as_of,
        tree=_tree(await store.rows(NodeRow, run_id)),
        working=_working(run.working, evidence, settings.engine.working_memory_cap),
        ledger=Ledger(prices=dict(settings.tiers),
                      entries=[_entry(r) for r in sorted(await store.rows(LedgerRow, run_id),
                                                         key=lambda r: r.seq)]),
        log=_log(await store.rows(EventRow, run_id), run.step),
        summaries={r.node_id: _summary(r) for r in sorted(
            await store.rows(SummaryRow, run_id), key=lambda r: int(r.node_id[1:]))},
        evidence=evidence,
        queries=[_query(r) for r in _by_number(await store.rows(QueryRow, run_id), "Q")],
        step=run.step, status=parse_status(run.status),
        deep_reads=[DeepRead(**d) for d in run.working.get("deep_reads", [])],
        extra=RunExtras.from_dict(dict(run.working.get("extra", {}))),
        publications=await store.publications(run_id),
    )
    state.mode = parse_mode(str(state.extra.budget.get("mode") or "auto"))
    return state


def _by_number(rows: list[Any], prefix: str) -> list[Any]:
    key = "evidence_id" if prefix == "E" else "query_id"
    return sorted(rows, key=lambda r: int(getattr(r, key)[1:]))


def _tree(rows: list[NodeRow]) -> GoalTree:
    tree = GoalTree()
    for r in sorted(rows, key=lambda r: int(r.node_id[1:])):
        tree.nodes[r.node_id] = Node(
            id=r.node_id, question=r.question, value=r.value, depth=r.depth,
            parent_id=r.parent_id, status=r.status,  # type: ignore[arg-type]
            rounds=r.rounds, children=list(r.children))
    return tree


def _evidence(r: EvidenceRow) -> Evidence:
    return Evidence(
        id=r.evidence_id, node_id=r.node_id, query_id=r.query_id, source_id=r.source_id,
        title=r.title, url=r.url, published=r.published, source_type=r.source_type,
        publisher=r.publisher, text=r.text, relevance=r.relevance, credibility=r.credibility,
        recency=r.recency, score=r.score, reason=r.reason, kept=r.kept,
        discarded_reason=r.discarded_reason)


def _working(data: dict[str, Any], evidence: list[Evidence], cap: int) -> WorkingMemory:
    by_id = {e.id: e for e in evidence}
    items = [by_id[i] for i in data.get("items", []) if i in by_id]
    return WorkingMemory(cap=cap, node_id=data.get("node_id"), items=items)


def _entry(r: LedgerRow) -> LedgerEntry:
    return LedgerEntry(seq=r.seq, tier=r.tier, model=r.model, purpose=r.purpose, step=r.step,
                       prompt_tokens=r.prompt_tokens, completion_tokens=r.completion_tokens,
                       cost_usd=r.cost_usd, outcome=r.outcome)


def _log(rows: list[EventRow], step: int) -> RunLog:
    events = [LogEvent(seq=r.seq, step=r.step, kind=r.kind, message=r.message,
                       data=dict(r.data or {}), at=r.at)
              for r in sorted(rows, key=lambda r: r.seq)]
    return RunLog(events=events, step=step)


def _summary(r: SummaryRow) -> Summary:
    return Summary(node_id=r.node_id, question=r.question, conclusion=r.conclusion,
                   evidence=list(r.evidence), open_doubts=list(r.open_doubts),
                   source_ids=list(r.source_ids), lossless_fallback=r.lossless_fallback,
                   version=r.version)


def _query(r: QueryRow) -> QueryRecord:
    return QueryRecord(r.query_id, r.node_id, r.step, r.text, TimeRange(r.since, r.until),
                       r.from_cache, list(r.result_ids))
