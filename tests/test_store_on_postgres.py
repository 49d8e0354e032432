"""The store as several workers use it on one PostgreSQL database: what the chaos suite found
(SQLite never showed it) kept fixed. Workers opening a fresh database at once, closing notes
whose keys hold a real Slack job id, two runs caching the same query at once, and every
connection of the workers terminated by the server."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator

import pytest

from redsearch.harness.local_services import PrivateDatabase
from research_core.delivery.publications import PART_KEY_CHARS, Publication
from research_core.protocols import SearchHit
from research_core.store.sql import SqlStore
from tests.test_store_backends import PG_URL, _postgres_answers

pytestmark = pytest.mark.skipif(not _postgres_answers(),
                                reason="no PostgreSQL answers on 127.0.0.1:5432")


@pytest.fixture
async def database() -> AsyncIterator[PrivateDatabase]:
    db = PrivateDatabase(PG_URL, prefix="redsearch_test")
    await db.create()
    yield db
    await db.drop()


def hit(n: int) -> SearchHit:
    return SearchHit(source_id=f"doc-{n}", title=f"Title {n}", url=f"https://e.example/{n}",
                     snippet="Heat pump sales rose 12%.", published=dt.date(2026, 10, 1),
                     source_type="news")


async def test_workers_opening_a_fresh_database_at_once_all_start(
        database: PrivateDatabase) -> None:
    stores = await asyncio.gather(*(SqlStore.open(database.url) for _ in range(4)))
    for store in stores:
        await store.close()


async def test_a_closing_note_of_a_real_slack_job_fits(database: PrivateDatabase) -> None:
    store = await SqlStore.open(database.url)
    try:
        job = "research:C07QW4R5ZL9:1796056538.305414"  # channel and ts as Slack gives them
        note = Publication("s80f2a9aa37a", f"failed-{job}", 1, "final", "Research failed")
        assert len(note.part_key) <= PART_KEY_CHARS
        await store.record_intent(note)
        note.channel_id = "1796056544.916238"
        await store.record_publication(note)
        again = Publication("s80f2a9aa37a", f"failed-{job}", 1, "final", "Research failed")
        sent = await store.sent_publication(again.key)
        assert sent is not None and sent.channel_id == "1796056544.916238"
    finally:
        await store.close()


async def test_two_runs_caching_one_query_at_once_do_not_collide(
        database: PrivateDatabase) -> None:
    stores = [await SqlStore.open(database.url) for _ in range(2)]
    try:
        for _ in range(5):
            await asyncio.gather(stores[0].cache_put("same-query", [hit(1)]),
                                 stores[1].cache_put("same-query", [hit(2)]))
        cached = await stores[0].cache_get("same-query", ttl_s=60)
        assert cached in ([hit(1)], [hit(2)])
    finally:
        for store in stores:
            await store.close()


async def test_the_store_reconnects_after_its_connections_are_terminated(
        database: PrivateDatabase) -> None:
    store = await SqlStore.open(database.url)
    try:
        await store.cache_put("q", [hit(1)])
        assert await database.cut_connections() >= 1
        await store.cache_put("q", [hit(2)])  # an idle pooled connection was cut
        assert await store.cache_get("q", ttl_s=60) == [hit(2)]
    finally:
        await store.close()
