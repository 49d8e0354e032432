"""Redis losing its last writes (an asynchronous replica taking over, a restart without
persistence): the SQL record of unfinished jobs brings back every job whose queued ARQ job,
request, `red:active` entry or lease vanished, once, and never one that ended
(`workers/sweep.py`). The write loss is a FLUSHDB of the test database: everything lost."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from arq.connections import ArqRedis

from contract.keys import ACTIVE_KEY, request_key, started_key, thread_key
from contract.queue import JobQueue, connect
from contract.redis_server import awaited
from contract.requests import QUEUED, Requests, ResearchRequestMsg
from playground.fake_slack import BOT_USER_ID, Change, Message
from redsearch.harness.chaos_audit import duplicates
from redsearch.harness.local_services import PrivateDatabase
from research_core.store.jobs import JobRecords, LazyJobRecords
from research_core.store.sql import SqlStore
from tests.conftest import RecordingBackend
from tests.engine_run import default_similarity
from tests.scripted import Script
from tests.slack_driver import ALICE, CHANNEL
from tests.slack_stack import Stack, StartStack, wait_for
from tests.test_store_backends import PG_URL, _postgres_answers
from workers.lease import Lease
from workers.reconciler import reconcile
from workers.sweep import Sweep
from workers.worker import run_worker

LEASE_S = 5.0
QUESTION = "How did heat pump sales, prices and exports move in 2026?"
THREE = [("What were heat pump sales figures?", 0.9), ("What were heat pump prices?", 0.8),
         ("What happened to heat pump exports?", 0.7)]


@pytest.fixture(params=["sqlite", "postgresql"])
async def records(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[JobRecords]:
    """The jobs table on SQLite, and on a PostgreSQL database of its own (dropped after)."""
    database: PrivateDatabase | None = None
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'jobs.db'}"
    elif not _postgres_answers():
        pytest.skip("no PostgreSQL answers on 127.0.0.1:5432")
    else:
        database = PrivateDatabase(PG_URL, prefix="redsearch_jobs_test")
        url = await database.create()
    store = await SqlStore.open(url)
    yield JobRecords(store)
    await store.close()
    if database is not None:
        await database.drop()


@pytest.fixture
async def pool(redis_url: str) -> AsyncIterator[ArqRedis]:
    connected = await connect(redis_url)
    yield connected
    await connected.aclose()


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def request_at(ts: str) -> ResearchRequestMsg:
    return ResearchRequestMsg(request_key(CHANNEL, ts), ALICE, CHANNEL, ts, ts, "q?", QUEUED,
                              depth="standard")


async def queued_ids(pool: ArqRedis) -> list[str]:
    return sorted(str(j.job_id) for j in await pool.queued_jobs())


async def test_a_job_redis_lost_is_queued_again_once_with_its_request(
        pool: ArqRedis, records: JobRecords) -> None:
    queue, clock = JobQueue(pool, records), Clock()
    request = request_at("1.0")
    await Requests(pool).save(request)
    assert await queue.research(request)
    await pool.flushdb()  # the write loss: the queued job, its request, red:active
    sweeps = [Sweep(pool, queue, records, LEASE_S, clock) for _ in range(2)]  # two workers
    assert await sweeps[0].round() == []  # seen without traces once: not yet
    clock.now = LEASE_S
    assert [await s.round() for s in sweeps] == [[request.job_id], []]  # one enqueues it
    [resumed] = await queued_ids(pool)
    assert resumed.startswith(f"{request.job_id}#recover-")
    assert await queue.is_active(request.job_id)
    assert await Requests(pool).load(request.key) == request
    assert await pool.get(thread_key(CHANNEL, request.thread_ts)) == request.key.encode()
    clock.now = 3 * LEASE_S
    assert await sweeps[0].round() == []  # queued (and claimed): left to ARQ


async def test_ended_held_queued_and_reconciled_jobs_are_left_alone(
        pool: ArqRedis, records: JobRecords) -> None:
    queue, clock = JobQueue(pool, records), Clock()
    ended, held, waiting, orphan = (request_at(ts) for ts in ("2.0", "3.0", "4.0", "5.0"))
    for request in (ended, held, waiting, orphan):
        await queue.research(request)
    await queue.ended(ended.job_id)
    await awaited(pool.zrem("arq:queue", ended.job_id, held.job_id, orphan.job_id))
    assert await Lease(pool, held.run_id, held.job_id, LEASE_S).acquire()  # a worker has it
    await pool.set(started_key(orphan.job_id), 1)  # started, its worker died: the reconciler's
    sweep = Sweep(pool, queue, records, LEASE_S, clock)
    for clock.now in (0.0, LEASE_S, 2 * LEASE_S):
        assert await sweep.round() == []
    assert not await queue.is_active(ended.job_id)
    assert not await queue.research(ended)  # a retried click cannot run an ended job again
    assert await reconcile(pool, queue, LEASE_S) == [orphan.job_id]


async def test_a_job_revived_after_it_ended_finds_its_record_ended(
        pool: ArqRedis, records: JobRecords) -> None:
    """The record is marked ended before Redis forgets the job: a Redis that lost the
    forgetting (and brought the job back as active) cannot make it run again."""
    queue = JobQueue(pool, records)
    request = request_at("6.0")
    await queue.research(request)
    await records.ended(request.job_id)  # ended; then Redis lost what followed
    assert await queue.is_active(request.job_id)
    assert await queue.has_ended(request.job_id)
    assert [j.job_id for j in await records.unfinished()] == []


async def _ask(stack: Stack) -> Message:
    """A mention and its Standard click, through the bot (which records the job in SQL)."""
    _, mention = await stack.driver.mention(f"<@{BOT_USER_ID}> {QUESTION}")
    picker = copy.deepcopy(stack.thread(mention)[0])
    assert await stack.driver.click(ALICE, "depth_standard", picker) == 200
    return mention


def _start_worker(stack: Stack, redis_url: str, backend: RecordingBackend) -> None:
    stack.worker = asyncio.create_task(run_worker(stack.settings, redis_url, backend=backend,
                                                  similarity=default_similarity()))


async def _finishes_once(stack: Stack, mention: Message, redis_url: str,
                         backend: RecordingBackend) -> None:
    """A worker started now finishes the run: one closing message, nothing posted twice."""
    _start_worker(stack, redis_url, backend)
    await wait_for(lambda: bool(stack.finals(mention)), 90, "the final message")
    await stack.settled()
    assert len(stack.finals(mention)) == 1
    assert duplicates(stack.fake.calls()) == {}


@pytest.mark.timeout(120)
async def test_a_queued_run_redis_lost_finishes_once(
        start_stack: StartStack, backend: RecordingBackend, redis_url: str) -> None:
    """Queued, then Redis lost everything before a worker took it: it runs and finishes."""
    stack = await start_stack(Script(subquestions=THREE), backend, in_process_worker=False)
    mention = await _ask(stack)
    await stack.pool.flushdb()
    await _finishes_once(stack, mention, redis_url, backend)


@pytest.mark.timeout(150)
async def test_a_run_whose_job_and_lease_vanished_mid_run_resumes_without_double_posts(
        start_stack: StartStack, backend: RecordingBackend, redis_url: str) -> None:
    """Its worker went away (and gave its lease back) and Redis then lost every trace of the
    job: another worker resumes the run from its checkpoint, and nothing is posted twice."""
    stack = await start_stack(Script(subquestions=THREE), backend)
    first_part = asyncio.Event()

    def on_change(change: Change) -> None:
        if change.kind == "posted" and any(
                e.get("text", "").startswith("Sources:") for b in change.data.get("blocks", [])
                if b.get("type") == "context" for e in b.get("elements", [])):
            first_part.set()
    stack.fake.add_listener(on_change)
    mention = await _ask(stack)
    await asyncio.wait_for(first_part.wait(), 60)
    await stack.stop_worker()
    assert not stack.finals(mention)
    await stack.pool.flushdb()
    assert await awaited(stack.pool.hlen(ACTIVE_KEY)) == 0
    await _finishes_once(stack, mention, redis_url, backend)


@pytest.mark.timeout(120)
async def test_a_run_whose_request_alone_redis_lost_still_runs(
        start_stack: StartStack, backend: RecordingBackend, redis_url: str) -> None:
    """The chaos suite's write loss: the click's request update was lost, the bot's enqueue
    after it reached the Redis that took over. The job restores its request from SQL instead
    of ending as "request expired"."""
    stack = await start_stack(Script(subquestions=THREE), backend, in_process_worker=False)
    mention = await _ask(stack)
    await stack.pool.delete(request_key(CHANNEL, mention.ts))
    await _finishes_once(stack, mention, redis_url, backend)


async def test_two_first_clicks_at_once_open_one_store(tmp_path: Path) -> None:
    """The bot opens its job records on the first click; two clicks at once (the chaos
    suite's two runs) opened two stores and left one unclosed (an asyncpg connection
    collected open, which failed the short chaos test)."""
    lazy = LazyJobRecords(f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}")
    first, second = await asyncio.gather(lazy.records(), lazy.records())
    assert first.store is second.store is lazy.store
    await lazy.close()
