"""Steers reach the run through the bot (issue 30): signed `message` events into the bot's real
endpoint, the fake Slack through slack_sdk, real Redis. While the research works, the
requester's message is a steer (acknowledged to them only); a question is a steer and still a
follow-up after the research; others' messages are follow-ups; after the research, a
follow-up shows a loading status at once. The acknowledgement says what the run will do with
the steer; a message after the research's last step (its steers closed) is a follow-up, and
its acknowledgement says so (tests/test_followup_at_end.py for the whole path)."""

from __future__ import annotations

import copy
import json

from bot.app import FOLLOWUP_STATUS
from contract.keys import ACTIVE_KEY, request_key, steer_key
from contract.redis_server import awaited
from contract.requests import FINISHED, Requests
from contract.steers import LATE, ThreadSteers
from playground.fake_slack import BOT_USER_ID
from research_core.policy import Policy
from tests.slack_driver import ALICE, BOB, CHANNEL
from tests.test_bot_app import Bot, StartBot, start_bot

__all__ = ["start_bot"]


async def running(bot: Bot) -> tuple[str, str]:
    """A mention whose Standard research is queued (its job active, as the queue keeps it)."""
    _, mention = await bot.mention(f"<@{BOT_USER_ID}> how did heat pump sales move in 2026?")
    await bot.click(ALICE, "depth_standard", copy.deepcopy(bot.replies(mention)[0]))
    [request] = bot.enqueued
    await awaited(bot.store.hset(ACTIVE_KEY, request.job_id, "{}"))
    return mention.ts, request.key


async def steers(bot: Bot, key: str) -> list[dict[str, str]]:
    return [json.loads(r) for r in await awaited(bot.store.lrange(steer_key(key), 0, -1))]


async def test_the_requesters_message_during_the_research_is_a_steer(
        start_bot: StartBot) -> None:
    bot = await start_bot()
    thread, key = await running(bot)
    _, said = await bot.say_in_thread(thread, "skip the UK, focus on prices")
    assert await steers(bot, key) == [{"who": ALICE, "text": "skip the UK, focus on prices",
                                       "ts": said.ts}]
    assert bot.queue.followups == []  # read by the research, not answered after it
    [ack] = bot.fake.ephemerals(CHANNEL, ALICE)
    assert ack.thread_ts == thread  # what the run will do, clause by clause
    assert ack.text == ("Noted: at its next step the research will drop the open "
                        "sub-questions about “UK”; research “prices” next, as a new "
                        "sub-question if no open one covers it, and drop the open "
                        "sub-questions far from it. I'll tell you here what it changed.")

    await bot.say_in_thread(thread, "and what happened in Germany?")
    assert [s["text"] for s in await steers(bot, key)][-1] == "and what happened in Germany?"
    assert [f[2] for f in bot.queue.followups] == ["and what happened in Germany?"]
    assert bot.fake.ephemerals(CHANNEL, ALICE)[-1].text == (
        "Noted: at its next step the research will move the open sub-questions about "
        "“happened in Germany” first. I'll tell you here what it changed. Your question is "
        "also answered once the research is done.")

    await bot.say_in_thread(thread, "skip prices", user=BOB)  # not the requester's research
    assert len(await steers(bot, key)) == 2
    assert [f[2] for f in bot.queue.followups][-1] == "skip prices"
    assert bot.fake.ephemerals(CHANNEL, BOB) == []


async def test_the_policy_can_let_anyone_in_the_thread_steer(start_bot: StartBot) -> None:
    bot = await start_bot(policy=Policy(steer=("*",)))
    thread, key = await running(bot)
    await bot.say_in_thread(thread, "drop exports", user=BOB)
    assert [s["who"] for s in await steers(bot, key)] == [BOB]
    assert bot.queue.followups == []


async def test_after_the_research_a_follow_up_shows_a_sign_of_life_at_once(
        start_bot: StartBot) -> None:
    bot = await start_bot()
    thread, key = await running(bot)
    await awaited(bot.store.hdel(ACTIVE_KEY, bot.enqueued[0].job_id))  # the research ended
    await Requests(bot.store).set_status(key, FINISHED)
    await bot.say_in_thread(thread, "skip the UK")
    assert await steers(bot, key) == []  # nothing to steer any more: a follow-up
    assert [f[2] for f in bot.queue.followups] == ["skip the UK"]
    assert bot.fake.status(CHANNEL, thread) == FOLLOWUP_STATUS
    assert key == request_key(CHANNEL, thread)


async def test_a_steer_in_chinese_is_acknowledged_in_the_threads_language(
        start_bot: StartBot) -> None:
    bot = await start_bot()
    _, mention = await bot.mention(f"<@{BOT_USER_ID}> 什么阻碍了英国热泵的安装？")
    await bot.click(ALICE, "depth_deep", copy.deepcopy(bot.replies(mention)[0]))
    [request] = bot.enqueued
    await awaited(bot.store.hset(ACTIVE_KEY, request.job_id, "{}"))
    await bot.say_in_thread(mention.ts, "重点看价格，不要管屋顶太阳能")
    [ack] = bot.fake.ephemerals(CHANNEL, ALICE)
    assert ack.text == ("已收到：研究将在下一步优先研究“价格”（若没有未完成的子问题涵盖它，"
                        "就新增一个子问题），并删去与它无关的未完成子问题；"
                        "删去涉及“屋顶太阳能”的未完成子问题。改动了什么，我会在这里告诉你。")


async def test_a_message_after_the_last_step_is_a_follow_up_and_says_so(
        start_bot: StartBot) -> None:
    """The run closed its steers (no step is left) while its job still writes the report:
    the requester's message is not kept for a step that will not come."""
    bot = await start_bot()
    thread, key = await running(bot)
    await bot.say_in_thread(thread, "skip the UK")
    assert await ThreadSteers(bot.store, key).close(1) == []  # read by the run, then closed
    await bot.say_in_thread(thread, "focus on prices")
    assert [f[1:3] for f in bot.queue.followups] == [(ALICE, "focus on prices")]
    assert bot.fake.ephemerals(CHANNEL, ALICE)[-1].text == LATE
    assert await ThreadSteers(bot.store, key).after(0) == []  # no step reads it
