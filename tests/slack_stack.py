"""The whole Slack path in one test process: the fake Slack Web API, the bot's real HTTP
endpoint with signed requests, real Redis, the real ARQ queue and an ARQ worker running the
engine on scripted tiers (the fake OpenAI server) and a local corpus."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from arq.connections import ArqRedis

from bot.app import build_app, web_app
from contract.estimates import RecentEstimates
from contract.keys import ACTIVE_KEY
from contract.queue import JobQueue, connect
from contract.redis_server import awaited
from playground.fake_slack import FakeSlack, Message
from research_core.policy import Policy
from research_core.protocols import SearchBackend
from research_core.settings import Secret, Settings, SlackSettings, WorkerSettings
from research_core.store.jobs import LazyJobRecords
from research_core.store.usage import LazyUsage
from tests.conftest import AS_OF, SLACK_TOKEN, scripted_settings
from tests.engine_run import Serve, default_similarity
from tests.fakes.openai_server import Handler
from tests.slack_driver import CHANNEL, SECRET, SlackDriver
from workers.worker import run_worker


def flow_settings(base_url: str, fake_url: str, redis_url: str, data_dir: Path,
                  **overrides: Any) -> Settings:
    """Scripted tiers, the fake Slack, a fast heartbeat (lease 2 s) and a store in `data_dir`."""
    base = scripted_settings(base_url, **overrides)
    return dataclasses.replace(
        base, data_dir=data_dir, as_of=AS_OF,
        database_url=f"sqlite+aiosqlite:///{data_dir / 'runs.db'}",
        slack=SlackSettings(bot_token=Secret(SLACK_TOKEN), signing_secret=Secret(SECRET),
                            api_url=fake_url, progress_interval_s=0.2),
        worker=WorkerSettings(redis_url=redis_url, lease_s=2.0, heartbeat_s=0.5,
                              reconcile_every_s=0.5))


async def wait_for(predicate: Callable[[], bool], timeout_s: float = 60.0,
                   what: str = "condition") -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g}s waiting for {what}")
        await asyncio.sleep(0.05)


def header(msg: Message) -> str:
    first = msg.blocks[0] if msg.blocks else {}
    return str(first.get("text", {}).get("text", "")) if first.get("type") == "header" else ""


def contexts(msg: Message) -> list[str]:
    return [str(e.get("text", "")) for b in msg.blocks if b["type"] == "context"
            for e in b["elements"]]


def is_part(msg: Message) -> bool:
    return any(c.startswith("Sources:") for c in contexts(msg))


@dataclass
class Stack:
    driver: SlackDriver
    fake: FakeSlack
    pool: ArqRedis
    settings: Settings
    worker: asyncio.Task[None] | None = None

    def thread(self, mention: Message) -> list[Message]:
        return self.driver.replies(mention)

    def finals(self, mention: Message, title: str = "Research finished") -> list[Message]:
        return [m for m in self.thread(mention) if header(m).startswith(title)]

    def parts(self, mention: Message) -> list[Message]:
        return [m for m in self.thread(mention) if is_part(m)]

    def posted_texts(self) -> list[str]:
        return [str(c.params.get("text", "")) for c in self.fake.calls("chat.postMessage")
                if c.status == 200 and c.error is None]

    async def settled(self, timeout_s: float = 10.0) -> None:
        """Until no job is active: a job marks itself ended after its last message."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while await awaited(self.pool.hlen(ACTIVE_KEY)):
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"jobs still active after {timeout_s:g}s")
            await asyncio.sleep(0.05)

    async def stop_worker(self) -> None:
        if self.worker is not None:
            self.worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.worker
            self.worker = None


StartStack = Callable[..., Awaitable[Stack]]


@pytest.fixture
async def start_stack(serve: Serve, fake: FakeSlack, redis_url: str,
                      tmp_path: Path) -> AsyncIterator[StartStack]:
    default_redis = redis_url
    cleanups: list[Callable[[], Awaitable[None]]] = []

    async def start(handler: Handler, backend: SearchBackend, in_process_worker: bool = True,
                    redis: str | None = None, policy: Policy | None = None,
                    **overrides: Any) -> Stack:
        """`redis`: another Redis URL than the test database's (a Sentinel URL, say);
        `policy`: the team policy (docs/teams.md) the bot and the worker apply."""
        redis_url = redis or default_redis
        server = await serve(handler)
        settings = flow_settings(server.base_url, fake.base_url, redis_url, tmp_path,
                                 **overrides)
        settings = dataclasses.replace(settings, policy=policy or Policy())
        pool = await connect(redis_url)
        usage = LazyUsage(settings.db_url)
        records = LazyJobRecords(settings.db_url)  # as bot/server.py records what it queues
        app = build_app(bot_token=SLACK_TOKEN, signing_secret=SECRET, api_url=fake.base_url,
                        redis=pool, queue=JobQueue(pool, records), process_before_response=True,
                        policy=policy or Policy(), deep_allowed=settings.budget.deep_allowed,
                        plan_limit=settings.engine.max_children,
                        estimate=RecentEstimates(pool, fresh_s=0.0).line,  # runs end in a blink
                        usage=usage)
        runner = web.AppRunner(web_app(app, SECRET, pool))  # /metrics reads the queue too
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        session = aiohttp.ClientSession()
        url = f"http://127.0.0.1:{runner.addresses[0][1]}/slack/events"
        stack = Stack(SlackDriver(url, session, fake), fake, pool, settings)
        if in_process_worker:
            stack.worker = asyncio.create_task(run_worker(
                settings, redis_url, backend=backend, similarity=default_similarity()))

        async def cleanup() -> None:
            await stack.stop_worker()
            await session.close()
            await runner.cleanup()
            await pool.aclose()
            await usage.close()
            await records.close()

        cleanups.append(cleanup)
        return stack

    yield start
    for cleanup in cleanups:
        await cleanup()


__all__ = ["CHANNEL", "Stack", "StartStack", "contexts", "header", "is_part", "wait_for"]
