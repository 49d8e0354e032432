"""A Slack that answers what is not its JSON (an HTML 502 from a proxy, a text 405, an empty or
truncated 200) or drops the connection: every Web API method the bot and the workers call,
through the real slack_sdk client against the local fake (`FakeSlack.fault`). The error is
always read (`slack_error`, never an AttributeError on a text body), the best-effort calls
carry on, retries are bounded, and a job's failure is always stored (JSON)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import redis.asyncio as aioredis
from arq.jobs import deserialize_result, serialize_result
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.web.async_client import AsyncWebClient

from bot.surfaces import set_title
from contract.home import publish_home
from contract.queue import deserialize, serialize
from contract.requests import ResearchRequestMsg
from contract.slack_client import (
    MAX_WAIT_S,
    SLACK_FAILURES,
    _retry_after,
    is_outage,
    make_client,
    slack_error,
)
from playground.fake_slack import FakeSlack
from playground.fake_slack_faults import FAULTS
from research_core.settings import BudgetSettings
from tests.bad_input import assert_clean
from tests.conftest import SLACK_TOKEN
from workers.run_view import thread_link
from workers.slack_outbox import find_posted
from workers.slack_publisher import SlackPublisher
from workers.slack_streams import SlackPartStream, Where
from workers.thread_messages import show_status

CH = "C0FAULT"
# Every Web API method the bot and the workers call (grep `client.` in bot/ and workers/).
METHODS: dict[str, dict[str, Any]] = {
    "auth.test": {},
    "chat.postMessage": {"channel": CH, "text": "x"},
    "chat.update": {"channel": CH, "ts": "1.000001", "text": "x"},
    "chat.postEphemeral": {"channel": CH, "user": "U1", "text": "x"},
    "chat.getPermalink": {"channel": CH, "message_ts": "1.000001"},
    "chat.startStream": {"channel": CH, "thread_ts": "1.000001"},
    "chat.appendStream": {"channel": CH, "ts": "1.000001", "markdown_text": "x"},
    "chat.stopStream": {"channel": CH, "ts": "1.000001"},
    "conversations.replies": {"channel": CH, "ts": "1.000001"},
    "views.open": {"trigger_id": "1.2.3", "view": {"type": "modal"}},
    "views.publish": {"user_id": "U1", "view": {"type": "home", "blocks": []}},
    "assistant.threads.setStatus": {"channel_id": CH, "thread_ts": "1.000001", "status": "x"},
    "assistant.threads.setTitle": {"channel_id": CH, "thread_ts": "1.000001", "title": "x"},
    "assistant.threads.setSuggestedPrompts": {"channel_id": CH, "thread_ts": "1.000001",
                                              "prompts": []},
}


def client(fake: FakeSlack, max_retries: int = 3) -> AsyncWebClient:
    """The bot's and the workers' client (`max_retries`: fewer, to keep the test short)."""
    return make_client(SLACK_TOKEN, fake.base_url, max_retries)


@pytest.mark.parametrize("kind", FAULTS)
@pytest.mark.parametrize("method", list(METHODS))
async def test_every_method_and_fault_is_an_error_that_can_be_read(
        fake: FakeSlack, method: str, kind: str) -> None:
    fake.fault(kind, method, count=10)  # more than the client's own retries
    with pytest.raises(SLACK_FAILURES) as raised:
        await client(fake, max_retries=1).api_call(method, json=METHODS[method])
    error = slack_error(raised.value)
    assert error and len(error) < 60 and "\n" not in error, error
    assert is_outage(raised.value)
    assert error == ("connection failed (ServerDisconnectedError)" if kind == "reset"
                     else f"HTTP {502 if kind == 'html-502' else 405 if '405' in kind else 200}")


async def test_slacks_own_errors_are_read_and_are_not_outages(fake: FakeSlack) -> None:
    fake.fail("chat.update", "message_not_found")
    with pytest.raises(SLACK_FAILURES) as raised:
        await client(fake).chat_update(channel=CH, ts="1.000001", text="x")
    assert slack_error(raised.value) == "message_not_found"
    assert not is_outage(raised.value)


@pytest.mark.parametrize("kind", ["html-502", "reset"])
async def test_a_passing_502_or_reset_is_retried_by_the_client(fake: FakeSlack,
                                                               kind: str) -> None:
    thread = fake.post_user_message(CH, "U1", "q?")
    fake.fault(kind, "conversations.replies", count=1)
    replies = await client(fake).conversations_replies(channel=CH, ts=thread.ts)
    assert replies["ok"] is True
    assert len(fake.calls("conversations.replies")) == 2


async def test_a_502_to_a_post_is_not_repeated_by_the_client(fake: FakeSlack) -> None:
    """The proxy may have passed the post on: the job retries it with its outbox instead."""
    fake.fault("html-502", "chat.postMessage", count=1)
    with pytest.raises(SLACK_FAILURES):
        await client(fake).chat_postMessage(channel=CH, text="once")
    assert len(fake.calls("chat.postMessage")) == 1


async def test_429_waits_retry_after_and_retries_are_bounded(fake: FakeSlack) -> None:
    fake.force_ratelimit(count=1, method="chat.update", retry_after=1)
    started = time.monotonic()
    await client(fake).chat_update(channel=CH, ts=fake.call(
        "chat.postMessage", channel=CH, text="x")["ts"], text="y")
    assert time.monotonic() - started >= 1.0
    fake.fault("html-502", "chat.update", count=100)
    with pytest.raises(SLACK_FAILURES):
        await client(fake, max_retries=2).chat_update(channel=CH, ts="1.000001", text="y")
    assert len([c for c in fake.calls("chat.update") if c.error == "html-502"]) == 3


@pytest.mark.parametrize(("header", "wait"), [("5", 5.0), ("3600", MAX_WAIT_S), ("-3", 0.0),
                                              ("soon", None), ("", None)])
def test_retry_after_is_bounded(header: str, wait: float | None) -> None:
    assert _retry_after(HttpResponse(status_code=429, headers={"Retry-After": header})) == wait


def request() -> ResearchRequestMsg:
    return ResearchRequestMsg(key="red:req:C0FAULT:1.000001", user="U1", channel=CH,
                              thread_ts="1.000001", ts="1.000001", question="q?",
                              status="running", picker_ts="1.000002", team="T0FAKE")


async def progress(slack: AsyncWebClient, redis: aioredis.Redis) -> None:
    publisher = SlackPublisher(slack, CH, "1.000001", progress_interval=0,
                               progress_key="r/progress/j")
    await publisher.progress("r", "Searching")
    await publisher.close()


async def stream(slack: AsyncWebClient, redis: aioredis.Redis) -> None:
    part = SlackPartStream(Where(slack, CH, "1.000001", "T0FAKE", "U1", 0.0), "r/p/1", None)
    await part.write("Prices fell")
    await part.write(" by 9%.")
    await part.end()


async def found(slack: AsyncWebClient, redis: aioredis.Redis) -> None:
    assert await find_posted(slack, CH, "1.000001", "k") is None


async def link(slack: AsyncWebClient, redis: aioredis.Redis) -> None:
    assert await thread_link(slack, request()) == ""


async def status(slack: AsyncWebClient, redis: aioredis.Redis) -> None:
    await show_status(slack, request(), "finished")


async def home(slack: AsyncWebClient, redis: aioredis.Redis) -> None:
    assert await publish_home(slack, redis, "U1", BudgetSettings(), True) is False


async def title(slack: AsyncWebClient, redis: aioredis.Redis) -> None:
    await set_title(slack, CH, "1.000001", "q?")


BestEffort = Callable[[AsyncWebClient, aioredis.Redis], Awaitable[None]]
# What the workers and the bot call as best effort, and the methods it calls.
BEST_EFFORT: dict[str, tuple[BestEffort, tuple[str, ...]]] = {
    "progress": (progress, ("chat.postMessage", "conversations.replies",
                            "assistant.threads.setStatus")),
    "stream": (stream, ("chat.startStream", "chat.appendStream", "chat.stopStream",
                        "chat.postMessage", "chat.update")),
    "find-posted": (found, ("conversations.replies",)),
    "permalink": (link, ("chat.getPermalink",)),
    "status": (status, ("chat.update",)),
    "home": (home, ("views.publish",)),
    "title": (title, ("assistant.threads.setTitle",)),
}


@pytest.mark.parametrize("kind", FAULTS)
@pytest.mark.parametrize("case", list(BEST_EFFORT))
async def test_best_effort_calls_carry_on_whatever_slack_answers(
        fake: FakeSlack, redis: aioredis.Redis, caplog: pytest.LogCaptureFixture, case: str,
        kind: str) -> None:
    """Each used to raise AttributeError (`exc.response.get`) or a bare connection error."""
    caplog.set_level(logging.INFO)
    fake.post_user_message(CH, "U1", "q?")  # the thread's first message is 1.000001-ish
    call, methods = BEST_EFFORT[case]
    for method in methods:
        fake.fault(kind, method, count=10)
    await asyncio.wait_for(call(client(fake, max_retries=1), redis), 30)
    assert_clean(caplog.text)
    assert all(r.exc_info is None for r in caplog.records)


def test_a_failed_jobs_result_is_always_stored() -> None:
    """ARQ stores a failed job's exception as its result through our serializer: it used to
    raise TypeError (not JSON serializable), so the failure itself was lost."""
    failure = AttributeError("'str' object has no attribute 'get'\nsecond line \ud800")
    raw = serialize_result("run_job", ({"kind": "research"},), {}, 1, 0, False, failure, 0, 1,
                           "j1", "arq:queue", "j1", serializer=serialize)
    assert raw is not None
    stored = json.loads(raw.decode("utf-8"))
    assert stored["r"] == "AttributeError: 'str' object has no attribute 'get' second line " \
                          "\ud800"
    result = deserialize_result(raw, deserializer=deserialize)
    assert result.success is False
    assert str(result.result).startswith("AttributeError: 'str' object")
