"""Rate limits per backend: in one process, and shared by several workers through Redis."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from contract.redis_server import EmbeddedRedis, redis_answers
from research_core.search.web.rate_limit import LocalRateLimiter, RedisRateLimiter, Window

LOCAL_REDIS = "redis://127.0.0.1:6379/0"


@pytest.fixture
async def redis_url() -> AsyncIterator[str]:
    """The Redis on 127.0.0.1:6379 when it answers, else an embedded one."""
    if await redis_answers(LOCAL_REDIS):
        yield LOCAL_REDIS
        return
    server = EmbeddedRedis()
    url = await server.start()
    yield url
    await server.stop()


def test_windows_for_rates() -> None:
    assert Window.for_rate(5) == Window(1.0, 5)
    assert Window.for_rate(2.5) == Window(1.0, 3)
    assert Window.for_rate(0.5) == Window(2.0, 1)


async def test_local_limiter_paces_one_backend_only() -> None:
    limiter = LocalRateLimiter({"brave": 2.0, "searxng": 100.0})
    stamps: list[float] = []
    for _ in range(5):
        await limiter.acquire("brave")
        stamps.append(time.time())
    # two per 1-second window: the fifth request comes two windows after the first
    assert stamps[4] - stamps[0] >= 0.99
    started = time.monotonic()
    for _ in range(20):
        await limiter.acquire("searxng")
    assert time.monotonic() - started < 0.5


async def test_redis_limit_is_shared_by_all_workers(redis_url: str) -> None:
    """Three workers, each with its own client and limiter, share 2 requests per second."""
    prefix = f"test:rate:{uuid.uuid4().hex}:"
    clients = [aioredis.Redis.from_url(redis_url) for _ in range(3)]
    stamps: list[float] = []

    async def worker(client: aioredis.Redis) -> None:
        limiter = RedisRateLimiter(client, {"brave": 2.0}, prefix=prefix)
        for _ in range(2):
            await limiter.acquire("brave")
            stamps.append(time.time())

    try:
        started = time.monotonic()
        await asyncio.gather(*(worker(c) for c in clients))
        elapsed = time.monotonic() - started
    finally:
        for client in clients:
            await client.aclose()
    stamps.sort()
    assert len(stamps) == 6
    # two per 1-second window across all workers: the fifth comes two windows after the first
    assert stamps[4] - stamps[0] >= 0.99 and elapsed >= 0.99
