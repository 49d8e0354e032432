"""An empty Redis database for a test: the local server's when it answers, else an embedded
server's (started here and stopped after)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import redis.asyncio as aioredis

from contract.redis_server import ensure_redis


@asynccontextmanager
async def empty_redis(url: str) -> AsyncIterator[str]:
    """The URL of an emptied database: `url`, or an embedded server's when none answers."""
    found, embedded = await ensure_redis(url)
    client = aioredis.Redis.from_url(found)
    try:
        await client.flushdb()
        yield found
    finally:
        await client.aclose()
        if embedded is not None:
            await embedded.stop()
