"""The durable record of unfinished jobs: the `jobs` table.

Redis holds the queue, the requests and the leases, and Redis replication is asynchronous: a
primary that dies before its replica copied its last writes loses them, and so does a Redis
restarted without its data. The SQL store is therefore the record of which jobs are
unfinished. The order of writes is what makes it true:

- a job is recorded here *before* it is queued in Redis, so a Redis that loses the queued job
  cannot lose the record;
- a job is marked ended here *before* Redis forgets it (`red:active`) and before its worker
  gives the run's lease back, so a row that is still unfinished is a job that has not ended,
  and a job that holds the lease can tell whether an earlier holder ended it (`has_ended`).

A job id is recorded once: recording it again (a retried click) keeps the row, and a job
that ended is never made unfinished again. Ended rows are forgotten after `KEEP_DAYS`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from research_core.store.models import JobRow
from research_core.store.sql import SqlStore, reconnecting

KEEP_DAYS = 7  # as long as Redis keeps a request (contract/keys.py KEEP_S)


@dataclass(frozen=True)
class UnfinishedJob:
    job_id: str
    run_id: str
    kind: str
    payload: dict[str, Any]
    request: dict[str, Any] | None
    queued_at: dt.datetime


class JobRecords:
    """The `jobs` table, beside the runs of the same store."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store

    @reconnecting
    async def queued(self, job_id: str, run_id: str, kind: str, payload: dict[str, Any],
                     request: dict[str, Any] | None) -> bool:
        """Record a job about to be queued; False when it ended already (it must not run
        again). Recording it twice keeps the first row (INSERT … ON CONFLICT DO NOTHING)."""
        row = {"job_id": job_id, "run_id": run_id, "kind": kind, "payload": payload,
               "request": request, "queued_at": _now(), "ended_at": None}
        async with self.store.sessions.begin() as session:
            await _insert_once(session, self.store.engine.dialect.name, row)
            ended = await session.scalar(select(JobRow.ended_at).where(JobRow.job_id == job_id))
        return ended is None

    @reconnecting
    async def ended(self, job_id: str) -> None:
        """Mark a job ended (a job that was never recorded is left unrecorded)."""
        async with self.store.sessions.begin() as session:
            await session.execute(update(JobRow).where(JobRow.job_id == job_id,
                                                       JobRow.ended_at.is_(None))
                                  .values(ended_at=_now()))

    @reconnecting
    async def has_ended(self, job_id: str) -> bool:
        async with self.store.sessions() as session:
            ended = await session.scalar(select(JobRow.ended_at).where(JobRow.job_id == job_id))
        return ended is not None

    @reconnecting
    async def request_of(self, job_id: str) -> dict[str, Any] | None:
        """The request a job was queued with (None: not recorded, or queued without one)."""
        async with self.store.sessions() as session:
            found = await session.scalar(select(JobRow.request).where(JobRow.job_id == job_id))
        return dict(found) if found is not None else None

    @reconnecting
    async def unfinished(self) -> list[UnfinishedJob]:
        """Every recorded job that has not ended, oldest first."""
        async with self.store.sessions() as session:
            rows = await session.scalars(select(JobRow).where(JobRow.ended_at.is_(None))
                                         .order_by(JobRow.queued_at, JobRow.job_id))
            return [UnfinishedJob(r.job_id, r.run_id, r.kind, dict(r.payload),
                                  dict(r.request) if r.request is not None else None,
                                  r.queued_at) for r in rows]

    @reconnecting
    async def forget_ended(self, days: int = KEEP_DAYS) -> int:
        """Drop the rows of jobs that ended more than `days` ago; how many."""
        before = _now() - dt.timedelta(days=days)
        async with self.store.sessions.begin() as session:
            result = await session.execute(delete(JobRow).where(JobRow.ended_at < before))
        return int(getattr(result, "rowcount", 0) or 0)


class LazyJobRecords:
    """`JobRecords` on a store opened on first use and closed with `close()`: the bot records
    the jobs it queues without opening the database before its first click."""

    def __init__(self, url: str, origin: str = "") -> None:
        self.url = url
        self.origin = origin
        self.store: SqlStore | None = None
        self._opening = asyncio.Lock()  # two first clicks at once open one store, not two

    async def records(self) -> JobRecords:
        async with self._opening:
            if self.store is None:
                self.store = await SqlStore.open(self.url, self.origin)
        return JobRecords(self.store)

    async def queued(self, job_id: str, run_id: str, kind: str, payload: dict[str, Any],
                     request: dict[str, Any] | None) -> bool:
        return await (await self.records()).queued(job_id, run_id, kind, payload, request)

    async def ended(self, job_id: str) -> None:
        await (await self.records()).ended(job_id)

    async def has_ended(self, job_id: str) -> bool:
        return await (await self.records()).has_ended(job_id)

    async def request_of(self, job_id: str) -> dict[str, Any] | None:
        return await (await self.records()).request_of(job_id)

    async def close(self) -> None:
        if self.store is not None:
            await self.store.close()
            self.store = None


async def _insert_once(session: AsyncSession, dialect: str, row: dict[str, Any]) -> None:
    """INSERT … ON CONFLICT DO NOTHING where the dialect has it: two bot replicas recording
    one click at once must not collide."""
    insert = {"postgresql": postgresql.insert, "sqlite": sqlite.insert}.get(dialect)
    if insert is not None:
        statement: Any = insert(JobRow).values(**row)  # the dialect's Insert, with ON CONFLICT
        await session.execute(statement.on_conflict_do_nothing())
    elif await session.get(JobRow, row["job_id"]) is None:
        session.add(JobRow(**row))


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)
