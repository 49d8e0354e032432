"""Hands runs whose worker died to another worker.

A job that started (it took its run's lease) and is still active, but whose run has no lease
any more, lost its worker: SIGKILL, OOM, a lost machine. ARQ would only retry it after the job
timeout (hours); the reconciler re-enqueues it under a fresh job id within one interval of the
lease expiring, and the new job resumes the run from its checkpoint.
"""

from __future__ import annotations

import asyncio
import logging

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from workers.jobs import started_key
from workers.lease import lease_key
from workers.queue import JobQueue

log = logging.getLogger(__name__)


async def reconcile(redis: aioredis.Redis, queue: JobQueue, lease_s: float) -> list[str]:
    """Re-enqueue every orphaned job once; returns the job ids handed on."""
    handed: list[str] = []
    for payload in await queue.active():
        if not await redis.exists(started_key(payload.job_id)):
            continue  # still waiting in the queue: ARQ will start it
        if await redis.exists(lease_key(payload.run_id)):
            continue  # someone works on the run
        claim = f"red:reconcile:{payload.job_id}"
        if not await redis.set(claim, 1, nx=True, px=int(lease_s * 1000)):
            continue  # another worker's reconciler just handed it on
        attempt = await redis.incr(f"red:resumes:{payload.job_id}")
        await queue.submit(payload, job_id=f"{payload.job_id}#resume{attempt}")
        log.warning("job %s lost its worker; resuming it (attempt %d)", payload.job_id, attempt)
        handed.append(payload.job_id)
    return handed


async def reconcile_forever(redis: aioredis.Redis, queue: JobQueue, lease_s: float,
                            every_s: float) -> None:
    """Reconcile now (a restarted worker picks up its own orphans), then every `every_s`."""
    while True:
        try:
            await reconcile(redis, queue, lease_s)
        except RedisError as exc:  # Redis restarting: try again next round
            log.warning("reconciler: %s", exc)
        await asyncio.sleep(every_s)
