"""The store on SQLite and on PostgreSQL (where one answers): a run's checkpoint, restored."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from research_core.delivery.publishers import MemoryPublisher
from research_core.evaluation.replay import stored_feedback
from research_core.protocols import SearchRequest
from research_core.settings import Settings
from research_core.store.models import Base
from research_core.store.restore import load_state
from research_core.store.sql import SqlStore
from tests.conftest import RecordingBackend
from tests.engine_run import Serve, run_engine
from tests.scripted import Script

PG_URL = os.environ.get("TEST_DATABASE_URL",
                        "postgresql+asyncpg://postgres@127.0.0.1:5432/test")


def _postgres_answers() -> bool:
    try:
        socket.create_connection(("127.0.0.1", 5432), timeout=1).close()
    except OSError:
        return False
    return True


@pytest.fixture(params=["sqlite", "postgresql"])
async def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SqlStore]:
    if request.param == "sqlite":
        store = await SqlStore.open(f"sqlite+aiosqlite:///{tmp_path / 'runs.db'}")
    elif not _postgres_answers():
        pytest.skip("no PostgreSQL answers on 127.0.0.1:5432")
    else:
        store = await SqlStore.open(PG_URL)
        async with store.engine.begin() as conn:  # a clean schema for this test
            await conn.run_sync(Base.metadata.drop_all)
            await conn.run_sync(Base.metadata.create_all)
    yield store
    await store.close()


async def test_a_finished_run_restores_exactly(
        serve: Serve, backend: RecordingBackend, any_store: SqlStore) -> None:
    publisher = MemoryPublisher()
    out = await run_engine(serve, Script(), backend, any_store, publisher=publisher)
    restored = await load_state(any_store, out.state.run_id, Settings())
    s = out.state
    assert (restored.question, restored.as_of, restored.step, restored.status) == (
        s.question, s.as_of, s.step, "finished")
    assert restored.tree.nodes == s.tree.nodes
    assert restored.evidence == s.evidence
    assert restored.queries == s.queries
    assert restored.summaries == s.summaries
    assert restored.ledger.entries == s.ledger.entries
    assert [e.message for e in restored.log.events] == [e.message for e in s.log.events]
    assert [(p.key, p.channel_id) for p in restored.publications] == [
        (p.key, p.channel_id) for p in s.publications]
    assert restored.extra == s.extra


async def test_the_search_cache_round_trips(
        backend: RecordingBackend, any_store: SqlStore) -> None:
    hits = await backend.search(SearchRequest("heat pump sales"))
    await any_store.cache_put("k1", hits)
    assert await any_store.cache_get("k1", ttl_s=60) == hits
    assert await any_store.cache_get("k1", ttl_s=-1) is None


async def test_votes_clicked_at_once_keep_one_per_person_and_the_last_counts(
        any_store: SqlStore) -> None:
    """Two jobs storing one person's clicks on one message at once must not collide (a
    read-then-insert merge did: UNIQUE constraint failed, the vote was lost)."""
    for _ in range(5):
        await asyncio.gather(*(
            any_store.record_feedback("run1", "171.1", "U1", "report", verdict)
            for verdict in ("positive", "negative", "positive")))
    await any_store.record_feedback("run1", "171.1", "U1", "report", "negative")
    await any_store.record_feedback("run1", "171.1", "U2", "report", "positive")
    counts = await stored_feedback(any_store, "run1")
    assert [(c.part_key, c.positive, c.negative) for c in counts] == [("report", 1, 1)]


async def test_the_later_click_counts_whichever_job_stores_it_first(
        any_store: SqlStore) -> None:
    """A person who clicks 👎 then 👍 at once: the two jobs may run in either order, and the
    click made last is what stays (seen in CI: the earlier 👎 stored after the 👍)."""
    first = dt.datetime(2026, 11, 30, 12, 0, 0, tzinfo=dt.UTC)
    later = first + dt.timedelta(milliseconds=40)
    await any_store.record_feedback("run2", "171.2", "U1", "report", "positive", later)
    await any_store.record_feedback("run2", "171.2", "U1", "report", "negative", first)
    counts = await stored_feedback(any_store, "run2")
    assert [(c.part_key, c.positive, c.negative) for c in counts] == [("report", 1, 0)]
    await any_store.record_feedback("run2", "171.2", "U1", "report", "negative",
                                    later + dt.timedelta(seconds=1))
    counts = await stored_feedback(any_store, "run2")
    assert [(c.part_key, c.positive, c.negative) for c in counts] == [("report", 0, 1)]


async def test_several_openers_of_one_new_sqlite_file_all_open(tmp_path: Path) -> None:
    """A bot recording its first job and a worker starting opened one new SQLite file at
    once: both found no table, and the second CREATE failed ("table runs already exists")."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'runs.db'}"
    stores = await asyncio.gather(*(SqlStore.open(url) for _ in range(8)))
    for store in stores:
        await store.close()
