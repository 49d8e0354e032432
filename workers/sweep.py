"""Queues again the jobs Redis lost: the SQL record of unfinished jobs against Redis.

Redis replication is asynchronous: a primary that dies before its replica copied its last
writes loses them, and a Redis restarted without its data loses everything. A job whose
queued ARQ job, `red:active` entry, request record or lease vanished that way would never
run again: the reconciler (`workers/reconciler.py`) only sees what Redis still holds. The SQL
store is the record of which jobs are unfinished (`research_core/store/jobs.py`), and this
sweep, beside the reconciler in every worker, re-enqueues each unfinished job that left no
trace in Redis: no ARQ job queued or in progress under its id (or a resume of it), no lease
on its run, no claim on it, and not the reconciler's (active and started). It restores what
Redis lost (the request record and the thread's link to it, its `red:active` entry) and
queues it under a fresh job id; the job resumes its run from the SQL checkpoint, and the
outbox keeps what reached the thread from being posted twice.

It never revives a job that ended, and never enqueues one twice:

- a job is marked ended in SQL before Redis forgets it and before its lease is given back,
  so a job the record holds unfinished has not ended; one that ends while the sweep looks
  finds its record ended when the revived job holds the lease (`JobRunner.run`);
- a job must be seen without traces in two rounds at least a lease apart: a worker still
  running it (its lease lost with the rest) takes its lease back within a heartbeat, and a
  job being queued right now (recorded, not yet in Redis) is in Redis well within a lease;
- the last check and the claim are one Lua script with the reconciler's claim key
  (`SET NX`), so of several workers sweeping at once one enqueues it, and a job the
  reconciler just claimed is left to it.

A job lost this way runs again within two sweep intervals (`WorkerSettings.sweep_every_s`,
one lease) and ARQ's poll.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Callable

import redis.asyncio as aioredis
from arq.constants import default_queue_name
from redis.exceptions import RedisError
from sqlalchemy.exc import SQLAlchemyError

from contract.keys import ACTIVE_KEY, KEEP_S, claim_key, lease_key, started_key, thread_key
from contract.queue import JobPayload, JobQueue
from contract.redis_server import awaited
from contract.requests import ResearchRequestMsg
from research_core.errors import StoreUnavailable
from research_core.store.jobs import JobRecords, UnfinishedJob
from workers.metrics import JOBS_RECOVERED
from workers.reconciler import CLAIM_LEASES

log = logging.getLogger(__name__)

PRUNE_EVERY_S = 3600.0  # how often ended rows older than a week are dropped
_TRACELESS = """
if redis.call('exists', KEYS[3]) == 1 then return 0 end
if redis.call('exists', KEYS[4]) == 1 then return 0 end
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 and redis.call('exists', KEYS[2]) == 1 then
  return 0
end
if ARGV[2] ~= '0' then
  redis.call('set', KEYS[4], '1', 'PX', ARGV[2])
  redis.call('hsetnx', KEYS[1], ARGV[1], ARGV[3])
end
return 1
"""


class Sweep:
    """One worker's sweep; `round()` is one pass. `clock` is monotonic seconds (tests)."""

    def __init__(self, redis: aioredis.Redis, queue: JobQueue, records: JobRecords,
                 lease_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.redis = redis
        self.queue = queue
        self.records = records
        self.lease_s = lease_s
        self.clock = clock
        self.suspects: dict[str, float] = {}  # job id -> when first seen without traces

    async def round(self) -> list[str]:
        """Re-enqueue every unfinished job seen without traces for a lease; their ids."""
        queued = await self._queued_in_arq()
        now = self.clock()
        seen: dict[str, float] = {}
        revived: list[str] = []
        for job in await self.records.unfinished():
            payload = JobPayload.from_dict(job.payload)
            if job.job_id in queued or not await self._traceless(payload, claim_ms=0):
                continue
            first = seen[job.job_id] = self.suspects.get(job.job_id, now)
            if now - first >= self.lease_s and await self._revive(job, payload):
                revived.append(job.job_id)
                del seen[job.job_id]
        self.suspects = seen
        return revived

    async def _queued_in_arq(self) -> set[str]:
        """The job ids ARQ holds queued or in progress (it keeps a running job in its queue
        until it ends), a resume (`id#resume2`) counted as its job."""
        members = await self.redis.zrange(default_queue_name, 0, -1)
        return {_text(m).split("#", 1)[0] for m in members}

    async def _traceless(self, payload: JobPayload, claim_ms: int) -> bool:
        """No lease on its run, no claim, and not the reconciler's; with `claim_ms`, also
        claim it and put its `red:active` entry back, atomically."""
        keys = [ACTIVE_KEY, started_key(payload.job_id), lease_key(payload.run_id),
                claim_key(payload.job_id)]
        found = await awaited(self.redis.eval(_TRACELESS, 4, *keys, payload.job_id,
                                              str(claim_ms), json.dumps(payload.to_dict())))
        return bool(found)

    async def _revive(self, job: UnfinishedJob, payload: JobPayload) -> bool:
        claim_ms = int(self.lease_s * CLAIM_LEASES * 1000)
        if not await self._traceless(payload, claim_ms):
            return False  # another worker's sweep, or the reconciler, got it first
        if job.request is not None:
            await self._restore_request(ResearchRequestMsg.from_json(json.dumps(job.request)))
        await self.queue.resubmit(payload, f"{payload.job_id}#recover-{uuid.uuid4().hex[:8]}")
        JOBS_RECOVERED.inc()
        log.warning("job %s was lost by Redis (no queued job, no lease); queued again from "
                    "the SQL record of unfinished jobs", payload.job_id)
        return True

    async def _restore_request(self, request: ResearchRequestMsg) -> None:
        """The request record and its thread link as queued, unless Redis still has them
        (what it has is newer)."""
        await self.redis.set(request.key, request.to_json(), nx=True, ex=KEEP_S)
        await self.redis.set(thread_key(request.channel, request.thread_ts), request.key,
                             nx=True, ex=KEEP_S)


async def sweep_forever(sweep: Sweep, every_s: float) -> None:
    """A round every `every_s`; Redis or the database away costs a round, not the sweep."""
    pruned = 0.0
    while True:
        try:
            await sweep.round()
            if time.monotonic() - pruned >= PRUNE_EVERY_S:
                await sweep.records.forget_ended()
                pruned = time.monotonic()
        except (RedisError, OSError, SQLAlchemyError, StoreUnavailable) as exc:
            log.warning("sweep of unfinished jobs: %s; trying again next round", exc)
        await asyncio.sleep(every_s)


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value
