"""The reconciler re-enqueues a started job whose run has no lease — once, and never a job
that has ended or whose run someone holds."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from arq.connections import ArqRedis

from contract.keys import claim_key, crashes_key, doing_key, request_key, started_key
from contract.queue import JobPayload, JobQueue, connect
from contract.requests import CHOOSING, ResearchRequestMsg
from tests.slack_driver import ALICE, CHANNEL
from workers.lease import Lease
from workers.reconciler import reconcile

LEASE_S = 5.0


@pytest.fixture
async def pool(redis_url: str) -> AsyncIterator[ArqRedis]:
    connected = await connect(redis_url)
    yield connected
    await connected.aclose()


def payload(ts: str) -> JobPayload:
    request = ResearchRequestMsg(request_key(CHANNEL, ts), ALICE, CHANNEL, ts, ts, "q?",
                                 CHOOSING)
    return JobPayload.research(request)


async def queued_ids(pool: ArqRedis) -> list[str]:
    return [str(j.job_id) for j in await pool.queued_jobs()]


async def test_an_orphan_is_handed_on_once(pool: ArqRedis) -> None:
    queue = JobQueue(pool)
    job = payload("1.0")
    await queue.submit(job)
    await pool.set(started_key(job.job_id), 1)  # it started; its worker died (no lease)
    assert await reconcile(pool, queue, LEASE_S) == [job.job_id]
    assert await reconcile(pool, queue, LEASE_S) == []  # claimed: not queued again
    assert sorted(await queued_ids(pool)) == [job.job_id, f"{job.job_id}#resume1"]


async def test_ended_held_and_waiting_jobs_are_left_alone(pool: ArqRedis) -> None:
    queue = JobQueue(pool)
    ended, held, waiting = payload("2.0"), payload("3.0"), payload("4.0")
    for job in (ended, held, waiting):
        await queue.submit(job)
    for job in (ended, held):
        await pool.set(started_key(job.job_id), 1)
    await queue.ended(ended.job_id)
    assert await Lease(pool, held.run_id, held.job_id, LEASE_S).acquire()
    assert await reconcile(pool, queue, LEASE_S) == []
    assert {p.job_id for p in await queue.active()} == {held.job_id, waiting.job_id}


async def crash_at(pool: ArqRedis, queue: JobQueue, job: JobPayload, doing: str) -> int:
    """The job's worker dies while the job is `doing` this; returns its crash count."""
    await pool.set(doing_key(job.job_id), doing)
    await pool.set(started_key(job.job_id), 1)
    await pool.delete(claim_key(job.job_id))  # the previous resume had taken over
    assert await reconcile(pool, queue, LEASE_S) == [job.job_id]
    return int(await pool.get(crashes_key(job.job_id)) or 0)


async def test_crashes_count_only_while_the_job_gets_no_further(pool: ArqRedis) -> None:
    """A job killed again and again while it makes headway (the chaos suite's SIGKILLs at
    random moments gave up healthy runs after three) starts its count afresh each time, and a
    kill while it redoes its step after a resume does not count; a job that dies at the same
    model call every time counts up to the limit."""
    queue = JobQueue(pool)
    moving, stuck = payload("5.0"), payload("6.0")
    for job in (moving, stuck):
        await queue.submit(job)
    counts = [await crash_at(pool, queue, moving, f"step {s}: executor/summarise "
                             f"(model call {call})")
              for s, call in ((5, 20), (5, 23), (5, 21), (5, 22), (6, 30))]
    assert counts == [1, 1, 1, 1, 1]  # killed while redoing (21, 22 < 23): not counted
    counts = [await crash_at(pool, queue, stuck, "step 7: executor/followup (model call 12)")
              for _ in range(3)]
    assert counts == [1, 2, 3]
    assert await crash_at(pool, queue, stuck, "step 7: planner/plan_query (model call 9)") == 3
