"""What keeps the bot's event loop free for its acks under load (docs/reliability.md, "Acks
under load"): the Web API calls share one HTTP session, the picker's ts is written in one
round trip without ever undoing a click that came first, and the start-up heap is set aside
for the garbage collector while the bot runs (and given back when it stops)."""

from __future__ import annotations

import dataclasses
import gc
from pathlib import Path

import aiohttp
import redis.asyncio as aioredis
from aiohttp import web

from bot.app import build_app, web_app
from bot.server import GC_THRESHOLDS, start_bot
from bot.start import Starter
from contract.keys import request_key
from contract.requests import CHOOSING, QUEUED, Requests, ResearchRequestMsg
from playground.fake_slack import BOT_USER_ID, FakeSlack
from research_core.settings import Secret, Settings, SlackSettings, WorkerSettings
from tests.conftest import SLACK_TOKEN
from tests.slack_driver import ALICE, CHANNEL, SECRET, SlackDriver


def request(ts: str) -> ResearchRequestMsg:
    return ResearchRequestMsg(key=request_key(CHANNEL, ts), user=ALICE, channel=CHANNEL,
                              thread_ts=ts, ts=ts, question="copper?", status=CHOOSING)


async def test_the_pickers_ts_never_undoes_a_write_that_came_first(
        redis: aioredis.Redis) -> None:
    starter = Starter(redis, None, 4000, ("*",))
    requests = Requests(redis)
    alone = request("1.1")
    await requests.save(alone)
    await starter.remember_picker(alone, "1.2")  # as written: one compare-and-set
    assert (await requests.load(alone.key)) == alone.with_(picker_ts="1.2")

    clicked = request("2.1")  # a click queued it before the picker's ts was written
    await requests.save(clicked)
    await requests.update(clicked.key, lambda r: r.with_(status=QUEUED, depth="deep"))
    await starter.remember_picker(clicked, "2.2")
    stored = await requests.load(clicked.key)
    assert stored is not None and (stored.status, stored.depth, stored.picker_ts) == (
        QUEUED, "deep", "2.2")

    taken = request("3.1")  # the click wrote the picker's ts itself
    await requests.save(taken)
    await requests.update(taken.key, lambda r: r.with_(status=QUEUED, picker_ts="3.0"))
    await starter.remember_picker(taken, "3.2")
    stored = await requests.load(taken.key)
    assert stored is not None and (stored.status, stored.picker_ts) == (QUEUED, "3.0")

    gone = request("4.1")  # expired meanwhile: nothing is written back
    await starter.remember_picker(gone, "4.2")
    assert await requests.load(gone.key) is None
    assert 0 < await redis.ttl(alone.key) <= 7 * 24 * 3600


async def test_web_api_calls_share_one_session_while_the_bot_serves(
        redis: aioredis.Redis, fake: FakeSlack) -> None:
    app = build_app(bot_token=SLACK_TOKEN, signing_secret=SECRET, api_url=fake.base_url,
                    redis=redis, process_before_response=True)
    assert app.client.session is None
    runner = web.AppRunner(web_app(app, SECRET))
    await runner.setup()
    session = app.client.session
    assert isinstance(session, aiohttp.ClientSession) and not session.closed
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        async with aiohttp.ClientSession() as client:
            driver = SlackDriver(f"http://127.0.0.1:{runner.addresses[0][1]}/slack/events",
                                 client, fake)
            for n in range(3):
                status, mention = await driver.mention(f"<@{BOT_USER_ID}> question {n}?")
                assert status == 200 and len(driver.replies(mention)) == 1
        assert app.client.session is session and not session.closed
    finally:
        await runner.cleanup()
    assert session.closed and app.client.session is None


async def test_the_start_up_heap_is_set_aside_while_the_bot_runs(
        redis_url: str, fake: FakeSlack, tmp_path: Path) -> None:
    defaults = gc.get_threshold()
    settings = dataclasses.replace(
        Settings(), data_dir=tmp_path,
        slack=SlackSettings(bot_token=Secret(SLACK_TOKEN), signing_secret=Secret(SECRET),
                            api_url=fake.base_url),
        worker=WorkerSettings(redis_url=redis_url))
    server = await start_bot(settings, redis_url, host="127.0.0.1", port=0)
    try:
        assert gc.get_freeze_count() > 10_000  # modules, the app, its clients
        assert gc.get_threshold() == GC_THRESHOLDS
    finally:
        await server.stop()
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == defaults
