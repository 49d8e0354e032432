"""Hands runs whose worker died to another worker.

A job that started (it took its run's lease) and is still active, but whose run has no lease
any more, lost its worker: SIGKILL, OOM, a lost machine. ARQ would only retry it after the job
timeout (hours); the reconciler re-enqueues it under a fresh job id within one interval of the
lease expiring, and the new job resumes the run from its checkpoint.

The check and the claim are one Lua script, so a job that ends (or a run that another worker
takes) between two reads is never revived. A claim lasts until the resumed job holds the lease
(it deletes the claim) or `CLAIM_LEASES` lease times pass, so a resume waiting for a free
worker slot is not queued again every round.
"""

from __future__ import annotations

import asyncio
import logging
import re

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from contract.keys import (
    ACTIVE_KEY,
    KEEP_S,
    claim_key,
    crashes_key,
    doing_key,
    handover_key,
    lease_key,
    reach_key,
    resumes_key,
    started_key,
)
from contract.queue import JobPayload, JobQueue
from contract.redis_server import awaited
from contract.redis_target import RETRY_CAP_S
from workers.metrics import JOBS_RESUMED

log = logging.getLogger(__name__)

CLAIM_LEASES = 10
_CALL = re.compile(r"model call (\d+)")
_ORPHAN = """
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return false end
if redis.call('exists', KEYS[2]) == 0 then return false end
if redis.call('exists', KEYS[3]) == 1 then return false end
if not redis.call('set', KEYS[4], '1', 'NX', 'PX', ARGV[2]) then return false end
return redis.call('hget', KEYS[1], ARGV[1])
"""


async def _claim(redis: aioredis.Redis, payload: JobPayload, claim_ms: int) -> bool:
    """Atomically: still active, started, no lease on its run, and not claimed yet."""
    keys = [ACTIVE_KEY, started_key(payload.job_id), lease_key(payload.run_id),
            claim_key(payload.job_id)]
    found = await awaited(redis.eval(_ORPHAN, 4, *keys, payload.job_id, str(claim_ms)))
    return found is not None


async def reconcile(redis: aioredis.Redis, queue: JobQueue, lease_s: float) -> list[str]:
    """Re-enqueue every orphaned job once; returns the job ids handed on."""
    handed: list[str] = []
    claim_ms = int(lease_s * CLAIM_LEASES * 1000)
    for payload in await queue.active():
        if not await _claim(redis, payload, claim_ms):
            continue
        attempt = await _count(redis, resumes_key(payload.job_id))
        cause, how = await _how_it_ended(redis, payload.job_id)
        await queue.resubmit(payload, f"{payload.job_id}#resume{attempt}")
        JOBS_RESUMED.labels(cause).inc()
        log.warning("job %s %s; resuming it (attempt %d)", payload.job_id, how, attempt)
        handed.append(payload.job_id)
    return handed


async def _count(redis: aioredis.Redis, key: str) -> int:
    count = int(await redis.incr(key))
    await redis.expire(key, KEEP_S)
    return count


async def _how_it_ended(redis: aioredis.Redis, job_id: str) -> tuple[str, str]:
    """A job handed over on shutdown resumes for free; any other loss is a crash: the cause
    ("handover" or "crash") and what the log says."""
    if await redis.getdel(handover_key(job_id)) is not None:
        return "handover", "was handed over by a worker shutting down"
    crashes = await _count_crash(redis, job_id)
    return "crash", f"lost its worker (crash {crashes})"


async def _count_crash(redis: aioredis.Redis, job_id: str) -> int:
    """The job's crash count after this crash. A job that dies at the same model call again
    and again (a native crash it causes) counts up to the limit. A job that got further than
    at its previous crash was making headway when its worker was killed (a restart, an OOM
    kill, a lost machine): its count starts afresh. A job killed before it got back to where
    it was (redoing its step after a resume) neither counts nor starts afresh."""
    raw = await redis.get(doing_key(job_id))
    found = _CALL.search(raw.decode(errors="replace")) if raw else None
    reached = int(found.group(1)) if found else 0
    furthest = int(await redis.get(reach_key(job_id)) or 0)
    if reached > furthest:
        await redis.set(reach_key(job_id), reached, ex=KEEP_S)
        await redis.set(crashes_key(job_id), 1, ex=KEEP_S)
        return 1
    if reached < furthest:
        return int(await redis.get(crashes_key(job_id)) or 0)
    return await _count(redis, crashes_key(job_id))


async def reconcile_forever(redis: aioredis.Redis, queue: JobQueue, lease_s: float,
                            every_s: float) -> None:
    """Reconcile now (a restarted worker picks up its own orphans), then every `every_s`.
    A round that met a Redis still away (its commands' own retries ran out) is tried again
    after the retries' back-off cap, not a whole interval later: the runs orphaned during
    the outage are handed on as soon as Redis is back."""
    while True:
        try:
            await reconcile(redis, queue, lease_s)
        except RedisError as exc:
            log.warning("reconciler: %s", exc)
            await asyncio.sleep(min(every_s, RETRY_CAP_S))
            continue
        await asyncio.sleep(every_s)

