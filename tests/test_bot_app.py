"""The bot's HTTP endpoint with signed Events API and interactivity requests, the fake Slack Web
API through the real slack_sdk client, and a real Redis (embedded when none answers)."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
import redis.asyncio as aioredis
from aiohttp import web

from bot.app import ResearchRequestMsg, build_app, strip_mention, web_app
from contract.keys import request_key
from playground.fake_slack import BOT_USER_ID, FakeSlack
from tests.conftest import SLACK_TOKEN
from tests.slack_driver import ALICE, BOB, CHANNEL, SECRET, RecordingQueue, SlackDriver, buttons


@dataclass
class Bot(SlackDriver):
    redis: aioredis.Redis | None = None
    queue: RecordingQueue = field(default_factory=RecordingQueue)

    @property
    def enqueued(self) -> list[ResearchRequestMsg]:
        return self.queue.research_requests

    @property
    def store(self) -> aioredis.Redis:
        assert self.redis is not None
        return self.redis


StartBot = Callable[..., Awaitable[Bot]]


@pytest.fixture
async def start_bot(fake: FakeSlack, redis: aioredis.Redis) -> AsyncIterator[StartBot]:
    runners: list[web.AppRunner] = []
    sessions: list[aiohttp.ClientSession] = []

    async def start(**options: Any) -> Bot:
        queue = RecordingQueue()
        options.setdefault("process_before_response", True)
        app = build_app(bot_token=SLACK_TOKEN, signing_secret=SECRET, api_url=fake.base_url,
                        redis=redis, queue=queue, **options)
        runner = web.AppRunner(web_app(app, SECRET))
        await runner.setup()
        runners.append(runner)
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        port = int(runner.addresses[0][1])
        session = aiohttp.ClientSession()
        sessions.append(session)
        return Bot(f"http://127.0.0.1:{port}/slack/events", session, fake, redis=redis,
                   queue=queue)

    yield start
    for session in sessions:
        await session.close()
    for runner in runners:
        await runner.cleanup()


async def test_a_forged_signature_is_refused_and_nothing_is_posted(start_bot: StartBot) -> None:
    bot = await start_bot()
    status, mention = await bot.mention(f"<@{BOT_USER_ID}> copper foil prices?",
                                        secret="not-the-secret")
    assert status == 401
    assert bot.replies(mention) == []
    assert bot.fake.calls("chat.postMessage") == []
    assert await bot.store.get(request_key(CHANNEL, mention.ts)) is None


async def test_the_picker_says_what_each_depth_does_never_the_step_budget(
        start_bot: StartBot) -> None:
    bot = await start_bot(max_steps=8)  # what `make run` sets (RED_BUDGET_STEPS=8)
    _, mention = await bot.mention(f"<@{BOT_USER_ID}> what moved copper foil prices this year?")
    [picker] = bot.replies(mention)
    costs = picker.blocks[2]["elements"][0]["text"]
    assert "*Deep*: more sources" in costs and "8" not in costs and "step" not in costs


async def test_a_mention_gets_a_picker_in_its_thread(start_bot: StartBot) -> None:
    bot = await start_bot()
    status, mention = await bot.mention(
        f"<@{BOT_USER_ID}> what moved copper foil prices this year?")
    assert status == 200
    [picker] = bot.replies(mention)
    assert picker.thread_ts == mention.ts
    assert buttons(picker) == ["depth_auto", "depth_standard", "depth_deep", "depth_preview"]
    assert [b["type"] for b in picker.blocks] == ["section", "actions", "context"]
    assert "what moved copper foil prices this year?" in picker.blocks[0]["text"]["text"]
    costs = picker.blocks[2]["elements"][0]["text"]
    assert "*Standard*: a quick answer" in costs and "steps" not in costs  # no budget axes
    stored = json.loads(await bot.store.get(request_key(CHANNEL, mention.ts)) or "{}")
    assert stored["user"] == ALICE and stored["channel"] == CHANNEL
    assert stored["thread_ts"] == mention.ts and stored["status"] == "choosing"
    assert stored["question"] == "what moved copper foil prices this year?"
    assert stored["picker_ts"] == picker.ts
    assert bot.enqueued == []


async def test_acking_first_the_picker_still_follows(start_bot: StartBot) -> None:
    bot = await start_bot(process_before_response=False)
    status, mention = await bot.mention(f"<@{BOT_USER_ID}> heat pump sales in Q3?")
    assert status == 200
    for _ in range(200):
        if bot.replies(mention):
            break
        await asyncio.sleep(0.02)
    [picker] = bot.replies(mention)
    assert buttons(picker) == ["depth_auto", "depth_standard", "depth_deep", "depth_preview"]
    key = request_key(CHANNEL, mention.ts)
    for _ in range(200):  # the handler's last step, after the post: let it finish
        if json.loads(await bot.store.get(key) or "{}").get("picker_ts") == picker.ts:
            break
        await asyncio.sleep(0.02)
    assert json.loads(await bot.store.get(key) or "{}")["picker_ts"] == picker.ts


async def test_a_retried_delivery_gets_one_picker(start_bot: StartBot) -> None:
    bot = await start_bot()
    status, mention = await bot.mention(f"<@{BOT_USER_ID}> copper foil?", event_id="EvSAME")
    assert status == 200
    assert await bot.deliver(mention, "EvSAME") == 200
    assert len(bot.replies(mention)) == 1
    assert len(bot.fake.calls("chat.postMessage")) == 1


async def test_an_empty_question_gets_a_friendly_reply(start_bot: StartBot) -> None:
    bot = await start_bot()
    _, mention = await bot.mention(f"<@{BOT_USER_ID}>   ")
    [reply] = bot.replies(mention)
    assert reply.text.startswith("Please ask a question after mentioning me")
    assert buttons(reply) == []
    assert await bot.store.get(request_key(CHANNEL, mention.ts)) is None


async def test_an_oversized_question_gets_a_friendly_reply(start_bot: StartBot) -> None:
    bot = await start_bot()
    _, mention = await bot.mention(f"<@{BOT_USER_ID}> " + "x" * 20_000)
    [reply] = bot.replies(mention)
    assert "20,000 characters" in reply.text and "4,000" in reply.text
    assert buttons(reply) == []
    assert await bot.store.get(request_key(CHANNEL, mention.ts)) is None


async def test_the_bots_own_mentions_are_ignored(start_bot: StartBot) -> None:
    bot = await start_bot()
    _, mention = await bot.mention(f"<@{BOT_USER_ID}> echo?", user=BOT_USER_ID)
    assert bot.replies(mention) == []
    assert await bot.store.get(request_key(CHANNEL, mention.ts)) is None


async def test_only_the_requester_chooses_once(start_bot: StartBot) -> None:
    bot = await start_bot()
    _, mention = await bot.mention(f"<@{BOT_USER_ID}> what moved copper foil prices?")
    [posted] = bot.replies(mention)
    picker = copy.deepcopy(posted)  # the message as the clients saw it before any update
    key = request_key(CHANNEL, mention.ts)

    # Someone else: an ephemeral refusal, the picker unchanged, nothing enqueued.
    assert await bot.click(BOB, "depth_deep", picker) == 200
    [refusal] = bot.fake.ephemerals(CHANNEL, BOB)
    assert refusal.text == f"Only <@{ALICE}> can choose the depth for this request."
    assert bot.fake.calls("chat.update") == []
    assert buttons(posted) == ["depth_auto", "depth_standard", "depth_deep", "depth_preview"]
    assert bot.enqueued == []
    assert json.loads(await bot.store.get(key) or "{}")["status"] == "choosing"

    # The requester picks Deep: queued, enqueued once, the picker turned into the choice.
    assert await bot.click(ALICE, "depth_deep", picker) == 200
    [request] = bot.enqueued
    assert request.depth == "deep" and request.status == "queued"
    assert request.job_id == f"research:{CHANNEL}:{mention.ts}"
    assert request.user == ALICE and request.thread_ts == mention.ts
    updated = bot.fake.message(CHANNEL, picker.ts)
    assert updated is not None and updated.text == "Depth: Deep — queued"
    assert buttons(updated) == ["stop_research"]
    stored = json.loads(await bot.store.get(key) or "{}")
    assert stored["status"] == "queued" and stored["depth"] == "deep"

    # A second click, by anyone: nothing more.
    assert await bot.click(ALICE, "depth_standard", picker) == 200
    assert await bot.click(BOB, "depth_auto", picker) == 200
    assert len(bot.enqueued) == 1
    assert len(bot.fake.calls("chat.update")) == 1
    assert len(bot.fake.ephemerals(CHANNEL)) == 1
    assert json.loads(await bot.store.get(key) or "{}")["depth"] == "deep"


def test_strip_mention() -> None:
    assert strip_mention(f"<@{BOT_USER_ID}> hi there", BOT_USER_ID) == "hi there"
    assert strip_mention(f"<@{BOT_USER_ID}|red>  ", BOT_USER_ID) == ""
    assert strip_mention("<@U0OTHER> hi", None) == "hi"


async def test_a_follow_up_does_not_cancel_a_pending_stop(start_bot: StartBot) -> None:
    bot = await start_bot()
    _, mention = await bot.mention(f"<@{BOT_USER_ID}> what moved copper foil prices?")
    picker = copy.deepcopy(bot.replies(mention)[0])
    await bot.click(ALICE, "depth_deep", picker)
    status = bot.fake.message(CHANNEL, picker.ts)
    assert status is not None and buttons(status) == ["stop_research"]
    await bot.click(BOB, "stop_research", copy.deepcopy(status))
    assert not await bot.store.exists(f"red:stop:{request_key(CHANNEL, mention.ts)}")
    await bot.click(ALICE, "stop_research", copy.deepcopy(status))
    await bot.say_in_thread(mention.ts, "and in Germany?", user=BOB)
    assert bot.queue.followups and bot.queue.followups[0][2] == "and in Germany?"
    assert await bot.store.exists(f"red:stop:{request_key(CHANNEL, mention.ts)}")


async def test_deep_is_refused_for_someone_not_allowed(start_bot: StartBot) -> None:
    bot = await start_bot(deep_allowed=("U0CAROL",))
    _, mention = await bot.mention(f"<@{BOT_USER_ID}> what moved copper foil prices?")
    picker = copy.deepcopy(bot.replies(mention)[0])
    await bot.click(ALICE, "depth_deep", picker)
    [refusal] = bot.fake.ephemerals(CHANNEL, ALICE)
    assert refusal.text.startswith("Deep research is not enabled for you here")
    assert bot.enqueued == [] and buttons(bot.replies(mention)[0])[:3] == [
        "depth_auto", "depth_standard", "depth_deep"]
    await bot.click(ALICE, "depth_standard", picker)
    assert [r.depth for r in bot.enqueued] == ["standard"]
