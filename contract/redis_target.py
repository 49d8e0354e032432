"""Where Redis is: a plain URL (`redis://`, `rediss://`, `unix://`) or, for high availability,
a Sentinel URL naming the sentinels and the monitored service:

    redis+sentinel://[:password@]host:port[,host:port…]/service[/db]

With Sentinel, ARQ and the bot ask the sentinels for the current primary and ask again after
a failover. Every connection retries a command that failed on a dropped connection, with
back-off for a few seconds, so that a restart or failover shows as a pause rather than an
error (a longer outage still raises, and the callers ride it out: see `workers.worker`).
"""

from __future__ import annotations

import asyncio

from arq.connections import ArqRedis, RedisSettings
from arq.jobs import Deserializer, Serializer
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from research_core.errors import SettingsError
from research_core.settings.service import REDIS_SCHEMES, SENTINEL_SCHEME, sentinel_target

SCHEMES = REDIS_SCHEMES
# A dropped connection is tried again after 0.04 s, doubling to RETRY_CAP_S, RETRIES times:
# about 8 s in all. The cap is what a Redis that is back costs at most before every client
# has reconnected (a cap of 1 s cost 0.9 s after a 3 s restart, for each of the chain
# reconciler → queue → poll); a refused local connection is cheap to try four times a second.
RETRIES = 34
RETRY_BASE_S = 0.02
RETRY_CAP_S = 0.25
SENTINEL_TIMEOUT_S = 1.0
RETRY_ON = [RedisConnectionError, RedisTimeoutError, ConnectionError, TimeoutError]


def is_sentinel(url: str) -> bool:
    return url.lower().startswith(SENTINEL_SCHEME + "://")


def command_backoff() -> ExponentialBackoff:
    return ExponentialBackoff(cap=RETRY_CAP_S, base=RETRY_BASE_S)


def command_retry() -> Retry:
    return Retry(command_backoff(), RETRIES)


def sentinel_settings(url: str) -> RedisSettings:
    """ARQ's settings for a `redis+sentinel://` URL (SettingsError when malformed)."""
    target = sentinel_target(url)
    return RedisSettings(host=list(target.sentinels), sentinel=True,
                         sentinel_master=target.service, database=target.db,
                         password=target.password)


def redis_settings(url: str) -> RedisSettings:
    """ARQ's settings for any Redis URL this project takes, with command retries."""
    if is_sentinel(url):
        return sentinel_settings(url)
    settings = RedisSettings.from_dsn(url)
    settings.retry = command_retry()
    settings.retry_on_error = list(RETRY_ON)
    settings.retry_on_timeout = True
    return settings


class SentinelArqRedis(ArqRedis):
    """ARQ's client on the primary that the sentinels name; closing it closes the clients
    of the sentinels too (ARQ's own Sentinel pool leaves them open)."""

    async def aclose(self, close_connection_pool: bool | None = None) -> None:
        await super().aclose(close_connection_pool)
        manager = getattr(self.connection_pool, "sentinel_manager", None)
        for client in getattr(manager, "sentinels", []):
            await client.aclose()


async def sentinel_pool(url: str, serializer: Serializer | None = None,
                        deserializer: Deserializer | None = None) -> ArqRedis:
    """ARQ's pool on the primary of a `redis+sentinel://` URL, with command retries: a
    command that meets the failover asks the sentinels again and is sent to the new primary."""
    target = sentinel_target(url)
    timeouts = {"socket_timeout": SENTINEL_TIMEOUT_S,
                "socket_connect_timeout": SENTINEL_TIMEOUT_S}
    sentinel = Sentinel(  # type: ignore[no-untyped-call]  # untyped in redis-py
        list(target.sentinels), sentinel_kwargs=timeouts)
    pool: ArqRedis = sentinel.master_for(target.service, redis_class=SentinelArqRedis, db=target.db,
                               password=target.password, retry=command_retry(),
                               retry_on_error=list(RETRY_ON))
    pool.job_serializer = serializer
    pool.job_deserializer = deserializer
    try:
        await pool.ping()
    except BaseException:
        await pool.aclose()
        raise
    return pool


async def sentinel_answers(url: str, timeout_s: float = 1.0) -> bool:
    """Whether the sentinels name a primary for the service and it answers PING."""
    try:
        pool = await asyncio.wait_for(sentinel_pool(url), timeout_s * 5)
    except (RedisError, OSError, TimeoutError, SettingsError):
        return False
    await pool.aclose()
    return True
