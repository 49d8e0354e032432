"""A run's lease in Redis: proof that one worker is working on it right now.

The holder renews it every heartbeat; a worker that dies stops renewing, the lease expires
after `ttl_s`, and the reconciler hands the run to another worker, which resumes it from its
checkpoint. Every change is compare-and-set on the holder's token (Lua), so a worker that lost
its lease can neither renew nor release someone else's. The token names the job and the worker
process (`job id|host:pid|random`), so an operator (or the chaos suite) can tell which worker
holds which run.
"""

from __future__ import annotations

import os
import socket
import uuid

import redis.asyncio as aioredis

from contract.keys import lease_key
from contract.redis_server import awaited

_RENEW = """
local holder = redis.call('get', KEYS[1])
if holder == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
if not holder then
  redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
"""


def worker_identity() -> str:
    """This worker process, as lease tokens name it: `host:pid`."""
    return f"{socket.gethostname()}:{os.getpid()}"


def holder_of(token: str) -> tuple[str, str]:
    """(job id, worker identity) of a lease token."""
    job, _, rest = token.partition("|")
    return job, rest.rpartition("|")[0]


class Lease:
    def __init__(self, redis: aioredis.Redis, run_id: str, job_id: str, ttl_s: float) -> None:
        self.redis = redis
        self.key = lease_key(run_id)
        self.token = f"{job_id}|{worker_identity()}|{uuid.uuid4().hex[:12]}"
        self.ttl_ms = int(ttl_s * 1000)

    async def acquire(self) -> bool:
        return bool(await self.redis.set(self.key, self.token, nx=True, px=self.ttl_ms))

    async def renew(self) -> bool:
        """False when another job holds the run now. A lease that merely expired (this worker
        stalled past its ttl) and that nobody took is taken back."""
        return bool(await awaited(self.redis.eval(_RENEW, 1, self.key, self.token,
                                                  str(self.ttl_ms))))

    async def release(self) -> None:
        await awaited(self.redis.eval(_RELEASE, 1, self.key, self.token))

    async def holder_job(self) -> str | None:
        """The job id of the current holder, or None when nobody holds the run."""
        raw = await self.redis.get(self.key)
        if raw is None:
            return None
        return holder_of(raw.decode() if isinstance(raw, bytes) else str(raw))[0]
