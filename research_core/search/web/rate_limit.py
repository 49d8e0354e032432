"""Request rates per search backend. `LocalRateLimiter` paces one process; `RedisRateLimiter`
paces every worker that shares a Redis, so ten workers do not hammer one API key.

Both are fixed windows: a rate of r requests per second allows ceil(r) requests in each
1-second window (a rate below 1 allows one request per 1/r seconds)."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import redis.asyncio as aioredis

DEFAULT_RATE_PER_S = 1.0


@dataclass(frozen=True)
class Window:
    seconds: float
    limit: int

    @classmethod
    def for_rate(cls, per_s: float) -> Window:
        if per_s >= 1:
            return cls(1.0, math.ceil(per_s))
        return cls(1.0 / per_s, 1)

    def index(self, now: float) -> int:
        return int(now // self.seconds)

    def wait_after(self, index: int, now: float) -> float:
        """Seconds from `now` to the start of the window after `index`."""
        return max(0.0, (index + 1) * self.seconds - now) + 0.001


@dataclass
class LocalRateLimiter:
    rates: Mapping[str, float]
    _counts: dict[str, tuple[int, int]] = field(default_factory=dict)

    def window(self, key: str) -> Window:
        return Window.for_rate(self.rates.get(key, DEFAULT_RATE_PER_S))

    async def acquire(self, key: str) -> None:
        window = self.window(key)
        while True:
            now = time.time()
            index = window.index(now)
            seen, count = self._counts.get(key, (index, 0))
            count = count if seen == index else 0
            if count < window.limit:
                self._counts[key] = (index, count + 1)
                return
            await asyncio.sleep(window.wait_after(index, now))


@dataclass
class RedisRateLimiter:
    """One counter per backend and window in Redis (INCR + EXPIRE), shared by all workers."""

    client: aioredis.Redis
    rates: Mapping[str, float]
    prefix: str  # the workers share one (contract.keys.RATE_PREFIX)

    async def acquire(self, key: str) -> None:
        window = Window.for_rate(self.rates.get(key, DEFAULT_RATE_PER_S))
        while True:
            now = time.time()
            index = window.index(now)
            name = f"{self.prefix}{key}:{index}"
            async with self.client.pipeline(transaction=True) as pipe:
                pipe.incr(name)
                pipe.expire(name, math.ceil(window.seconds) + 1)
                count, _ = await pipe.execute()
            if int(count) <= window.limit:
                return
            await asyncio.sleep(window.wait_after(index, now))
