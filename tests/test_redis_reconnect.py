"""After a Redis restart the workers are back at work within the retries' back-off cap, not
after a poll or reconcile interval (issue 26: the short chaos gate failed on one recovery
that waited for the surviving workers to reconnect)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
from arq.connections import ArqRedis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from contract.keys import request_key, started_key
from contract.queue import JobPayload, JobQueue, connect
from contract.redis_target import RETRIES, command_backoff
from contract.requests import CHOOSING, ResearchRequestMsg
from redsearch.harness.local_services import DurableRedis
from tests.slack_driver import ALICE, CHANNEL
from workers.reconciler import reconcile_forever

LEASE_S = 4.0
RECONCILE_EVERY_S = 60.0  # a round missed for an outage would cost a whole minute


@pytest.fixture
async def durable() -> AsyncIterator[DurableRedis]:
    server = DurableRedis()
    await server.start()
    yield server
    await server.stop()


def test_commands_ride_out_eight_seconds_and_try_four_times_a_second() -> None:
    """The back-off doubles from RETRY_BASE_S to the cap; the cap is what a Redis that is
    back costs a client at most, the sum how long an outage is ridden out without an error."""
    backoff = command_backoff()
    waits = [backoff.compute(n) for n in range(1, RETRIES + 1)]
    assert max(waits) <= 0.25
    assert sum(waits) >= 7.5


async def test_the_reconciler_hands_on_an_orphan_as_soon_as_redis_is_back(
        durable: DurableRedis) -> None:
    """A reconcile round that meets a Redis still away is tried again after the back-off
    cap; it used to wait a whole interval (reconcile_every_s) before looking again."""
    pool = await connect(durable.url)
    pool.set_retry(Retry(NoBackoff(), 0))  # errors at once
    request = ResearchRequestMsg(request_key(CHANNEL, "1.0"), ALICE, CHANNEL, "1.0", "1.0",
                                 "q?", CHOOSING)
    job = JobPayload.research(request)
    try:
        await JobQueue(pool).submit(job)
        await pool.set(started_key(job.job_id), 1)  # its worker dies with Redis away
        await durable.shutdown()  # a restart: Redis keeps its data (AOF)
        await pool.connection_pool.disconnect()
        loop = asyncio.create_task(reconcile_forever(pool, JobQueue(pool), LEASE_S,
                                                     RECONCILE_EVERY_S))
        await asyncio.sleep(1.0)  # its first rounds meet no Redis
        await durable.start()
        assert await handed_on(pool, f"{job.job_id}#resume1", within_s=10.0)
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
    finally:
        await pool.aclose()


async def handed_on(pool: ArqRedis, job_id: str, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if job_id in {str(j.job_id) for j in await pool.queued_jobs()}:
            return True
        await asyncio.sleep(0.1)
    return False
