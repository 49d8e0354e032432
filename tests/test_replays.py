"""Replay probes: the same signed bytes posted again to the bot's real endpoint (real Redis, the
fake Slack Web API) while the signature still holds (its timestamp within five minutes).

Anyone who saw one request (a proxy's log, a captured body) can post it again with its headers,
and Slack's signature still holds. A slash command, an interaction and an event are each acted
on once however often, or however concurrently, they are posted again: every repeat is
answered 200 with nothing in it, goes no further, and is counted in
`redsearch_slack_duplicate_deliveries_total`. A new request with the same words (a new trigger
id, as Slack gives every invocation) is a new request.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client import REGISTRY

from bot.slack_http import MAX_CLOCK_SKEW_S
from contract.blocks import STOP_ACTION
from contract.keys import request_key
from contract.requests import Requests
from playground.fake_slack import BOT_USER_ID, Message
from redsearch.harness.slack_events import action_body, button_value
from tests.slack_driver import ALICE, BOB, CHANNEL, signed_headers
from tests.slack_stack import wait_for
from tests.test_bot_app import Bot, StartBot, start_bot
from tests.test_bot_surfaces import responses

__all__ = ["responses", "start_bot"]
FORM = "application/x-www-form-urlencoded"
REPLAYS = 3  # the first delivery and two repeats


def duplicates() -> float:
    return sum(s.value for family in REGISTRY.collect() for s in family.samples
               if s.name == "redsearch_slack_duplicate_deliveries_total")


async def post_again(bot: Bot, body: str, content_type: str, times: int = REPLAYS,
                     together: bool = False) -> list[tuple[int, str]]:
    """`body`, signed once, posted `times` times with the very same headers (one after the
    other, or all at once); each answer's status and text."""
    headers = signed_headers(body, content_type)

    async def once() -> tuple[int, str]:
        async with bot.session.post(bot.url, data=body.encode(), headers=headers) as resp:
            return resp.status, await resp.text()

    if together:
        return list(await asyncio.gather(*(once() for _ in range(times))))
    return [await once() for _ in range(times)]


def command_body(text: str, trigger_id: str = "1.2.3", response_url: str = "") -> str:
    return urllib.parse.urlencode({
        "token": "legacy", "team_id": "T0FAKE", "channel_id": CHANNEL,
        "channel_name": "research", "user_id": ALICE, "user_name": "alice",
        "command": "/research", "text": text, "api_app_id": "A0RED",
        "response_url": response_url or "http://127.0.0.1:9/respond", "trigger_id": trigger_id})


def event_body(inner: dict[str, Any], event_id: str) -> str:
    return json.dumps({"token": "legacy", "team_id": "T0FAKE", "api_app_id": "A0RED",
                       "type": "event_callback", "event_id": event_id,
                       "event_time": int(time.time()), "event": inner,
                       "authorizations": [{"team_id": "T0FAKE", "user_id": BOT_USER_ID,
                                           "is_bot": True}]})


def mention_event(msg: Message) -> dict[str, Any]:
    return {"type": "app_mention", "user": msg.user, "text": msg.text, "ts": msg.ts,
            "channel": msg.channel, "event_ts": msg.ts}




async def settled(check: Callable[[], bool], what: str, acked_first: bool) -> None:
    """Where the bot acks first, what the first delivery does happens after its answer."""
    if acked_first:
        await wait_for(check, 10, what)
        await asyncio.sleep(0.3)  # a repeat acted on would have acted by now


# -- slash commands ---------------------------------------------------------------------------

@pytest.mark.parametrize("together", [False, True], ids=["one-after-another", "all-at-once"])
@pytest.mark.parametrize("acked_first", [False, True], ids=["processed-first", "acked-first"])
async def test_a_replayed_command_queues_one_job(start_bot: StartBot, together: bool,
                                                 acked_first: bool) -> None:
    """The issue's case: the same signed `/research standard …` sent three times queued three
    jobs (three status messages); commands had no key but the clock."""
    bot = await start_bot(process_before_response=not acked_first)
    before = duplicates()
    answers = await post_again(bot, command_body("standard how did copper prices move?"),
                               FORM, together=together)
    assert [status for status, _ in answers] == [200] * REPLAYS
    await settled(lambda: len(bot.enqueued) == 1, "the queued research", acked_first)
    assert [r.depth for r in bot.enqueued] == ["standard"]
    assert [m.text for m in bot.fake.messages(CHANNEL)] == ["Depth: Standard — queued"]
    assert duplicates() == before + REPLAYS - 1

    # the same words asked again are a new command (Slack gives it a new trigger id)
    [(status, _)] = await post_again(bot, command_body("standard how did copper prices move?",
                                                      trigger_id="4.5.6"), FORM, times=1)
    assert status == 200
    await settled(lambda: len(bot.enqueued) == 2, "the second research", acked_first)
    assert len(bot.enqueued) == 2 and duplicates() == before + REPLAYS - 1


async def test_a_replayed_refusal_is_answered_once(start_bot: StartBot) -> None:
    """A command whose ack carries the answer (the usage line) is answered the first time only;
    a repeat gets an empty ack."""
    bot = await start_bot()
    answers = await post_again(bot, command_body("deep"), FORM)
    assert [status for status, _ in answers] == [200] * REPLAYS
    assert ["Usage" in text for _, text in answers] == [True] + [False] * (REPLAYS - 1)


# -- interactions -----------------------------------------------------------------------------

async def queued_research(bot: Bot) -> tuple[Message, Message]:
    """A mention whose Standard was clicked: its mention and its status message."""
    _, mention = await bot.mention(f"<@{BOT_USER_ID}> how did heat pump sales move?")
    [picker] = bot.replies(mention)
    assert await bot.click(ALICE, "depth_standard", picker) == 200
    [status] = bot.replies(mention)
    assert status.text.startswith("Depth: Standard")
    return mention, status


@pytest.mark.parametrize("together", [False, True], ids=["one-after-another", "all-at-once"])
async def test_a_replayed_stop_click_stops_once(start_bot: StartBot, together: bool) -> None:
    bot = await start_bot()
    mention, status = await queued_research(bot)
    before = duplicates()
    stop = action_body(ALICE, status, {"type": "button", "block_id": "b",
                                       "action_id": STOP_ACTION,
                                       "value": button_value(status, STOP_ACTION)},
                       trigger_id="9.9.9")
    answers = await post_again(bot, stop, FORM, together=together)
    assert [s for s, _ in answers] == [200] * REPLAYS
    edits = [c for c in bot.fake.calls("chat.update") if "stopping" in str(c.params)]
    assert len(edits) == 1, [c.params for c in edits]
    assert await Requests(bot.store).stop_requested(request_key(CHANNEL, mention.ts))
    assert duplicates() == before + REPLAYS - 1


async def test_a_replayed_depth_click_is_dropped_before_any_handler(start_bot: StartBot) -> None:
    """Two different clicks racing still queue one job (the request's NX mark); the same
    click posted again does not even reach the handler: it is counted as a repeat."""
    bot = await start_bot()
    _, mention = await bot.mention(f"<@{BOT_USER_ID}> copper foil exports?")
    [picker] = bot.replies(mention)
    before = duplicates()
    click = action_body(ALICE, picker, {"type": "button", "block_id": "b",
                                        "action_id": "depth_deep",
                                        "value": button_value(picker, "depth_deep")})
    answers = await post_again(bot, click, FORM, together=True)
    assert [s for s, _ in answers] == [200] * REPLAYS
    assert [r.depth for r in bot.enqueued] == ["deep"]
    assert duplicates() == before + REPLAYS - 1


async def test_a_replayed_shortcut_opens_one_request_and_tells_nobody_twice(
        start_bot: StartBot, responses: tuple[str, list[dict[str, Any]]]) -> None:
    bot = await start_bot()
    url, answered = responses
    said = bot.fake.post_user_message(CHANNEL, BOB, "Copper foil prices rose 12% this year?")
    payload = {"type": "message_action", "callback_id": "research_this", "trigger_id": "7.7",
               "team": {"id": "T0FAKE"}, "user": {"id": ALICE}, "response_url": url,
               "channel": {"id": CHANNEL, "name": "research"},
               "message": {"type": "message", "user": BOB, "ts": said.ts, "text": said.text}}
    before = duplicates()
    body = urllib.parse.urlencode({"payload": json.dumps(payload)})
    answers = await post_again(bot, body, FORM)
    assert [s for s, _ in answers] == [200] * REPLAYS
    assert len([m for m in bot.fake.messages(CHANNEL, said.ts) if m.ts != said.ts]) == 1
    assert answered == []  # a repeat would have been told "already has a research request"
    assert duplicates() == before + REPLAYS - 1


# -- events -----------------------------------------------------------------------------------

@pytest.mark.parametrize("together", [False, True], ids=["one-after-another", "all-at-once"])
async def test_a_replayed_mention_gets_one_picker(start_bot: StartBot, together: bool) -> None:
    """An event's key in what is signed is its event id: the same bytes again, or Slack's
    retry under a new timestamp, find it."""
    bot = await start_bot()
    msg = bot.fake.post_user_message(CHANNEL, ALICE, f"<@{BOT_USER_ID}> zinc prices in 2026?")
    before = duplicates()
    body = event_body(mention_event(msg), "EvReplay0001")
    answers = await post_again(bot, body, "application/json", together=together)
    assert [s for s, _ in answers] == [200] * REPLAYS
    assert len(bot.replies(msg)) == 1
    [(status, _)] = await post_again(bot, body, "application/json", times=1)  # re-signed
    assert status == 200 and len(bot.replies(msg)) == 1
    assert duplicates() == before + REPLAYS
    assert await bot.store.get(request_key(CHANNEL, msg.ts)) is not None


# -- how long a repeat is remembered ----------------------------------------------------------

async def test_a_repeat_is_remembered_as_long_as_its_signature_holds(
        start_bot: StartBot) -> None:
    """The key outlives the window in which the same timestamp is accepted (at most five
    minutes after it), and no longer: Redis does not fill up with old requests."""
    bot = await start_bot()
    assert (await post_again(bot, command_body("copper?"), FORM, times=1))[0][0] == 200
    keys = [k async for k in bot.store.scan_iter(match="red:signed:*")]
    assert len(keys) == 1
    ttl = await bot.store.ttl(keys[0])
    assert MAX_CLOCK_SKEW_S - 5 <= ttl <= MAX_CLOCK_SKEW_S + 1


async def test_a_replayed_home_opened_publishes_the_home_tab_once(start_bot: StartBot) -> None:
    """`app_home_opened` is an event like a mention: its id is its key, so the same bytes
    again neither publish the Home tab nor read usage a second time."""
    bot = await start_bot()
    before = duplicates()
    body = event_body({"type": "app_home_opened", "user": ALICE, "channel": "D0ALICE",
                       "tab": "home", "event_ts": f"{time.time():.6f}"}, "EvReplayHome1")
    answers = await post_again(bot, body, "application/json")
    assert [s for s, _ in answers] == [200] * REPLAYS
    await wait_for(lambda: len(bot.fake.calls("views.publish")) >= 1, 10, "the Home tab")
    await asyncio.sleep(0.3)  # a repeat acted on would have published by now
    assert len(bot.fake.calls("views.publish")) == 1
    assert duplicates() == before + REPLAYS - 1
