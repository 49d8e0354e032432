"""Depth pickers Slack did not take (a 429 storm past the client's own retries, a 5xx, a
dropped connection): kept in Redis and posted again later, never dropped.

A request whose picker failed stays stored as "choosing" without a picker; its key goes in the
sorted set PICKERS_KEY, due after a growing pause (FIRST_WAIT_S, doubling, at most MAX_WAIT_S).
The bot process that met the failure posts it again when it is due (one replica takes each
key: ZREM); a picker still failing after MAX_TRIES is given up with one log line. A request
chosen or gone meanwhile is simply forgotten. After a bot restart, the next picker that fails
(or any mention) wakes the loop again for what is still pending.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

import redis.asyncio as aioredis
from redis.exceptions import RedisError
from slack_sdk.web.async_client import AsyncWebClient

from contract.keys import PICKER_TRIES_KEY, PICKERS_KEY
from contract.redis_server import awaited
from contract.requests import CHOOSING, Requests, ResearchRequestMsg
from contract.slack_client import SLACK_FAILURES, is_outage, slack_error

log = logging.getLogger("bot.pickers")

FIRST_WAIT_S = 1.0
MAX_WAIT_S = 60.0
MAX_TRIES = 20  # about fifteen minutes of an outage
Post = Callable[[AsyncWebClient, ResearchRequestMsg], Awaitable[None]]


class PendingPickers:
    def __init__(self, requests: Requests, post: Post) -> None:
        self.requests = requests
        self.redis: aioredis.Redis = requests.redis
        self.post = post
        self.clients: dict[str, AsyncWebClient] = {}  # the workspace's client, by team
        self._task: asyncio.Task[None] | None = None

    async def later(self, client: AsyncWebClient, request: ResearchRequestMsg,
                    error: str) -> None:
        """Post the request's picker again after a pause (the `error` it met is logged)."""
        self.clients[request.team or ""] = client
        tries = int(await awaited(self.redis.hincrby(PICKER_TRIES_KEY, request.key, 1)))
        if tries > MAX_TRIES:
            log.error("picker for %s not posted after %d tries (%s); giving up", request.key,
                      tries - 1, error)
            await self._forget(request.key)
            return
        wait = min(FIRST_WAIT_S * 2 ** (tries - 1), MAX_WAIT_S)
        log.warning("picker for %s not posted (%s); trying again in %gs", request.key, error,
                    wait)
        await awaited(self.redis.zadd(PICKERS_KEY, {request.key: time.time() + wait}))
        self.wake()

    def wake(self) -> None:
        """Run the loop in this process unless it runs already."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        try:
            await self._post_due()
        except RedisError as exc:  # the next failed picker (or mention) wakes it again
            log.warning("pending pickers not posted for now: Redis unavailable (%s)", exc)

    async def _post_due(self) -> None:
        while True:
            first = await awaited(self.redis.zrange(PICKERS_KEY, 0, 0, withscores=True))
            if not first:
                return
            await asyncio.sleep(min(max(float(first[0][1]) - time.time(), 0.0), 1.0))
            due = await awaited(self.redis.zrangebyscore(PICKERS_KEY, 0, time.time()))
            for raw in due:
                key = raw.decode() if isinstance(raw, bytes) else str(raw)
                if await awaited(self.redis.zrem(PICKERS_KEY, key)):  # this replica's now
                    await self._retry(key)

    async def _retry(self, key: str) -> None:
        request = await self.requests.load(key)
        if request is None or request.status != CHOOSING or request.picker_ts:
            await self._forget(key)
            return
        client = self.clients.get(request.team or "")
        if client is None:  # no client for that workspace in this process yet
            await awaited(self.redis.zadd(PICKERS_KEY, {key: time.time() + MAX_WAIT_S}))
            return
        try:
            await self.post(client, request)
        except SLACK_FAILURES as exc:
            if is_outage(exc):
                await self.later(client, request, slack_error(exc))
                return
            log.warning("picker for %s not posted: %s", key, slack_error(exc))
        await self._forget(key)

    async def _forget(self, key: str) -> None:
        await awaited(self.redis.hdel(PICKER_TRIES_KEY, key))
        await awaited(self.redis.zrem(PICKERS_KEY, key))
