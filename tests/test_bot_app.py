"""The bot's HTTP endpoint with signed Events API and interactivity requests, the fake Slack Web
API through the real slack_sdk client, and a real Redis (embedded when none answers)."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import hmac
import json
import time
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
import redis.asyncio as aioredis
from aiohttp import web

from bot.app import ResearchRequestMsg, build_app, request_key, strip_mention, web_app
from bot.fake_slack import BOT_USER_ID, FakeSlack, Message
from tests.conftest import SLACK_TOKEN
from workers.redis_server import ensure_redis

SECRET = "test-signing-secret"
CHANNEL = "C0RESEARCH"
ALICE = "U0ALICE"
BOB = "U0BOB"


@pytest.fixture
async def redis() -> AsyncIterator[aioredis.Redis]:
    url, embedded = await ensure_redis("redis://127.0.0.1:6379/15")
    client = aioredis.Redis.from_url(url)
    try:
        await client.flushdb()
        yield client
    finally:
        await client.aclose()
        if embedded is not None:
            await embedded.stop()


@dataclass
class Bot:
    url: str
    session: aiohttp.ClientSession
    fake: FakeSlack
    redis: aioredis.Redis
    enqueued: list[ResearchRequestMsg] = field(default_factory=list)
    seq: int = 0

    async def post(self, body: str, content_type: str, secret: str = SECRET) -> int:
        timestamp = str(int(time.time()))
        digest = hmac.new(secret.encode(), f"v0:{timestamp}:{body}".encode(),
                          hashlib.sha256).hexdigest()
        headers = {"Content-Type": content_type, "X-Slack-Request-Timestamp": timestamp,
                   "X-Slack-Signature": f"v0={digest}"}
        async with self.session.post(self.url, data=body.encode(), headers=headers) as resp:
            await resp.read()
            return resp.status

    async def mention(self, text: str, *, user: str = ALICE, event_id: str | None = None,
                      secret: str = SECRET) -> tuple[int, Message]:
        """A person writes `text` in the channel mentioning the bot; Slack delivers the event."""
        msg = self.fake.post_user_message(CHANNEL, user, text)
        self.seq += 1
        status = await self.deliver(msg, event_id or f"Ev{self.seq:04d}", secret)
        return status, msg

    async def deliver(self, msg: Message, event_id: str, secret: str = SECRET) -> int:
        body = {"token": "legacy", "team_id": "T0FAKE", "api_app_id": "A0RED",
                "type": "event_callback", "event_id": event_id, "event_time": int(time.time()),
                "authorizations": [{"team_id": "T0FAKE", "user_id": BOT_USER_ID,
                                    "is_bot": True}],
                "event": {"type": "app_mention", "user": msg.user, "text": msg.text,
                          "ts": msg.ts, "channel": msg.channel, "event_ts": msg.ts}}
        return await self.post(json.dumps(body), "application/json", secret)

    async def click(self, user: str, action_id: str, picker: Message) -> int:
        value = picker.blocks[1]["elements"][0]["value"]
        payload = {"type": "block_actions", "team": {"id": "T0FAKE"},
                   "user": {"id": user, "name": user.lower()}, "api_app_id": "A0RED",
                   "trigger_id": "1.2.3", "channel": {"id": CHANNEL, "name": "research"},
                   "container": {"type": "message", "message_ts": picker.ts,
                                 "channel_id": CHANNEL, "is_ephemeral": False},
                   "message": {"type": "message", "ts": picker.ts, "text": picker.text,
                               "blocks": picker.blocks},
                   "actions": [{"type": "button", "block_id": "depth_picker",
                                "action_id": action_id, "value": value,
                                "action_ts": str(time.time())}]}
        body = urllib.parse.urlencode({"payload": json.dumps(payload)})
        return await self.post(body, "application/x-www-form-urlencoded")

    def replies(self, mention: Message) -> list[Message]:
        return [m for m in self.fake.messages(CHANNEL, mention.ts) if m.ts != mention.ts]


StartBot = Callable[..., Awaitable[Bot]]


@pytest.fixture
async def start_bot(fake: FakeSlack, redis: aioredis.Redis) -> AsyncIterator[StartBot]:
    runners: list[web.AppRunner] = []
    sessions: list[aiohttp.ClientSession] = []

    async def start(**options: Any) -> Bot:
        enqueued: list[ResearchRequestMsg] = []

        async def enqueue(request: ResearchRequestMsg) -> str:
            enqueued.append(request)
            return request.job_id

        options.setdefault("process_before_response", True)
        app = build_app(bot_token=SLACK_TOKEN, signing_secret=SECRET, api_url=fake.base_url,
                        redis=redis, enqueue=enqueue, **options)
        runner = web.AppRunner(web_app(app))
        await runner.setup()
        runners.append(runner)
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        port = int(runner.addresses[0][1])
        session = aiohttp.ClientSession()
        sessions.append(session)
        return Bot(f"http://127.0.0.1:{port}/slack/events", session, fake, redis, enqueued)

    yield start
    for session in sessions:
        await session.close()
    for runner in runners:
        await runner.cleanup()


def buttons(msg: Message) -> list[str]:
    return [e["action_id"] for b in msg.blocks if b["type"] == "actions" for e in b["elements"]]


async def test_a_forged_signature_is_refused_and_nothing_is_posted(start_bot: StartBot) -> None:
    bot = await start_bot()
    status, mention = await bot.mention(f"<@{BOT_USER_ID}> copper foil prices?",
                                        secret="not-the-secret")
    assert status == 401
    assert bot.replies(mention) == []
    assert bot.fake.calls("chat.postMessage") == []
    assert await bot.redis.get(request_key(CHANNEL, mention.ts)) is None


async def test_a_mention_gets_a_picker_in_its_thread(start_bot: StartBot) -> None:
    bot = await start_bot()
    status, mention = await bot.mention(
        f"<@{BOT_USER_ID}> what moved copper foil prices this year?")
    assert status == 200
    [picker] = bot.replies(mention)
    assert picker.thread_ts == mention.ts
    assert buttons(picker) == ["depth_auto", "depth_standard", "depth_deep"]
    assert [b["type"] for b in picker.blocks] == ["section", "actions", "context"]
    assert "what moved copper foil prices this year?" in picker.blocks[0]["text"]["text"]
    assert "36 steps" in picker.blocks[2]["elements"][0]["text"]
    stored = json.loads(await bot.redis.get(request_key(CHANNEL, mention.ts)) or "{}")
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
    assert buttons(picker) == ["depth_auto", "depth_standard", "depth_deep"]
    key = request_key(CHANNEL, mention.ts)
    for _ in range(200):  # the handler's last step, after the post: let it finish
        if json.loads(await bot.redis.get(key) or "{}").get("picker_ts") == picker.ts:
            break
        await asyncio.sleep(0.02)
    assert json.loads(await bot.redis.get(key) or "{}")["picker_ts"] == picker.ts


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
    assert await bot.redis.get(request_key(CHANNEL, mention.ts)) is None


async def test_an_oversized_question_gets_a_friendly_reply(start_bot: StartBot) -> None:
    bot = await start_bot()
    _, mention = await bot.mention(f"<@{BOT_USER_ID}> " + "x" * 20_000)
    [reply] = bot.replies(mention)
    assert "20,000 characters" in reply.text and "4,000" in reply.text
    assert buttons(reply) == []
    assert await bot.redis.get(request_key(CHANNEL, mention.ts)) is None


async def test_the_bots_own_mentions_are_ignored(start_bot: StartBot) -> None:
    bot = await start_bot()
    _, mention = await bot.mention(f"<@{BOT_USER_ID}> echo?", user=BOT_USER_ID)
    assert bot.replies(mention) == []
    assert await bot.redis.get(request_key(CHANNEL, mention.ts)) is None


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
    assert buttons(posted) == ["depth_auto", "depth_standard", "depth_deep"]
    assert bot.enqueued == []
    assert json.loads(await bot.redis.get(key) or "{}")["status"] == "choosing"

    # The requester picks Deep: queued, enqueued once, the picker turned into the choice.
    assert await bot.click(ALICE, "depth_deep", picker) == 200
    [request] = bot.enqueued
    assert request.depth == "deep" and request.status == "queued"
    assert request.job_id == f"research:{CHANNEL}:{mention.ts}"
    assert request.user == ALICE and request.thread_ts == mention.ts
    updated = bot.fake.message(CHANNEL, picker.ts)
    assert updated is not None and updated.text == "Depth: Deep — queued"
    assert buttons(updated) == []
    stored = json.loads(await bot.redis.get(key) or "{}")
    assert stored["status"] == "queued" and stored["depth"] == "deep"

    # A second click, by anyone: nothing more.
    assert await bot.click(ALICE, "depth_standard", picker) == 200
    assert await bot.click(BOB, "depth_auto", picker) == 200
    assert len(bot.enqueued) == 1
    assert len(bot.fake.calls("chat.update")) == 1
    assert len(bot.fake.ephemerals(CHANNEL)) == 1
    assert json.loads(await bot.redis.get(key) or "{}")["depth"] == "deep"


def test_strip_mention() -> None:
    assert strip_mention(f"<@{BOT_USER_ID}> hi there", BOT_USER_ID) == "hi there"
    assert strip_mention(f"<@{BOT_USER_ID}|red>  ", BOT_USER_ID) == ""
    assert strip_mention("<@U0OTHER> hi", None) == "hi"
