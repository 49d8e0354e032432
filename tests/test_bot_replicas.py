"""Two bot replicas behind no balancer, one Redis: Slack may deliver an event, or retry it, to
either. The same mention delivered to both at once enqueues nothing twice and posts one
picker; a click handled by one and the same click retried on the other change the request
once and queue one job."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator, Awaitable

import aiohttp
import pytest
from aiohttp import web
from arq.connections import ArqRedis

from bot.app import build_app, web_app
from contract.keys import ACTIVE_KEY
from contract.queue import JobQueue, connect
from contract.redis_server import awaited
from contract.requests import QUEUED, Requests
from playground.fake_slack import BOT_USER_ID, FakeSlack, Message
from tests.conftest import SLACK_TOKEN
from tests.slack_driver import ALICE, CHANNEL, SECRET, SlackDriver

MENTIONS = 12


@pytest.fixture
async def pool(redis_url: str) -> AsyncIterator[ArqRedis]:
    connected = await connect(redis_url)
    yield connected
    await connected.aclose()


@pytest.fixture
async def replicas(pool: ArqRedis, fake: FakeSlack) -> AsyncIterator[list[SlackDriver]]:
    """Two bots, each its own app and HTTP server, sharing Redis and the fake Slack."""
    runners: list[web.AppRunner] = []
    session = aiohttp.ClientSession()
    drivers: list[SlackDriver] = []
    for _ in range(2):
        app = build_app(bot_token=SLACK_TOKEN, signing_secret=SECRET, api_url=fake.base_url,
                        redis=pool, queue=JobQueue(pool), process_before_response=True)
        runner = web.AppRunner(web_app(app, SECRET))
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        runners.append(runner)
        url = f"http://127.0.0.1:{runner.addresses[0][1]}/slack/events"
        drivers.append(SlackDriver(url, session, fake))
    yield drivers
    await session.close()
    for runner in runners:
        await runner.cleanup()


def pickers(fake: FakeSlack, mention: Message) -> list[Message]:
    return [m for m in fake.messages(CHANNEL, mention.ts)
            if m.ts != mention.ts and "depth_standard" in json.dumps(m.blocks)]


async def both(first: Awaitable[int], second: Awaitable[int]) -> list[int]:
    """Two deliveries at the same moment."""
    return list(await asyncio.gather(first, second))


async def test_one_event_on_two_replicas_posts_one_picker(
        replicas: list[SlackDriver], fake: FakeSlack, pool: ArqRedis) -> None:
    a, b = replicas
    mentions = []
    for n in range(MENTIONS):
        msg = fake.post_user_message(CHANNEL, ALICE, f"<@{BOT_USER_ID}> question {n} "
                                     "about heat pump prices?")
        event_id = f"EvTwice{n:03d}"
        assert await both(a.deliver(msg, event_id), b.deliver(msg, event_id)) == [200, 200]
        mentions.append(msg)
    assert [len(pickers(fake, m)) for m in mentions] == [1] * MENTIONS
    assert await awaited(pool.hlen(ACTIVE_KEY)) == 0  # nothing queued before a click


async def test_a_click_and_its_retry_on_the_other_replica_queue_one_job(
        replicas: list[SlackDriver], fake: FakeSlack, pool: ArqRedis) -> None:
    a, b = replicas
    for n in range(MENTIONS):
        _, mention = await a.mention(f"<@{BOT_USER_ID}> question {n} about heat pump sales?")
        picker = copy.deepcopy(pickers(fake, mention)[0])  # a retry carries the same payload
        if n % 2:  # at the same moment on both, or the retry after the first answered
            assert await both(a.click(ALICE, "depth_standard", picker),
                              b.click(ALICE, "depth_deep", picker)) == [200, 200]
        else:
            assert await a.click(ALICE, "depth_standard", picker) == 200
            assert await b.click(ALICE, "depth_standard", picker) == 200
        request = await Requests(pool).for_thread(CHANNEL, mention.ts)
        assert request is not None and request.status == QUEUED
        edits = [c for c in fake.calls("chat.update") if c.params.get("ts") == picker.ts]
        assert len(edits) == 1, "the request was changed twice"
    assert len(await pool.queued_jobs()) == MENTIONS == await awaited(pool.hlen(ACTIVE_KEY))
