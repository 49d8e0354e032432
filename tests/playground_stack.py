"""The playground wired to the real bot for tests: a real Redis (embedded when none answers),
the real slack-bolt app on aiohttp at a port chosen before the playground starts (the playground
delivers to the bot, the bot calls the playground's Web API), and the playground itself."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import redis.asyncio as aioredis
from aiohttp import web
from slack_bolt.async_app import AsyncApp

from bot.app import EVENTS_PATH, Queue, ResearchRequestMsg, build_app, web_app
from contract.redis_server import free_port
from playground.server import Playground
from tests.redis_db import empty_redis

PLAYGROUND_REDIS_URL = os.environ.get("TEST_PLAYGROUND_REDIS_URL", "redis://127.0.0.1:6379/14")
SECRET = "playground-test-secret"
TOKEN = "xoxb-playground-test"
ALICE = "U0ALICE"
BOB = "U0BOB"


@asynccontextmanager
async def real_redis() -> AsyncIterator[aioredis.Redis]:
    async with empty_redis(PLAYGROUND_REDIS_URL) as url:
        client = aioredis.Redis.from_url(url)
        try:
            yield client
        finally:
            await client.aclose()


class StandInQueue:
    """The bot's queue as a test's stand-in worker sees it: every job accepted and dropped,
    no plan preview; a stand-in overrides what its test drives."""

    async def research(self, request: ResearchRequestMsg) -> bool:
        return True

    async def followup(self, request: ResearchRequestMsg, ts: str, user: str,
                       text: str) -> bool:
        return True

    async def feedback(self, request: ResearchRequestMsg, message_ts: str, user: str,
                       part_key: str, verdict: str) -> bool:
        return True

    async def preview(self, request: ResearchRequestMsg) -> bool:
        return False

    async def watch_set(self, request: ResearchRequestMsg, user: str, cadence: str) -> bool:
        return True


@dataclass
class BotServer:
    """The real bot app served over aiohttp on a fixed port; `start()` again after `stop()`."""

    port: int
    api_url: str
    redis: aioredis.Redis
    queue: Queue | None = None
    options: dict[str, Any] = field(default_factory=dict)
    app: AsyncApp | None = None
    runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{EVENTS_PATH}"

    def build(self) -> AsyncApp:
        self.app = build_app(bot_token=TOKEN, signing_secret=SECRET, api_url=self.api_url,
                             redis=self.redis, queue=self.queue, **self.options)
        return self.app

    async def start(self) -> None:
        app = self.app or self.build()
        self.runner = web.AppRunner(web_app(app, SECRET))
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port).start()

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None
        self.app = None


@asynccontextmanager
async def playground_stack(redis: aioredis.Redis, *, secret: str = SECRET,
                           queue: Queue | None = None, start_bot: bool = True,
                           **playground_options: Any) -> AsyncIterator[tuple[Playground,
                                                                             BotServer]]:
    """A started playground and a bot (started unless `start_bot=False`), both stopped after."""
    port = free_port()
    playground = Playground(f"http://127.0.0.1:{port}{EVENTS_PATH}", secret, TOKEN,
                            **playground_options)
    await playground.start()
    bot = BotServer(port, playground.api_url, redis, queue)
    try:
        if start_bot:
            await bot.start()
        yield playground, bot
    finally:
        await playground.stop()
        await bot.stop()
