"""The playground over HTTP against the real bot (slack-bolt, signature checks on, real Redis):
page messages become signed Events API callbacks, clicks become signed block_actions, changes
stream as server-sent events, and deliveries are retried the way Slack retries them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest
import redis.asyncio as aioredis
from slack_bolt.async_app import AsyncBoltRequest

from playground.deliveries import CONNECTION_FAILED, HTTP_ERROR, TIMEOUT
from playground.fake_slack import BOT_USER_ID, Message
from playground.server import Playground, PlaygroundError
from tests.playground_stack import ALICE, BOB, BotServer, playground_stack, real_redis
from tests.slack_driver import RecordingQueue as Recorder

JSON = dict[str, Any]


@pytest.fixture
async def redis() -> AsyncIterator[aioredis.Redis]:
    async with real_redis() as client:
        yield client


class Seen:
    """The `message` events the bot received, with their retry headers."""

    def __init__(self, bot: BotServer) -> None:
        self.bodies: list[JSON] = []
        self.retries: list[tuple[str, str]] = []
        app = bot.app or bot.build()
        app.middleware(self._record)  # beside the bot's own listeners, not instead of them

    async def _record(self, body: JSON, request: AsyncBoltRequest,
                      next: Callable[[], Awaitable[Any]]) -> Any:
        if (body.get("event") or {}).get("type") == "message":
            self.bodies.append(body)
            num = request.headers.get("x-slack-retry-num") or [""]
            reason = request.headers.get("x-slack-retry-reason") or [""]
            self.retries.append((num[0], reason[0]))
        return await next()


async def post(session: aiohttp.ClientSession, url: str, body: JSON) -> tuple[int, JSON]:
    async with session.post(url, json=body) as resp:
        data: JSON = await resp.json()
        return resp.status, data


def replies(pg: Playground, parent_ts: str) -> list[Message]:
    return [m for m in pg.fake.messages(pg.channel, parent_ts) if m.ts != parent_ts]


def buttons(msg: Message) -> list[str]:
    return [e["action_id"] for b in msg.blocks if b["type"] == "actions" for e in b["elements"]]


async def test_a_page_message_reaches_the_real_bot_which_answers_with_the_picker(
        redis: aioredis.Redis) -> None:
    async with playground_stack(redis, start_bot=False) as (pg, bot), \
            aiohttp.ClientSession() as session:
        bot.options["process_before_response"] = True
        seen = Seen(bot)
        await bot.start()
        status, body = await post(session, f"{pg.url}/ui/message", {
            "channel": pg.channel, "user": ALICE,
            "text": f"<@{BOT_USER_ID}> what moved copper foil prices?"})
        assert status == 200 and body["ok"] and len(body["event_ids"]) == 2
        await pg.deliverer.idle()
        assert all(d.delivered and d.attempts[-1].status == 200 for d in pg.deliverer.deliveries)
        [picker] = replies(pg, body["ts"])
        assert buttons(picker) == ["depth_auto", "depth_standard", "depth_deep", "depth_preview"]
        assert picker.thread_ts == body["ts"]
        [envelope] = seen.bodies
        assert envelope["type"] == "event_callback" and envelope["event_id"] in body["event_ids"]
        assert envelope["team_id"] and envelope["api_app_id"] and envelope["event_time"]
        assert envelope["authorizations"][0]["user_id"] == BOT_USER_ID
        event = envelope["event"]
        assert (event["type"], event["user"], event["ts"]) == ("message", ALICE, body["ts"])
        assert seen.retries == [("", "")]


async def test_a_thread_reply_without_a_mention_is_a_message_event_only(
        redis: aioredis.Redis) -> None:
    async with playground_stack(redis, start_bot=False) as (pg, bot):
        bot.options["process_before_response"] = True
        seen = Seen(bot)
        await bot.start()
        parent, _ = pg.say(ALICE, f"<@{BOT_USER_ID}> heat pumps?")
        await pg.deliverer.idle()
        reply, sent = pg.say(BOB, "and in Germany?", thread_ts=parent.ts)
        assert len(sent) == 1
        await pg.deliverer.idle()
        event = seen.bodies[-1]["event"]
        assert event["thread_ts"] == parent.ts and event["parent_user_id"] == ALICE
        assert event["text"] == "and in Germany?" and event["ts"] == reply.ts
        thread = replies(pg, parent.ts)
        assert reply.ts in [m.ts for m in thread]
        # The bot took it as a follow-up, before any depth was chosen:
        assert thread[-1].text.startswith("Pick a depth above first")


async def test_clicks_are_signed_block_actions_for_the_real_bot(redis: aioredis.Redis) -> None:
    enqueued = Recorder()
    async with playground_stack(redis, queue=enqueued, start_bot=False) as (pg, bot), \
            aiohttp.ClientSession() as session:
        bot.options["process_before_response"] = True
        Seen(bot)
        await bot.start()
        parent, _ = pg.say(ALICE, f"<@{BOT_USER_ID}> copper foil?")
        await pg.deliverer.idle()
        [picker] = replies(pg, parent.ts)
        click = {"channel": pg.channel, "message_ts": picker.ts, "action_id": "depth_deep",
                 "block_id": "depth_picker"}
        assert (await post(session, f"{pg.url}/ui/action", {**click, "user": BOB}))[0] == 200
        await pg.deliverer.idle()
        [refusal] = pg.fake.ephemerals(pg.channel, BOB)
        assert refusal.text == f"Only <@{ALICE}> can choose the depth for this request."
        assert enqueued.research_requests == []

        assert (await post(session, f"{pg.url}/ui/action", {**click, "user": ALICE}))[0] == 200
        await pg.deliverer.idle()
        [request] = enqueued.research_requests
        assert (request.depth, request.user, request.thread_ts) == ("deep", ALICE, parent.ts)
        updated = pg.fake.message(pg.channel, picker.ts)
        assert updated is not None and updated.text == "Depth: Deep — queued"

        status, body = await post(session, f"{pg.url}/ui/action",
                                  {**click, "action_id": "nope", "user": ALICE})
        assert (status, body) == (404, {"ok": False, "error": "action_not_found"})
        status, body = await post(session, f"{pg.url}/ui/message",
                                  {"channel": pg.channel, "user": "U0NOBODY", "text": "hi"})
        assert (status, body["error"]) == (400, "user_not_found")
        async with session.post(f"{pg.url}/ui/message", data="text=hi&user=U0ALICE",
                                headers={"Content-Type": "text/plain"}) as resp:
            assert resp.status == 415  # no form posts from other web sites


async def test_a_forged_signature_is_refused_and_retried_like_slack(
        redis: aioredis.Redis) -> None:
    async with playground_stack(redis, secret="not-the-bots-secret") as (pg, _):
        pg.deliverer.retry_delay_s = 0.01
        parent, _ = pg.say(ALICE, f"<@{BOT_USER_ID}> copper foil?")
        await pg.deliverer.idle()
        for delivery in pg.deliverer.deliveries:
            assert not delivery.delivered
            assert [a.status for a in delivery.attempts] == [401] * 4
            assert {a.reason for a in delivery.attempts} == {HTTP_ERROR}
        assert replies(pg, parent.ts) == []
        assert pg.fake.calls() == []


async def test_deliveries_wait_for_a_bot_that_is_down(redis: aioredis.Redis) -> None:
    async with playground_stack(redis, start_bot=False, down_retry_s=0.1) as (pg, bot):
        bot.options["process_before_response"] = True
        seen = Seen(bot)
        parent, _ = pg.say(ALICE, f"<@{BOT_USER_ID}> lithium carbonate?")
        for _ in range(100):
            if all(len(d.attempts) >= 2 for d in pg.deliverer.deliveries):
                break
            await asyncio.sleep(0.02)
        state = pg.state(ALICE)
        assert state["delivery"] == {"retrying": 2, "reason": CONNECTION_FAILED}
        await bot.start()
        await pg.deliverer.idle()
        assert all(d.delivered for d in pg.deliverer.deliveries)
        [picker] = replies(pg, parent.ts)
        assert buttons(picker) == ["depth_auto", "depth_standard", "depth_deep", "depth_preview"]
        num, reason = seen.retries[0]
        assert int(num) >= 1 and reason == CONNECTION_FAILED
        assert pg.state(ALICE)["delivery"] == {"retrying": 0, "reason": None}


async def test_an_unanswered_event_is_retried_with_http_timeout(redis: aioredis.Redis) -> None:
    async with playground_stack(redis, start_bot=False, ack_timeout_s=0.3) as (pg, bot):
        pg.deliverer.retry_delay_s = 0.01
        bot.options["process_before_response"] = True  # bolt answers when the handler ends
        app = bot.build()
        headers: list[tuple[str, str]] = []

        async def slow(request: AsyncBoltRequest, next: Callable[[], Awaitable[Any]]) -> Any:
            num = (request.headers.get("x-slack-retry-num") or [""])[0]
            headers.append((num, (request.headers.get("x-slack-retry-reason") or [""])[0]))
            if not num:
                await asyncio.sleep(0.6)  # the first delivery is answered too late
            return await next()

        app.middleware(slow)
        await bot.start()
        pg.say(ALICE, "no mention, just talking")
        await pg.deliverer.idle()
        [delivery] = pg.deliverer.deliveries
        assert delivery.delivered
        assert [a.reason for a in delivery.attempts] == [TIMEOUT, None]
        assert headers[:2] == [("", ""), ("1", TIMEOUT)]
        await asyncio.sleep(0.4)  # let the late first handler finish before the bot stops


async def read_event(resp: aiohttp.ClientResponse, timeout: float = 5.0) -> JSON:
    async with asyncio.timeout(timeout):
        async for raw in resp.content:
            line = raw.decode().strip()
            if line.startswith("data: "):
                data: JSON = json.loads(line[len("data: "):])
                return data
    raise AssertionError("stream ended")


async def test_changes_stream_to_every_tab_ephemerals_only_to_their_user() -> None:
    async with Playground("http://127.0.0.1:9/slack/events", "s", "xoxb-t",
                          heartbeat_s=0.2) as pg, aiohttp.ClientSession() as session:
        async with session.get(f"{pg.url}/ui/stream?user={ALICE}") as alice, \
                session.get(f"{pg.url}/ui/stream?user={BOB}") as bob:
            assert alice.headers["Content-Type"].startswith("text/event-stream")
            await asyncio.sleep(0.05)
            pg.fake.call("chat.postEphemeral", channel=pg.channel, user=BOB, text="psst")
            posted = pg.fake.call("chat.postMessage", channel=pg.channel, text="*hello*")
            first = await read_event(bob)
            assert first["kind"] == "ephemeral" and first["message"]["ephemeral_for"] == BOB
            assert (await read_event(bob))["ts"] == posted["ts"]
            got = await read_event(alice)
            assert (got["kind"], got["ts"], got["message"]["text"]) == (
                "posted", posted["ts"], "*hello*")
            assert got["seq"] == pg.state(ALICE)["seq"]
        state = pg.state(ALICE)
        assert [m["text"] for m in state["messages"]] == ["*hello*"]
        assert state["ephemerals"] == [] and len(pg.state(BOB)["ephemerals"]) == 1


async def test_stopping_ends_open_streams_and_the_page_is_served() -> None:
    pg = Playground("http://127.0.0.1:9/slack/events", "s", "xoxb-t")
    await pg.start()
    async with aiohttp.ClientSession() as session:
        async with session.get(pg.url + "/") as page:
            html = await page.text()
            assert page.status == 200 and "RED Searcher" in html and "/static/app.js" in html
        for name in ("app.js", "style.css"):
            async with session.get(f"{pg.url}/static/{name}") as resp:
                assert resp.status == 200
        async with session.get(f"{pg.url}/ui/stream?user={ALICE}") as stream:
            await asyncio.sleep(0.05)
            await pg.stop()
            rest = await asyncio.wait_for(stream.content.read(), 5)
            assert b"data:" not in rest


async def test_a_response_url_answers_the_click(redis: aioredis.Redis) -> None:
    async with playground_stack(redis, start_bot=False) as (pg, bot):
        bot.options["process_before_response"] = True
        app = bot.build()

        async def on_ping(ack: Any, respond: Any) -> None:
            await ack()
            await respond(text="pong, only for you")

        app.action("ping")(on_ping)
        await bot.start()
        msg = pg.fake.call("chat.postMessage", channel=pg.channel, text="ping?", blocks=[
            {"type": "actions", "elements": [{"type": "button", "action_id": "ping",
                                              "text": {"type": "plain_text", "text": "Ping"}}]}])
        pg.click(BOB, str(msg["ts"]), "ping")
        await pg.deliverer.idle()
        for _ in range(100):
            if pg.fake.ephemerals(pg.channel, BOB):
                break
            await asyncio.sleep(0.02)
        assert [m.text for m in pg.fake.ephemerals(pg.channel, BOB)] == ["pong, only for you"]


async def test_a_click_on_an_ephemeral_message_has_no_message_body(
        redis: aioredis.Redis) -> None:
    async with playground_stack(redis, start_bot=False) as (pg, bot):
        bot.options["process_before_response"] = True
        app = bot.build()
        bodies: list[JSON] = []

        async def on_undo(ack: Any, body: JSON) -> None:
            await ack()
            bodies.append(body)

        app.action("undo")(on_undo)
        await bot.start()
        eph = pg.fake.call("chat.postEphemeral", channel=pg.channel, user=BOB, text="undo?",
                           blocks=[{"type": "section", "text": {"type": "mrkdwn", "text": "x"},
                                    "accessory": {"type": "button", "action_id": "undo",
                                                  "value": "v1", "text": {
                                                      "type": "plain_text", "text": "Undo"}}}])
        with pytest.raises(PlaygroundError):  # nobody else sees it, so nobody else clicks it
            pg.click(ALICE, str(eph["message_ts"]), "undo")
        pg.click(BOB, str(eph["message_ts"]), "undo")
        await pg.deliverer.idle()
        [body] = bodies
        assert body["container"]["is_ephemeral"] is True and "message" not in body
        assert body["actions"][0]["value"] == "v1" and body["user"]["id"] == BOB
        assert body["actions"][0]["block_id"]  # generated like Slack's when the block has none
