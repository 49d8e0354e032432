"""SQLAlchemy tables: runs, goal-tree nodes, queries, evidence, summaries, ledger, reports."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, Date, DateTime, Float, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class RunRow(Base):
    __tablename__ = "runs"
    run_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    question: Mapped[str] = mapped_column(Text)
    as_of: Mapped[dt.date] = mapped_column(Date)
    status: Mapped[str] = mapped_column(String(20))
    step: Mapped[int] = mapped_column(Integer)
    working: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))


class NodeRow(Base):
    __tablename__ = "nodes"
    run_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    node_id: Mapped[str] = mapped_column(String(16), primary_key=True)
    parent_id: Mapped[str | None] = mapped_column(String(16))
    question: Mapped[str] = mapped_column(Text)
    value: Mapped[float] = mapped_column(Float)
    depth: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(20))
    rounds: Mapped[int] = mapped_column(Integer)
    children: Mapped[list[Any]] = mapped_column(JSON)


class QueryRow(Base):
    __tablename__ = "queries"
    run_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    query_id: Mapped[str] = mapped_column(String(16), primary_key=True)
    node_id: Mapped[str] = mapped_column(String(16))
    step: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    since: Mapped[dt.date | None] = mapped_column(Date)
    until: Mapped[dt.date | None] = mapped_column(Date)
    from_cache: Mapped[bool] = mapped_column(Boolean)
    result_ids: Mapped[list[Any]] = mapped_column(JSON)


class EvidenceRow(Base):
    __tablename__ = "evidence"
    run_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    evidence_id: Mapped[str] = mapped_column(String(16), primary_key=True)
    node_id: Mapped[str] = mapped_column(String(16))
    query_id: Mapped[str] = mapped_column(String(16))
    source_id: Mapped[str] = mapped_column(String(200))
    title: Mapped[str] = mapped_column(Text)
    url: Mapped[str] = mapped_column(Text)
    published: Mapped[dt.date | None] = mapped_column(Date)
    source_type: Mapped[str] = mapped_column(String(40))
    publisher: Mapped[str] = mapped_column(Text)
    text: Mapped[str] = mapped_column(Text)
    relevance: Mapped[float] = mapped_column(Float)
    credibility: Mapped[float] = mapped_column(Float)
    recency: Mapped[float] = mapped_column(Float)
    score: Mapped[float] = mapped_column(Float)
    reason: Mapped[str] = mapped_column(Text)
    kept: Mapped[bool] = mapped_column(Boolean)
    discarded_reason: Mapped[str] = mapped_column(Text)


class SummaryRow(Base):
    __tablename__ = "summaries"
    run_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    node_id: Mapped[str] = mapped_column(String(16), primary_key=True)
    question: Mapped[str] = mapped_column(Text)
    conclusion: Mapped[str] = mapped_column(Text)
    evidence: Mapped[list[Any]] = mapped_column(JSON)
    open_doubts: Mapped[list[Any]] = mapped_column(JSON)
    source_ids: Mapped[list[Any]] = mapped_column(JSON)
    lossless_fallback: Mapped[bool] = mapped_column(Boolean)
    version: Mapped[int] = mapped_column(Integer)


class LedgerRow(Base):
    __tablename__ = "ledger"
    run_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    tier: Mapped[str] = mapped_column(String(16))
    model: Mapped[str] = mapped_column(Text)
    purpose: Mapped[str] = mapped_column(String(40))
    step: Mapped[int] = mapped_column(Integer)
    prompt_tokens: Mapped[int] = mapped_column(Integer)
    completion_tokens: Mapped[int] = mapped_column(Integer)
    cost_usd: Mapped[float] = mapped_column(Float)
    outcome: Mapped[str] = mapped_column(String(20))


class EventRow(Base):
    __tablename__ = "events"
    run_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    step: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(20))
    message: Mapped[str] = mapped_column(Text)
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))


class ReportRow(Base):
    __tablename__ = "reports"
    run_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    text: Mapped[str] = mapped_column(Text)
    sources: Mapped[list[Any]] = mapped_column(JSON)
    cited: Mapped[list[Any]] = mapped_column(JSON)
    fallback: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))


class CacheRow(Base):
    __tablename__ = "search_cache"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    hits: Mapped[list[Any]] = mapped_column(JSON)
    stored_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))


class ClaimRow(Base):
    __tablename__ = "claims"
    run_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    idx: Mapped[int] = mapped_column(Integer, primary_key=True)
    text: Mapped[str] = mapped_column(Text)
    citations: Mapped[list[Any]] = mapped_column(JSON)
    supported: Mapped[bool] = mapped_column(Boolean)
    reason: Mapped[str] = mapped_column(Text)
    checked_by: Mapped[str] = mapped_column(String(10))


class PublicationIntentRow(Base):
    """A publication about to be sent, written before the channel is called: one still here
    on resume may or may not have reached the channel (reconciled by its key)."""

    __tablename__ = "publication_intents"
    key: Mapped[str] = mapped_column(String(120), primary_key=True)
    run_id: Mapped[str] = mapped_column(String(32), index=True)
    publication: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))


class PublicationRow(Base):
    """The outbox: every published version, written when the channel accepted it."""

    __tablename__ = "publications"
    key: Mapped[str] = mapped_column(String(120), primary_key=True)
    run_id: Mapped[str] = mapped_column(String(32), index=True)
    part_key: Mapped[str] = mapped_column(String(40))
    version: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(10))
    text: Mapped[str] = mapped_column(Text)
    sources: Mapped[list[Any]] = mapped_column(JSON)
    reason: Mapped[str] = mapped_column(Text)
    replaces: Mapped[str | None] = mapped_column(String(120))
    channel_id: Mapped[str | None] = mapped_column(String(120))
    sent_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))


class FeedbackRow(Base):
    """A person's verdict on one answer message of a run (the latest click counts)."""

    __tablename__ = "feedback"
    run_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    message_ts: Mapped[str] = mapped_column(String(40), primary_key=True)
    user: Mapped[str] = mapped_column(String(40), primary_key=True)
    part_key: Mapped[str] = mapped_column(String(120))
    verdict: Mapped[str] = mapped_column(String(10))
    at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))


class UsageRow(Base):
    """What one user or channel spent in one period ("day:2026-11-30", "month:2026-11"),
    increased in place (`used = used + x`) by every run that charges it."""

    __tablename__ = "usage"
    scope: Mapped[str] = mapped_column(String(10), primary_key=True)
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    period: Mapped[str] = mapped_column(String(20), primary_key=True)
    tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0)
    runs: Mapped[int] = mapped_column(Integer, default=0)


class ChargeRow(Base):
    """What one run (or plan preview) has charged to the usage so far, and to whom: the next
    charge adds only the difference, in the same transaction, so a resumed run never counts
    twice."""

    __tablename__ = "usage_charges"
    charge_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user: Mapped[str] = mapped_column(String(64))
    channel: Mapped[str] = mapped_column(String(64))
    day: Mapped[str] = mapped_column(String(20))
    month: Mapped[str] = mapped_column(String(20))
    tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0)
class WatchRow(Base):
    """A watched thread: its run is researched again on its cadence (docs/watch.md)."""

    __tablename__ = "watches"
    request_key: Mapped[str] = mapped_column(String(120), primary_key=True)
    team: Mapped[str] = mapped_column(String(32), index=True)
    run_id: Mapped[str] = mapped_column(String(32))
    channel: Mapped[str] = mapped_column(String(80))
    thread_ts: Mapped[str] = mapped_column(String(40))
    request: Mapped[dict[str, Any]] = mapped_column(JSON)  # the request record, to restore it
    cadence: Mapped[str] = mapped_column(String(10))
    next_due: Mapped[dt.date] = mapped_column(Date, index=True)
    last_as_of: Mapped[dt.date] = mapped_column(Date)
    active: Mapped[bool] = mapped_column(Boolean)
    note: Mapped[str] = mapped_column(Text)  # the last cycle's outcome, or why it stopped
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))


class PatternRow(Base):
    """A query pattern's record per search backend (whose name names the corpus too): how
    often it was sent, what it returned, what the reports cited (docs/learning.md)."""

    __tablename__ = "query_patterns"
    backend: Mapped[str] = mapped_column(String(80), primary_key=True)
    key: Mapped[str] = mapped_column(String(32), primary_key=True)
    shape: Mapped[str] = mapped_column(Text)
    terms: Mapped[list[Any]] = mapped_column(JSON)
    sent: Mapped[int] = mapped_column(Integer)
    results: Mapped[int] = mapped_column(Integer)
    cited: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))


class JobRow(Base):
    """A job that must run until it ends (a research, a follow-up, a watch cycle), written
    before it is queued in Redis and marked ended before Redis forgets it: Redis replication
    is asynchronous, so this is the record of which jobs are unfinished that a failover or a
    restart without persistence cannot lose (`research_core/store/jobs.py`)."""

    __tablename__ = "jobs"
    job_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    run_id: Mapped[str] = mapped_column(String(32))
    kind: Mapped[str] = mapped_column(String(20))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)  # the job as the queue holds it
    request: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # its request, to restore
    queued_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    ended_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True), index=True)
