"""The query patterns' records in the store, per search backend (docs/learning.md)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from research_core.search.patterns import Outcome, Pattern, PatternRecord, pattern_of
from research_core.store.models import PatternRow
from research_core.store.sql import SqlStore, reconnecting

RECORD_TRIES = 3


class SqlPatternBook:
    """`QueryLearning` on the SQL store, for the search backend named `backend`."""

    def __init__(self, store: SqlStore, backend: str) -> None:
        self.store = store
        self.backend = backend[:80]

    @reconnecting
    async def records(self) -> list[PatternRecord]:
        async with self.store.sessions() as session:
            rows = await session.scalars(select(PatternRow).where(
                PatternRow.backend == self.backend))
            return [PatternRecord(Pattern(r.shape, frozenset(r.terms)), r.sent, r.results,
                                  r.cited) for r in rows]

    async def record(self, outcomes: list[Outcome]) -> None:
        """Add a finished run's queries to their patterns' records (one transaction; a row
        locked while it is updated, so two runs finishing at once both count; when both
        created the same new pattern, the second tries again and finds it)."""
        for attempt in range(1, RECORD_TRIES + 1):
            try:
                await self._record(outcomes)
                return
            except IntegrityError:
                if attempt == RECORD_TRIES:
                    raise

    @reconnecting
    async def _record(self, outcomes: list[Outcome]) -> None:
        now = dt.datetime.now(dt.UTC)
        async with self.store.sessions.begin() as session:
            for outcome in outcomes:
                pattern = pattern_of(outcome.query, outcome.question)
                row = await session.get(PatternRow, (self.backend, pattern.key),
                                        with_for_update=True)
                if row is None:
                    row = PatternRow(backend=self.backend, key=pattern.key, shape=pattern.shape,
                                     terms=sorted(pattern.terms), sent=0, results=0, cited=0,
                                     updated_at=now)
                    session.add(row)
                row.sent += 1
                row.results += outcome.results
                row.cited += outcome.cited
                row.updated_at = now
                await session.flush()
