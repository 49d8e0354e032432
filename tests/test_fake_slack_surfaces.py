"""The fake Slack's agent methods through the real slack_sdk client: text streaming with its
recipient rule, expiry and chunk checks; Block Kit limits (plans, markdown, feedback buttons);
the assistant thread's prompts and title; the Home tab; modals (views.open); permalinks."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.models.blocks import (
    ContextActionsBlock,
    FeedbackButtonsElement,
    MarkdownBlock,
    PlanBlock,
    TaskCardBlock,
    UrlSourceElement,
)
from slack_sdk.models.messages.chunk import MarkdownTextChunk, TaskUpdateChunk
from slack_sdk.web.async_client import AsyncWebClient

from playground.fake_slack import FakeSlack
from tests.conftest import SLACK_TOKEN as TOKEN

CH = "C0TEST"


def client(fake: FakeSlack) -> AsyncWebClient:
    return AsyncWebClient(token=TOKEN, base_url=fake.base_url, retry_handlers=[])


async def error_of(call: Any) -> str:
    with pytest.raises(SlackApiError) as err:
        await call
    return str(err.value.response["error"])


async def test_a_stream_grows_stops_with_blocks_and_then_takes_edits(fake: FakeSlack) -> None:
    web = client(fake)
    thread = fake.post_user_message(CH, "U1", "question")
    stream = await web.chat_stream(channel=CH, thread_ts=thread.ts, recipient_team_id="T0FAKE",
                                   recipient_user_id="U1", buffer_size=5)
    await stream.append(markdown_text="**Heat pump** ")
    await stream.append(markdown_text="sales rose.")
    assert stream.ts is not None
    msg = fake.message(CH, stream.ts)
    assert msg is not None and msg.thread_ts == thread.ts and fake.streams.live(msg)
    assert msg.text == "**Heat pump** sales rose." and msg.blocks[-1]["type"] == "markdown"
    assert await error_of(web.chat_update(channel=CH, ts=stream.ts, text="x")) == \
        "streaming_state_conflict"
    feedback = ContextActionsBlock(elements=[FeedbackButtonsElement(
        action_id="f", positive_button={"text": "Good", "value": "p"},
        negative_button={"text": "Bad", "value": "n"})])
    await stream.stop(blocks=[feedback])
    assert not fake.streams.live(msg) and msg.blocks[-1]["type"] == "context_actions"
    assert await error_of(web.chat_appendStream(channel=CH, ts=stream.ts, markdown_text="x")) \
        == "message_not_in_streaming_state"
    await web.chat_update(channel=CH, ts=stream.ts, text="final")
    assert msg.text == "final" and msg.history


async def test_stream_arguments_are_checked_as_slack_checks_them(fake: FakeSlack) -> None:
    web = client(fake)
    thread = fake.post_user_message(CH, "U1", "question")
    assert await error_of(web.chat_startStream(channel=CH, thread_ts=thread.ts,
                                               recipient_user_id="U1")) == \
        "missing_recipient_team_id"
    assert await error_of(web.chat_startStream(channel=CH, thread_ts=thread.ts,
                                               recipient_team_id="T0FAKE")) == \
        "missing_recipient_user_id"
    asked = fake.post_user_message("D0U1", "U1", "question")
    dm = await web.chat_startStream(channel="D0U1", thread_ts=asked.ts,
                                    markdown_text="hi")  # a DM: no recipient needed
    assert dm["ts"]
    assert await error_of(web.chat_startStream(
        channel=CH, thread_ts=thread.ts, recipient_team_id="T", recipient_user_id="U1",
        markdown_text="x" * 12_001)) == "msg_too_long"
    assert await error_of(web.chat_startStream(
        channel=CH, thread_ts=thread.ts, recipient_team_id="T", recipient_user_id="U1",
        chunks=[{"type": "sparkles"}])) == "invalid_chunks"
    started = await web.chat_startStream(
        channel=CH, thread_ts=thread.ts, recipient_team_id="T", recipient_user_id="U1",
        task_display_mode="plan", chunks=[
            MarkdownTextChunk(text="Looking"),
            TaskUpdateChunk(id="t1", title="Search", status="in_progress")])
    msg = fake.message(CH, started["ts"])
    assert msg is not None and msg.blocks[0]["type"] == "plan"
    assert msg.blocks[0]["tasks"][0]["status"] == "in_progress"
    assert await error_of(web.chat_appendStream(channel=CH, ts="1.000001", markdown_text="x")) \
        == "message_not_found"


async def test_a_stream_expires_when_appends_pause() -> None:
    async with FakeSlack(token=TOKEN, post_interval=0.0, stream_idle_s=0.2) as fake:
        web = client(fake)
        asked = fake.post_user_message("D0U1", "U1", "question")
        started = await web.chat_startStream(channel="D0U1", thread_ts=asked.ts,
                                             markdown_text="hi")
        await asyncio.sleep(0.3)
        assert await error_of(web.chat_appendStream(channel="D0U1", ts=started["ts"],
                                                    markdown_text="late")) == \
            "message_not_in_streaming_state"


async def test_blocks_beyond_slacks_limits_are_invalid_blocks(fake: FakeSlack) -> None:
    web = client(fake)
    task = TaskCardBlock(task_id="t1", title="Sales", status="complete",
                         sources=[UrlSourceElement(url="https://a.example", text="A")])
    await web.chat_postMessage(channel=CH, text="plan",
                               blocks=[PlanBlock(title="Researching", tasks=[task])])
    too_many = [{"type": "task_card", "task_id": f"t{i}", "title": "x"} for i in range(51)]
    twice = [{"type": "task_card", "task_id": "t", "title": "x"}] * 2
    bad_status = [{"type": "task_card", "task_id": "t", "title": "x", "status": "done"}]
    bad_source = [{"type": "task_card", "task_id": "t", "title": "x",
                   "sources": [{"type": "url", "url": "javascript:x", "text": "x"}]}]
    for tasks in (too_many, twice, bad_status, bad_source):
        assert await error_of(web.chat_postMessage(channel=CH, text="x", blocks=[
            {"type": "plan", "title": "p", "tasks": tasks}])) == "invalid_blocks"
    halves = [MarkdownBlock(text="x" * 6_001), MarkdownBlock(text="y" * 6_000)]
    assert await error_of(web.chat_postMessage(channel=CH, text="x", blocks=halves)) == \
        "invalid_blocks"
    assert await error_of(web.chat_postMessage(channel=CH, text="x", blocks=[
        {"type": "context_actions", "elements": [{"type": "feedback_buttons",
                                                  "action_id": "f"}]}])) == "invalid_blocks"
    raw = await error_of(web.chat_postMessage(channel=CH, text="x", blocks=[
        {"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3_001}}]))
    assert raw == "invalid_blocks"


async def test_assistant_threads_home_tabs_and_permalinks(fake: FakeSlack) -> None:
    web = client(fake)
    thread = fake.post_user_message("D0U1", "U1", "hi")
    prompts = [{"title": "Sales", "message": "How did sales move?"}]
    await web.assistant_threads_setSuggestedPrompts(channel_id="D0U1", thread_ts=thread.ts,
                                                    prompts=prompts, title="Try")
    await web.assistant_threads_setTitle(channel_id="D0U1", thread_ts=thread.ts, title="Sales")
    state = fake.surfaces.thread("D0U1", thread.ts)
    assert (state.prompts, state.prompts_title, state.title) == (prompts, "Try", "Sales")
    assert await error_of(web.assistant_threads_setSuggestedPrompts(
        channel_id="D0U1", thread_ts=thread.ts, prompts=prompts * 5)) == "invalid_arguments"
    view = {"type": "home", "blocks": [{"type": "divider"}]}
    published = await web.views_publish(user_id="U1", view=view)
    assert published["view"]["type"] == "home" and fake.surfaces.view("U1") is not None
    assert await error_of(web.views_publish(user_id="U1", view=view, hash="stale")) == \
        "hash_conflict"
    await web.views_publish(user_id="U1", view=view, hash=published["view"]["hash"])
    assert await error_of(web.views_publish(user_id="U1", view={"type": "modal",
                                                                "blocks": []})) == \
        "invalid_arguments"
    assert await error_of(web.views_publish(user_id="U1", view={
        "type": "home", "blocks": [{"type": "divider"}] * 101})) == "invalid_arguments"
    reply = await web.chat_postMessage(channel="D0U1", thread_ts=thread.ts, text="r")
    link = await web.chat_getPermalink(channel="D0U1", message_ts=reply["ts"])
    digits = str(reply["ts"]).replace(".", "")
    assert link["permalink"] == (f"{fake.permalink_base}/archives/D0U1/p{digits}"
                                 f"?thread_ts={thread.ts}&cid=D0U1")
    assert await error_of(web.chat_getPermalink(channel="D0U1", message_ts="1.000001")) == \
        "message_not_found"


async def test_a_modal_opens_once_per_trigger_and_its_submission_carries_the_inputs(
        fake: FakeSlack) -> None:
    web = client(fake)
    view = {"type": "modal", "callback_id": "c", "private_metadata": "key",
            "title": {"type": "plain_text", "text": "Edit the plan"},
            "blocks": [{"type": "input", "block_id": "b", "label": {
                "type": "plain_text", "text": "Lines"}, "element": {
                "type": "plain_text_input", "action_id": "lines", "multiline": True,
                "initial_value": "one\ntwo"}}]}
    assert await error_of(web.views_open(trigger_id="nobody.clicked", view=view)) \
        == "invalid_trigger_id"
    fake.surfaces.trigger("1.2", "U0ALICE")
    long_title = {**view, "title": {"type": "plain_text", "text": "x" * 25}}
    assert await error_of(web.views_open(trigger_id="1.2", view=long_title)) \
        == "invalid_arguments"
    fake.surfaces.trigger("1.3", "U0ALICE")
    opened = (await web.views_open(trigger_id="1.3", view=view))["view"]
    assert await error_of(web.views_open(trigger_id="1.3", view=view)) == "invalid_trigger_id"
    payload = fake.surfaces.submission(opened["id"], {"lines": "three"})
    assert payload["type"] == "view_submission" and payload["user"]["id"] == "U0ALICE"
    assert payload["view"]["private_metadata"] == "key"
    assert payload["view"]["state"]["values"] == {
        "b": {"lines": {"type": "plain_text_input", "value": "three"}}}
    fake.surfaces.close_modal(opened["id"])
    assert fake.surfaces.modals == {}
