"""`/research`, the "Research this" shortcut, feedback buttons, the assistant container and the
Home tab: signed requests into the bot's real endpoint, the fake Slack Web API through the real
slack_sdk client, real Redis, and a local `response_url` that records what the bot answers."""

from __future__ import annotations

import copy
import json
import time
import urllib.parse
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from bot.commands import NO_TEXT, TAKEN, USAGE, parse_command
from bot.surfaces import GREETING, PROMPTS, THANKS
from contract.home import recent_runs
from contract.keys import request_key
from contract.requests import Requests
from playground.fake_slack import BOT_USER_ID
from tests.slack_driver import ALICE, BOB, CHANNEL, buttons, signed_headers
from tests.test_bot_app import Bot, StartBot, start_bot
from workers.answer_blocks import answer_blocks

__all__ = ["start_bot"]
DM = "D0ALICE"


@pytest.fixture
async def responses() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    """A `response_url` and what was posted to it."""
    got: list[dict[str, Any]] = []

    async def take(request: web.Request) -> web.Response:
        got.append(await request.json())
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_post("/respond", take)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}/respond", got
    await runner.cleanup()


async def send(bot: Bot, body: str, content_type: str) -> tuple[int, str]:
    async with bot.session.post(bot.url, data=body.encode(),
                                headers=signed_headers(body, content_type)) as resp:
        return resp.status, await resp.text()


async def command(bot: Bot, text: str, response_url: str, user: str = ALICE) -> tuple[int, str]:
    form = {"token": "legacy", "team_id": "T0FAKE", "channel_id": CHANNEL,
            "channel_name": "research", "user_id": user, "user_name": user.lower(),
            "command": "/research", "text": text, "api_app_id": "A0RED",
            "response_url": response_url, "trigger_id": "1.2.3"}
    return await send(bot, urllib.parse.urlencode(form), "application/x-www-form-urlencoded")


async def interaction(bot: Bot, payload: dict[str, Any]) -> int:
    body = urllib.parse.urlencode({"payload": json.dumps(payload)})
    status, _ = await send(bot, body, "application/x-www-form-urlencoded")
    return status


async def event(bot: Bot, inner: dict[str, Any]) -> int:
    body = {"token": "legacy", "team_id": "T0FAKE", "api_app_id": "A0RED",
            "type": "event_callback", "event_id": bot.next_event_id(),
            "event_time": int(time.time()), "event": inner,
            "authorizations": [{"team_id": "T0FAKE", "user_id": BOT_USER_ID, "is_bot": True}]}
    status, _ = await send(bot, json.dumps(body), "application/json")
    return status


def test_the_depth_is_the_commands_first_word() -> None:
    assert parse_command("deep how did prices move?") == ("deep", "how did prices move?")
    assert parse_command("  Standard: copper?") == ("standard", "copper?")
    assert parse_command("deeper thoughts on copper") == (None, "deeper thoughts on copper")
    assert parse_command("auto") == ("auto", "")


async def test_research_command_posts_a_picker_that_starts_a_thread(
        start_bot: StartBot, responses: tuple[str, list[dict[str, Any]]]) -> None:
    bot = await start_bot()
    url, answered = responses
    status, _ = await command(bot, "what is the payload capacity of &lt;cargo&gt; drones?", url)
    assert status == 200 and answered == []
    [picker] = bot.fake.messages(CHANNEL)
    assert picker.thread_ts is None and buttons(picker)[:3] == ["depth_auto", "depth_standard",
                                                              "depth_deep"]
    assert "payload capacity of &lt;cargo&gt; drones" in picker.blocks[0]["text"]["text"]
    request = await Requests(bot.store).for_thread(CHANNEL, picker.ts)
    assert request is not None and request.user == ALICE and request.team == "T0FAKE"
    assert request.question == "what is the payload capacity of <cargo> drones?"
    assert request.picker_ts == picker.ts and request.status == "choosing"
    await bot.click(ALICE, "depth_standard", copy.deepcopy(picker))
    assert [r.depth for r in bot.enqueued] == ["standard"]
    assert [r.key for r, _ in await recent_runs(bot.store, ALICE)] == [request.key]


async def test_research_command_with_a_depth_queues_at_once(
        start_bot: StartBot, responses: tuple[str, list[dict[str, Any]]]) -> None:
    bot = await start_bot()
    url, _ = responses
    await command(bot, "deep how did heat pump prices move?", url)
    [status_message] = bot.fake.messages(CHANNEL)
    assert status_message.text == "Depth: Deep — queued"
    assert buttons(status_message) == ["stop_research"]
    [request] = bot.enqueued
    assert request.depth == "deep" and request.thread_ts == status_message.ts
    assert request.question == "how did heat pump prices move?"


async def test_research_command_problems_are_told_to_the_person_only(
        start_bot: StartBot, responses: tuple[str, list[dict[str, Any]]]) -> None:
    bot = await start_bot(deep_allowed=("U0CAROL",))
    url, answered = responses
    status, body = await command(bot, "deep", url)
    assert status == 200 and USAGE in body and bot.fake.messages(CHANNEL) == []
    await command(bot, "deep copper prices?", url)  # not allowed deep: a picker instead
    [picker] = bot.fake.messages(CHANNEL)
    assert buttons(picker)[0] == "depth_auto" and bot.enqueued == []
    assert answered[-1]["text"].startswith("Deep research is not enabled for you here")
    bot.fake.fail("chat.postMessage", "not_in_channel")
    await command(bot, "copper prices?", url)
    assert "I cannot post here (not_in_channel)" in answered[-1]["text"]
    assert answered[-1].get("response_type", "ephemeral") == "ephemeral"


async def test_research_this_researches_a_message_in_its_thread(
        start_bot: StartBot, responses: tuple[str, list[dict[str, Any]]]) -> None:
    bot = await start_bot()
    url, answered = responses
    said = bot.fake.post_user_message(CHANNEL, BOB, "Why did <@U0ALICE|alice> say copper "
                                                    "foil prices rose 12%?")
    payload = {"type": "message_action", "callback_id": "research_this", "trigger_id": "1.2",
               "team": {"id": "T0FAKE"}, "user": {"id": ALICE}, "response_url": url,
               "channel": {"id": CHANNEL, "name": "research"},
               "message": {"type": "message", "user": BOB, "ts": said.ts, "text": said.text}}
    assert await interaction(bot, payload) == 200
    [picker] = [m for m in bot.fake.messages(CHANNEL, said.ts) if m.ts != said.ts]
    assert picker.thread_ts == said.ts
    request = await Requests(bot.store).load(request_key(CHANNEL, said.ts))
    assert request is not None and request.user == ALICE
    assert request.question == "Why did @alice say copper foil prices rose 12%?"
    # asked again (a new invocation: Slack gives it a trigger id of its own): the thread has
    # its request
    assert await interaction(bot, {**payload, "trigger_id": "1.3"}) == 200
    assert answered[-1]["text"] == TAKEN
    blank = bot.fake.post_user_message(CHANNEL, BOB, f"<@{BOT_USER_ID}>")
    assert await interaction(bot, {**payload, "message": {"ts": blank.ts, "text": blank.text}})
    assert answered[-1]["text"] == NO_TEXT


async def test_feedback_is_queued_for_the_threads_run_only(start_bot: StartBot) -> None:
    bot = await start_bot()
    _, mention = await bot.mention(f"<@{BOT_USER_ID}> copper foil prices?")
    request = await Requests(bot.store).load(request_key(CHANNEL, mention.ts))
    assert request is not None
    report = bot.fake.call("chat.postMessage", channel=CHANNEL, thread_ts=mention.ts,
                           text="Report", blocks=answer_blocks(
                               "Report [1]", ["https://a.example"],
                               feedback=(request.run_id, "report")))
    row = answer_blocks("x", [], feedback=(request.run_id, "report"))[-1]
    value = row["elements"][0]["negative_button"]["value"]

    def click(value: str) -> dict[str, Any]:
        return {"type": "block_actions", "team": {"id": "T0FAKE"}, "user": {"id": BOB},
                "channel": {"id": CHANNEL}, "trigger_id": "1.2",
                "container": {"type": "message", "message_ts": report["ts"],
                              "channel_id": CHANNEL, "thread_ts": mention.ts},
                "actions": [{"type": "feedback_buttons", "action_id": "answer_feedback",
                             "block_id": "f", "value": value, "action_ts": "1.1"}]}

    assert await interaction(bot, click(value)) == 200
    assert bot.queue.verdicts == [(report["ts"], BOB, "report", "negative")]
    assert [e.text for e in bot.fake.ephemerals(CHANNEL, BOB)] == [THANKS]
    assert await interaction(bot, click("positive:s00000000000:report")) == 200  # another run
    assert await interaction(bot, click("positive:" + request.run_id)) == 200  # malformed
    assert len(bot.queue.verdicts) == 1


async def test_the_assistant_container_greets_titles_and_researches(start_bot: StartBot) -> None:
    bot = await start_bot()
    opened = bot.fake.post_user_message(DM, BOT_USER_ID, "thread")  # Slack opens the thread
    assert await event(bot, {"type": "assistant_thread_started", "event_ts": "1.1",
                             "assistant_thread": {"user_id": ALICE, "channel_id": DM,
                                                  "thread_ts": opened.ts, "context": {}}}) == 200
    [greeting] = [m for m in bot.fake.messages(DM, opened.ts) if m.ts != opened.ts]
    assert greeting.text == GREETING
    assert bot.fake.surfaces.thread(DM, opened.ts).prompts == PROMPTS
    asked = bot.fake.post_user_message(DM, ALICE, PROMPTS[0]["message"], thread_ts=opened.ts)
    assert await event(bot, {"type": "message", "channel_type": "im", "user": ALICE,
                             "text": asked.text, "ts": asked.ts, "thread_ts": opened.ts,
                             "channel": DM, "event_ts": asked.ts}) == 200
    assert bot.fake.surfaces.thread(DM, opened.ts).title == PROMPTS[0]["message"]
    picker = bot.fake.messages(DM, opened.ts)[-1]
    assert buttons(picker)[:3] == ["depth_auto", "depth_standard", "depth_deep"]
    request = await Requests(bot.store).for_thread(DM, opened.ts)
    assert request is not None and request.question == PROMPTS[0]["message"]


async def test_the_agent_view_greets_once_and_its_questions_are_researched(
        start_bot: StartBot) -> None:
    """Slack's agent view: opening the app's Chat tab is `app_home_opened` with tab
    `messages` (sent every time); the person is greeted there once, and a question written
    there gets its own thread, titled, with the picker."""
    bot = await start_bot()
    opened = {"type": "app_home_opened", "user": ALICE, "channel": DM, "tab": "messages",
              "event_ts": "1.1"}
    assert await event(bot, opened) == 200
    assert await event(bot, {**opened, "event_ts": "1.2"}) == 200  # opened again
    [greeting] = bot.fake.messages(DM)
    assert greeting.text == GREETING and greeting.thread_ts is None
    assert bot.fake.surfaces.view(ALICE) is None  # the Home tab is not the Chat tab
    asked = bot.fake.post_user_message(DM, ALICE, PROMPTS[1]["message"])
    assert await event(bot, {"type": "message", "channel_type": "im", "user": ALICE,
                             "text": asked.text, "ts": asked.ts, "channel": DM,
                             "event_ts": asked.ts}) == 200
    assert bot.fake.surfaces.thread(DM, asked.ts).title == PROMPTS[1]["message"]
    [picker] = [m for m in bot.fake.messages(DM, asked.ts) if m.ts != asked.ts]
    assert buttons(picker)[:3] == ["depth_auto", "depth_standard", "depth_deep"]
    assert await event(bot, {**opened, "user": BOB, "channel": "D0BOB"}) == 200
    assert [m.text for m in bot.fake.messages("D0BOB")] == [GREETING]  # each person once


async def test_the_home_tab_lists_recent_runs_and_budgets(start_bot: StartBot) -> None:
    bot = await start_bot(max_steps=8, deep_allowed=("U0CAROL",))
    await bot.mention(f"<@{BOT_USER_ID}> what moved <!channel> copper foil prices?")
    assert await event(bot, {"type": "app_home_opened", "user": ALICE, "channel": "D0ALICE",
                             "tab": "home", "event_ts": "1.1"}) == 200
    view = bot.fake.surfaces.view(ALICE)
    assert view is not None and view["type"] == "home"
    text = json.dumps(view["blocks"])
    assert "what moved @channel copper foil prices?" in text and "<!channel>" not in text
    assert "depth not chosen" in text and "at most 60 min, Deep for at most 90 min" in text
    assert "expansions" not in text and "per part" not in text  # budget axes are internal
    assert "Deep: not enabled for you" in text
