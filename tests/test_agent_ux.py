"""Slack's agent surfaces end to end (bot endpoint, Redis, ARQ worker, scripted tiers over the
real openai client, the fake Slack): the report and follow-up answers stream into their
message and become ordinary messages with feedback buttons; where Slack refuses streaming the
answer is posted and edited instead; a feedback click is stored with the run and counted by
the replay; the requester's Home tab shows the run."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from contract.keys import request_key
from contract.requests import Requests
from playground.fake_slack import BOT_USER_ID, Message
from research_core.evaluation.replay import render_feedback, stored_feedback
from research_core.store.sql import SqlStore
from tests.conftest import RecordingBackend
from tests.fakes.openai_server import Reply
from tests.scripted import Script, data_block
from tests.slack_driver import ALICE, BOB, CHANNEL, signed_headers
from tests.slack_stack import Stack, StartStack, wait_for

QUESTION = "How did heat pump sales and prices move in 2026?"


def long_report(body: dict[str, Any]) -> Reply:
    """A report in Markdown, a paragraph per source, sent a few characters at a time."""
    numbers = re.findall(r"^\[(\d+)\]", data_block(body), re.M)
    text = "\n\n".join(f"**Finding {n}**: the sources agree on this point, as the "
                       f"evidence shows in detail [{n}]." for n in numbers)
    return Reply(content=text, chunk_delay_s=0.005)


def writing() -> Script:
    script = Script()
    script.rules["report"] = long_report
    return script


async def research(stack: Stack, depth: str = "standard") -> Message:
    _, mention = await stack.driver.mention(f"<@{BOT_USER_ID}> {QUESTION}")
    [picker] = stack.thread(mention)
    await stack.driver.click(ALICE, f"depth_{depth}", picker)
    await wait_for(lambda: bool(stack.finals(mention)), 90, "the final message")
    await stack.settled()
    return mention


def streamed(stack: Stack, mention: Message) -> list[Message]:
    return [m for m in stack.thread(mention) if m.stream is not None]


def kinds(message: Message) -> list[str]:
    return [str(b["type"]) for b in message.blocks]


async def feedback_click(stack: Stack, message: Message, user: str, verdict: str) -> int:
    row = message.blocks[-1]["elements"][0]
    payload = {"type": "block_actions", "team": {"id": "T0FAKE"}, "user": {"id": user},
               "channel": {"id": CHANNEL}, "trigger_id": "1.2",
               "container": {"type": "message", "message_ts": message.ts,
                             "channel_id": CHANNEL, "thread_ts": message.thread_ts},
               "actions": [{"type": "feedback_buttons", "action_id": row["action_id"],
                            "block_id": "fb", "value": row[f"{verdict}_button"]["value"],
                            "action_ts": f"{time.time():.6f}"}]}
    body = urllib.parse.urlencode({"payload": json.dumps(payload)})
    driver = stack.driver
    headers = signed_headers(body, "application/x-www-form-urlencoded")
    async with driver.session.post(driver.url, data=body.encode(), headers=headers) as resp:
        return resp.status


@pytest.mark.timeout(150)
async def test_answers_stream_then_take_feedback_and_show_on_the_home_tab(
        start_stack: StartStack, backend: RecordingBackend) -> None:
    stack = await start_stack(writing(), backend)
    mention = await research(stack)
    [report] = streamed(stack, mention)
    starts = stack.fake.calls("chat.startStream")
    assert [(c.params["recipient_team_id"], c.params["recipient_user_id"]) for c in starts] \
        == [("T0FAKE", ALICE)]
    assert starts[0].params["chunks"] and stack.fake.calls("chat.appendStream"), "in pieces"
    assert len(stack.fake.calls("chat.stopStream")) == 1
    assert kinds(report) == ["markdown", "context", "actions", "context_actions"]  # edited
    assert report.history and report.history[-1]["blocks"][0]["type"] == "markdown"
    assert "\\*\\*Finding" not in report.blocks[0]["text"]  # the model's Markdown renders
    assert "**Finding 1**: the sources agree" in report.blocks[0]["text"]
    assert report.metadata is not None and report.metadata["event_payload"]["key"].endswith(
        "/report/v1")
    texts = stack.posted_texts()
    assert len(texts) == len(set(texts)), "a message was posted twice"

    await stack.driver.say_in_thread(mention.ts, "What were heat pump sales in September?")
    await wait_for(lambda: len(streamed(stack, mention)) == 2, 60, "the follow-up's answer")
    await stack.settled()
    answer = streamed(stack, mention)[1]
    assert answer.text.startswith("*Follow-up:*") and kinds(answer)[-1] == "context_actions"
    assert "The findings answer it" in answer.history[0]["text"]  # streamed: the answer only

    assert await feedback_click(stack, report, BOB, "negative") == 200
    assert await feedback_click(stack, report, BOB, "positive") == 200  # changed their mind
    assert await feedback_click(stack, answer, ALICE, "positive") == 200
    store = await SqlStore.open(stack.settings.db_url)
    try:
        request = await Requests(stack.pool).load(request_key(CHANNEL, mention.ts))
        assert request is not None

        async def counted() -> str:
            return render_feedback(await stored_feedback(store, request.run_id))
        told = await eventually(counted, lambda t: t.startswith(
            "Feedback: 2 positive, 0 negative"), "the feedback to be stored")
        assert "  report: 1 positive, 0 negative" in told.splitlines()
    finally:
        await store.close()

    view = stack.fake.surfaces.view(ALICE)
    assert view is not None, "the Home tab is published when the run ends"
    shown = json.dumps(view["blocks"], ensure_ascii=False)
    assert QUESTION in shown and "Standard · finished" in shown
    assert re.search(r"[1-9]\d* steps · [\d,]+ tokens · \$0\.\d{4}", shown)
    assert "/archives/C0RESEARCH/p" in shown  # the link to the thread


async def eventually(read: Callable[[], Awaitable[str]], check: Callable[[str], bool],
                     what: str, timeout_s: float = 20.0) -> str:
    deadline = time.monotonic() + timeout_s
    while not check(got := await read()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; have {got!r}")
        await asyncio.sleep(0.1)
    return got


@pytest.mark.timeout(120)
async def test_without_streaming_the_answer_is_posted_and_edited_and_that_is_logged_once(
        start_stack: StartStack, backend: RecordingBackend,
        caplog: pytest.LogCaptureFixture) -> None:
    stack = await start_stack(writing(), backend)
    stack.fake.fail("chat.startStream", "not_allowed")
    with caplog.at_level(logging.WARNING, logger="workers.slack_streams"):
        mention = await research(stack)
        await stack.driver.say_in_thread(mention.ts, "What were heat pump sales in September?")
        await wait_for(lambda: any(m.text.startswith("*Follow-up:*")
                                   for m in stack.thread(mention)), 60, "the follow-up")
        await stack.settled()
    assert stack.fake.calls("chat.appendStream") == []
    assert len(stack.fake.calls("chat.startStream")) == 1, "not tried again once refused"
    [report] = [m for m in stack.parts(mention) if "Finding 1" in m.text]
    assert report.stream is None and report.history, "posted as it was written, then edited"
    assert any(h["blocks"][-1].get("elements", [{}])[0].get("text") == "_writing…_"
               for h in report.history)
    assert kinds(report) == ["markdown", "context", "actions", "context_actions"]
    warned = [r for r in caplog.records if "text streaming is not available" in r.message]
    assert len(warned) == 1
    texts = stack.posted_texts()
    assert len(texts) == len(set(texts))
