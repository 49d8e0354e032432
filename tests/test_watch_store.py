"""Due watches claimed by several workers at once, on PostgreSQL as the workers use it: each
due cycle is claimed exactly once; and two runs recording the same new query pattern at once
both count."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator

import pytest

from redsearch.harness.local_services import PrivateDatabase
from research_core.search.patterns import Outcome
from research_core.store.patterns import SqlPatternBook
from research_core.store.sql import SqlStore
from research_core.store.watches import WatchStore, next_date
from tests.test_store_backends import PG_URL, _postgres_answers

pytestmark = pytest.mark.skipif(not _postgres_answers(),
                                reason="no PostgreSQL answers on 127.0.0.1:5432")
DAY = dt.date(2026, 10, 31)


@pytest.fixture
async def stores() -> AsyncIterator[list[SqlStore]]:
    db = PrivateDatabase(PG_URL, prefix="redsearch_watch")
    await db.create()
    opened = [await SqlStore.open(db.url) for _ in range(4)]
    yield opened
    for store in opened:
        await store.close()
    await db.drop()


def test_cadences() -> None:
    assert next_date(DAY, "daily") == dt.date(2026, 11, 1)
    assert next_date(DAY, "weekly") == dt.date(2026, 11, 7)
    assert next_date(DAY, "monthly") == dt.date(2026, 11, 30)
    assert next_date(dt.date(2026, 12, 15), "monthly") == dt.date(2027, 1, 15)


async def test_four_workers_claim_a_due_watch_once(stores: list[SqlStore]) -> None:
    watches = [WatchStore(s) for s in stores]
    for n in range(5):
        await watches[0].watch(request_key=f"red:req:C1:{n}.1", team="T1", run_id=f"s{n}",
                               channel="C1", thread_ts=f"{n}.1", request={}, cadence="daily",
                               last_as_of=DAY)
    due_day = DAY + dt.timedelta(days=1)

    async def tick(store: WatchStore) -> list[str]:
        return [w.request_key for w in await store.due(due_day) if await store.claim(w, due_day)]

    claimed = await asyncio.gather(*(tick(w) for w in watches))
    everyone = [key for keys in claimed for key in keys]
    assert sorted(everyone) == sorted(f"red:req:C1:{n}.1" for n in range(5))
    assert await watches[1].due(due_day) == [], "claimed watches are due again tomorrow"
    assert len(await watches[1].due(due_day + dt.timedelta(days=1))) == 5


async def test_runs_recording_a_new_pattern_at_once_both_count(stores: list[SqlStore]) -> None:
    books = [SqlPatternBook(s, "corpus:abc") for s in stores]
    outcome = [Outcome("heat pump sales forum thread", "heat pump sales?", 5, 0)]
    await asyncio.gather(*(book.record(outcome) for book in books))
    [record] = await books[0].records()
    assert (record.sent, record.results, record.cited) == (4, 20, 0)
