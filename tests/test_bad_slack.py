"""Bad requests to the bot's real HTTP endpoint (real Redis, the fake Slack Web API).

Unsigned (missing, forged, stale, future, tampered or unparseable signature headers) is 401
whatever the body; too big is 413; signed but unparseable or of a shape Slack never sends is
400; signed and well formed but missing what a handler needs is dropped with one log line.
Never a 500, never a traceback in the log, never a request body (or a line forged by one) in
the log, never a secret."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import io
import json
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode

import aiohttp
import pytest
import redis.asyncio as aioredis
from aiohttp import web
from yarl import URL

from bot.app import build_app, web_app
from contract.keys import PICKERS_KEY, request_key
from contract.requests import ResearchRequestMsg
from playground.fake_slack import BOT_USER_ID, FakeSlack
from playground.server import Playground
from redsearch.harness.slack_events import button_value
from tests.bad_input import assert_clean
from tests.slack_driver import ALICE, CHANNEL, RecordingQueue, SlackDriver
from tests.slack_stack import wait_for

SECRET = "s3cr3t-signing"
TOKEN = "xoxb-bad-input-token"
MARKER = "BODY-MARKER-7f3"
FORGED_LOG = f"\n2026-01-01 00:00:00 CRITICAL bot: {MARKER} forged record"


def sign(body: bytes, timestamp: str | None = None, secret: str = SECRET) -> dict[str, str]:
    stamp = timestamp if timestamp is not None else str(int(time.time()))
    digest = hmac.new(secret.encode(), b"v0:" + stamp.encode() + b":" + body,
                      hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={digest}"}


def event_body(event: dict[str, Any], **extra: Any) -> bytes:
    body = {"token": "legacy", "team_id": "T0FAKE", "api_app_id": "A0RED",
            "type": "event_callback", "event_id": f"Ev{time.monotonic_ns()}",
            "event_time": int(time.time()), "event": event,
            "authorizations": [{"team_id": "T0FAKE", "user_id": BOT_USER_ID, "is_bot": True}],
            **extra}
    return json.dumps(body).encode()


def mention(text: str = f"<@{BOT_USER_ID}> copper prices? {MARKER}", **fields: Any) -> dict[
        str, Any]:
    return {"type": "app_mention", "user": ALICE, "text": text, "ts": "1712345678.000100",
            "channel": CHANNEL, "event_ts": "1712345678.000100", **fields}


@dataclass
class Endpoint:
    url: str
    session: aiohttp.ClientSession
    fake: FakeSlack
    redis: aioredis.Redis
    queue: RecordingQueue

    async def post(self, body: bytes, headers: dict[str, str],
                   content_type: str = "application/json") -> int:
        async with self.session.post(self.url, data=io.BytesIO(body),
                                     headers={"Content-Type": content_type, **headers}) as resp:
            await resp.read()
            return resp.status

    def driver(self) -> SlackDriver:
        return SlackDriver(self.url, self.session, self.fake)


@pytest.fixture
async def endpoint(redis: aioredis.Redis, caplog: pytest.LogCaptureFixture
                   ) -> AsyncIterator[Endpoint]:
    caplog.set_level(logging.INFO)
    async with FakeSlack(token=TOKEN, post_interval=0.0) as fake:
        queue = RecordingQueue()
        app = build_app(bot_token=TOKEN, signing_secret=SECRET, api_url=fake.base_url,
                        redis=redis, queue=queue, process_before_response=True)
        runner = web.AppRunner(web_app(app, SECRET))
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        async with aiohttp.ClientSession() as session:
            yield Endpoint(f"http://127.0.0.1:{runner.addresses[0][1]}/slack/events", session,
                           fake, redis, queue)
        await runner.cleanup()


def log_is_clean(caplog: pytest.LogCaptureFixture) -> None:
    """No traceback, no body (nor a record forged by one), no secret in the log."""
    assert_clean(caplog.text)
    assert MARKER not in caplog.text, caplog.text
    assert all(r.exc_info is None for r in caplog.records), caplog.text
    assert all("\n" not in r.getMessage() for r in caplog.records), caplog.text


VALID = event_body(mention())


def unsigned_headers(case: str) -> dict[str, str]:
    """Headers that do not sign VALID (built when the test runs: timestamps are relative)."""
    now = int(time.time())
    bad_signature = {"X-Slack-Signature": "v0=00"}
    headers: dict[str, dict[str, str]] = {
        "none": {},
        "timestamp-abc": {"X-Slack-Request-Timestamp": "abc", **bad_signature},
        "timestamp-1e9": {"X-Slack-Request-Timestamp": "1e9", **bad_signature},
        "timestamp-empty": {"X-Slack-Request-Timestamp": "", **bad_signature},
        "timestamp-negative": sign(VALID, "-5"),
        "timestamp-fullwidth": {"X-Slack-Request-Timestamp": "１７１２３４５６７８",
                                **bad_signature},
        "timestamp-huge": sign(VALID, "9" * 40),
        "stale": sign(VALID, str(now - 301)),
        "future": sign(VALID, str(now + 301)),
        "no-signature": {"X-Slack-Request-Timestamp": str(now)},
        "forged": {"X-Slack-Request-Timestamp": str(now), "X-Slack-Signature": "v0=" + "0" * 64},
        "non-ascii-signature": {"X-Slack-Request-Timestamp": str(now),
                                "X-Slack-Signature": "v0=é"},
        "other-secret": sign(VALID, secret="not-the-secret"),
        "tampered": sign(event_body(mention(text="something else"))),
    }
    return headers[case]


UNSIGNED_CASES = ["none", "timestamp-abc", "timestamp-1e9", "timestamp-empty",
                  "timestamp-negative", "timestamp-fullwidth", "timestamp-huge", "stale",
                  "future", "no-signature", "forged", "non-ascii-signature", "other-secret",
                  "tampered"]
UNSIGNED_BODIES = {
    "event": VALID, "malformed-json": b'{"type": "event_callback", ' + MARKER.encode(),
    "array": b"[]", "null": b"null", "deep": b"[" * 100_000 + b"]" * 100_000,
    "invalid-utf8": b'{"type": "\xff\xfe' + MARKER.encode() + b'"}',
    "garbage-payload": b"payload=%ZZ%" + MARKER.encode(),
    "newline": VALID[:-1] + json.dumps(FORGED_LOG).encode()[:-1] + b'"}',
}


@pytest.mark.parametrize("case", UNSIGNED_CASES)
async def test_unsigned_requests_are_401_with_nothing_logged_but_one_line(
        endpoint: Endpoint, caplog: pytest.LogCaptureFixture, case: str) -> None:
    headers = unsigned_headers(case)
    for name, body in UNSIGNED_BODIES.items():
        status = await endpoint.post(body, headers)
        assert status == 401, name
    assert endpoint.fake.calls("chat.postMessage") == []
    assert await endpoint.redis.get(request_key(CHANNEL, "1712345678.000100")) is None
    log_is_clean(caplog)
    refusals = [r for r in caplog.records if "refused a request" in r.getMessage()]
    assert len(refusals) == len(UNSIGNED_BODIES)


@pytest.mark.parametrize("size", [1024 * 1024 + 1, 10 * 1024 * 1024])
async def test_oversized_bodies_are_413(endpoint: Endpoint, caplog: pytest.LogCaptureFixture,
                                        size: int) -> None:
    body = (b'{"type": "' + MARKER.encode()).ljust(size, b"x")
    assert await endpoint.post(body, sign(body)) == 413
    assert await endpoint.post(body, {}) == 413
    log_is_clean(caplog)


SIGNED_MALFORMED = {
    "malformed-json": (b'{"type": "event_callback", "x": ' + MARKER.encode(), "application/json"),
    "array": (b"[]", "application/json"),
    "null": (b"null", "application/json"),
    "deep": (b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "application/json"),
    "invalid-utf8": (b'{"type": "\xff\xfe"}', "application/json"),
    "garbage-payload": (b"payload=%ZZ%" + MARKER.encode(), "application/x-www-form-urlencoded"),
    "payload-array": (b"payload=%5B%5D", "application/x-www-form-urlencoded"),
    "two-payloads": (b"payload=%7B%7D&payload=%7B%7D", "application/x-www-form-urlencoded"),
    "type-number": (b'{"type": 5}', "application/json"),
    "event-string": (b'{"type": "event_callback", "event": "x"}', "application/json"),
    "authorizations-string": (event_body(mention(), authorizations="x"), "application/json"),
    "enterprise-number": (event_body(mention(), enterprise=5), "application/json"),
    "team-list": (event_body(mention(), team=[]), "application/json"),
    "event-user-list": (event_body(mention(user=["U1"])), "application/json"),
    "actions-empty": (urlencode({"payload": json.dumps(
        {"type": "block_actions", "user": {"id": ALICE}, "actions": []})}).encode(),
        "application/x-www-form-urlencoded"),
    "actions-numbers": (urlencode({"payload": json.dumps(
        {"type": "block_actions", "user": {"id": ALICE}, "actions": [1, 2]})}).encode(),
        "application/x-www-form-urlencoded"),
}


@pytest.mark.parametrize("case", SIGNED_MALFORMED, ids=list(SIGNED_MALFORMED))
async def test_signed_but_malformed_bodies_are_400(endpoint: Endpoint,
                                                   caplog: pytest.LogCaptureFixture,
                                                   case: str) -> None:
    body, content_type = SIGNED_MALFORMED[case]
    assert await endpoint.post(body, sign(body), content_type) == 400
    assert endpoint.fake.calls("chat.postMessage") == []
    log_is_clean(caplog)


def click_body(msg_ts: str, value: Any, **fields: Any) -> bytes:
    payload = {"type": "block_actions", "team": {"id": "T0FAKE"},
               "user": {"id": ALICE, "name": "alice"}, "api_app_id": "A0RED",
               "trigger_id": "1.2.3", "channel": {"id": CHANNEL, "name": "research"},
               "container": {"type": "message", "message_ts": msg_ts, "channel_id": CHANNEL},
               "actions": [{"type": "button", "block_id": "b", "action_id": "depth_standard",
                            "value": value, "action_ts": str(time.time())}], **fields}
    return urlencode({"payload": json.dumps(payload)}).encode()


async def post_click(endpoint: Endpoint, body: bytes) -> int:
    return await endpoint.post(body, sign(body), "application/x-www-form-urlencoded")


@pytest.mark.parametrize("event", [
    {"type": "app_mention", "text": f"<@{BOT_USER_ID}> hi {MARKER}", "user": ALICE},
    mention(channel=None), mention(ts=17123.5), mention(channel={"id": CHANNEL}),
    mention(channel="C0" + "X" * 500), mention(ts="1712345678.0001\ud800"),
], ids=["no-channel-no-ts", "channel-null", "ts-number", "channel-object", "channel-huge",
        "ts-surrogate"])
async def test_a_mention_missing_what_it_needs_is_dropped(endpoint: Endpoint,
                                                          caplog: pytest.LogCaptureFixture,
                                                          event: dict[str, Any]) -> None:
    body = event_body(event)
    assert await endpoint.post(body, sign(body)) == 200
    assert endpoint.fake.calls("chat.postMessage") == []
    log_is_clean(caplog)
    assert any("ignored a 'app_mention' event" in r.getMessage() for r in caplog.records)


async def test_a_bad_event_id_is_dropped_before_it_is_marked(endpoint: Endpoint,
                                                             caplog: pytest.LogCaptureFixture
                                                             ) -> None:
    msg = endpoint.fake.post_user_message(CHANNEL, ALICE, f"<@{BOT_USER_ID}> copper?")
    for bad_id in ("Ev\ud800", "Ev" + "1" * 500, 5):
        body = event_body(mention(ts=msg.ts), event_id=bad_id)
        assert await endpoint.post(body, sign(body)) == 200
    assert endpoint.fake.calls("chat.postMessage") == []
    good = event_body(mention(ts=msg.ts))  # the same message, properly delivered, is answered
    assert await endpoint.post(good, sign(good)) == 200
    assert len(endpoint.fake.calls("chat.postMessage")) == 1
    log_is_clean(caplog)


async def test_a_lone_surrogate_in_a_question_still_gets_a_picker(
        endpoint: Endpoint, caplog: pytest.LogCaptureFixture) -> None:
    msg = endpoint.fake.post_user_message(CHANNEL, ALICE, f"<@{BOT_USER_ID}> copper?")
    body = event_body(mention(text=f"<@{BOT_USER_ID}> copper \ud800 prices?", ts=msg.ts))
    assert b"\\ud800" in body  # JSON escapes it: valid UTF-8 bytes, a lone surrogate once parsed
    assert await endpoint.post(body, sign(body)) == 200
    stored = await endpoint.redis.get(request_key(CHANNEL, msg.ts))
    assert stored is not None
    assert ResearchRequestMsg.from_json(stored).question == "copper \ufffd prices?"
    assert len(endpoint.fake.calls("chat.postMessage")) == 1  # the picker
    log_is_clean(caplog)


async def test_clicks_with_odd_users_and_values(endpoint: Endpoint,
                                                caplog: pytest.LogCaptureFixture) -> None:
    driver = endpoint.driver()
    status, asked = await driver.mention(f"<@{BOT_USER_ID}> copper foil prices?", secret=SECRET)
    assert status == 200
    [picker] = driver.replies(asked)
    value = button_value(picker, "depth_standard")
    odd = [click_body(picker.ts, value, user={}),
           click_body(picker.ts, {"x": 1}), click_body(picker.ts, "red:req:\ud800:1"),
           click_body(picker.ts, value, user={"id": ["U1"]}),
           click_body(picker.ts, value, user={"id": "U0ALICE\ud800"})]
    for body in odd:
        assert await post_click(endpoint, body) == 200
    # Slack always sends the clicker as an object: a bare id (the requester's own, even),
    # a missing user or a null one is a malformed payload, not anyone's click.
    for user in (ALICE, None, 5, [ALICE]):
        assert await post_click(endpoint, click_body(picker.ts, value, user=user)) == 400
    missing = click_body(picker.ts, value)
    missing_user = json.loads(parse_qs(missing.decode())["payload"][0])
    del missing_user["user"]
    assert await post_click(endpoint, urlencode({"payload": json.dumps(missing_user)})
                            .encode()) == 400
    assert endpoint.queue.research_requests == []  # none of them chose anything
    assert await post_click(endpoint, click_body(picker.ts, value)) == 200
    assert [r.depth for r in endpoint.queue.research_requests] == ["standard"]
    log_is_clean(caplog)


@pytest.mark.parametrize("kind", ["block_actions", "view_submission", "shortcut",
                                  "message_action"])
async def test_an_interaction_whose_user_is_a_bare_id_is_400(
        endpoint: Endpoint, caplog: pytest.LogCaptureFixture, kind: str) -> None:
    payload = {"type": kind, "user": ALICE, "team": {"id": "T0FAKE"},
               "actions": [{"action_id": "depth_auto", "value": "x"}],
               "view": {"id": "V1", "callback_id": "x"}, "callback_id": "x"}
    body = urlencode({"payload": json.dumps(payload)}).encode()
    assert await post_click(endpoint, body) == 400
    assert endpoint.queue.research_requests == []
    log_is_clean(caplog)
    assert any("user is not an object" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("text", ["\u200b\u200b", "\u2060 \ufeff", "\u00a0\u3000"])
async def test_an_invisible_question_gets_the_empty_reply(endpoint: Endpoint,
                                                          caplog: pytest.LogCaptureFixture,
                                                          text: str) -> None:
    driver = endpoint.driver()
    _, asked = await driver.mention(f"<@{BOT_USER_ID}> {text}", secret=SECRET)
    [reply] = driver.replies(asked)
    assert reply.text.startswith("Please ask a question after mentioning me")
    assert await endpoint.redis.get(request_key(CHANNEL, asked.ts)) is None
    log_is_clean(caplog)


@pytest.mark.parametrize("path", ["/ui/message", "/ui/action", "/ui/respond/nosuchtoken"])
async def test_the_playground_answers_bad_bodies_with_4xx(caplog: pytest.LogCaptureFixture,
                                                          path: str) -> None:
    caplog.set_level(logging.INFO)
    bodies = [b"[" * 100_000 + b"]" * 100_000, b'{"text": "\xff\xfe"}', b"[]", b"null",
              b'{"user": ["U0ALICE"], "text": {"x": 1}}',
              b'{"user": "U0ALICE", "text": "' + b"\\ud800" * 10 + b'"}']
    if "respond" not in path:  # an unknown response_url answers 404 without reading the body
        bodies.append((b'{"text": "' + MARKER.encode()).ljust(2 * 1024 * 1024, b"x"))
    async with Playground("http://127.0.0.1:9/slack/events", SECRET, TOKEN,
                          ack_timeout_s=0.2) as playground, aiohttp.ClientSession() as session:
        for body in bodies:
            async with session.post(playground.url + path, data=io.BytesIO(body),
                                    headers={"Content-Type": "application/json"}) as resp:
                assert 200 <= resp.status < 500, (path, body[:40], resp.status)
    log_is_clean(caplog)


async def raw_request(url: str, head: bytes) -> bytes:
    """Send `head` (a request line and headers, as bytes) and read the answer's status line."""
    parts = URL(url)
    reader, writer = await asyncio.open_connection(parts.host, parts.port)
    try:
        writer.write(head + b"\r\n\r\n")
        await writer.drain()
        return await reader.readline()
    finally:
        writer.close()


def huge_header_cases() -> dict[str, bytes]:
    start = b"POST /slack/events HTTP/1.1\r\nHost: bot\r\nContent-Length: 0\r\n"
    return {
        "signature-100k": start + b"X-Slack-Signature: v0=" + b"a" * 100_000,
        "timestamp-100k": start + b"X-Slack-Request-Timestamp: " + b"1" * 100_000,
        "name-100k": start + b"X-" + b"n" * 100_000 + b": 1",
        "request-line-100k": b"POST /slack/events?" + b"q" * 100_000 + b" HTTP/1.1\r\nHost: b",
        "headers-500": start + b"".join(b"X-H%d: %s\r\n" % (i, MARKER.encode())
                                        for i in range(500))[:-2],
        "no-colon": start + b"X-Slack-Signature " + MARKER.encode(),
    }


@pytest.mark.parametrize("case", list(huge_header_cases()))
async def test_oversized_or_malformed_headers_are_4xx_with_one_clean_line(
        endpoint: Endpoint, caplog: pytest.LogCaptureFixture, case: str) -> None:
    """aiohttp refuses them before any project code runs; it used to log each as an ERROR
    with a LineTooLong (or BadHttpMessage) traceback."""
    status_line = await raw_request(endpoint.url, huge_header_cases()[case])
    assert status_line.split()[1] in (b"400", b"431"), status_line
    log_is_clean(caplog)
    problems = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(problems) <= 1, [r.getMessage() for r in problems]
    assert all(r.levelno == logging.WARNING and len(r.getMessage()) < 300 for r in problems)
    assert endpoint.fake.calls("chat.postMessage") == []
    assert await post_click(endpoint, click_body("1.2", "x")) == 200  # the bot still answers


@pytest.mark.parametrize("fault", ["429-storm", "html-502", "text-405", "truncated-json",
                                   "reset"])
async def test_a_picker_slack_does_not_take_is_posted_later(
        endpoint: Endpoint, caplog: pytest.LogCaptureFixture, fault: str) -> None:
    """The depth picker used to be posted once inside the listener: a 429 storm past the
    client's retries (or any outage) left the person with no picker and no word."""
    if fault == "429-storm":  # more 429s than the client retries
        endpoint.fake.force_ratelimit(count=4, method="chat.postMessage", retry_after=1)
    else:
        endpoint.fake.fault(fault, "chat.postMessage", count=2)
    driver = endpoint.driver()
    status, asked = await driver.mention(f"<@{BOT_USER_ID}> copper foil prices?", secret=SECRET)
    assert status == 200
    await wait_for(lambda: bool(driver.replies(asked)), 30, "the picker")
    [picker] = driver.replies(asked)
    assert button_value(picker, "depth_standard")
    stored = await endpoint.redis.get(request_key(CHANNEL, asked.ts))
    assert stored is not None and ResearchRequestMsg.from_json(stored).picker_ts == picker.ts
    log_is_clean(caplog)
    assert any("trying again in" in r.getMessage() for r in caplog.records)
    assert await endpoint.redis.zcard(PICKERS_KEY) == 0


@pytest.mark.parametrize("fault", ["html-502", "text-405", "truncated-json", "reset"])
async def test_a_handlers_slack_call_that_fails_is_one_line_not_a_traceback(
        endpoint: Endpoint, caplog: pytest.LogCaptureFixture, fault: str) -> None:
    """The click still queues the research when the picker cannot be turned into its status;
    a reply that cannot be posted (a follow-up before the depth is chosen) is one warning."""
    driver = endpoint.driver()
    _, asked = await driver.mention(f"<@{BOT_USER_ID}> copper foil prices?", secret=SECRET)
    [picker] = driver.replies(asked)
    endpoint.fake.fault(fault, "chat.postMessage", count=10)
    endpoint.fake.fault(fault, "chat.update", count=10)
    reply = endpoint.fake.post_user_message(CHANNEL, ALICE, "and zinc?", thread_ts=asked.ts)
    body = event_body({"type": "message", "user": ALICE, "text": reply.text, "ts": reply.ts,
                       "thread_ts": asked.ts, "channel": CHANNEL, "channel_type": "channel",
                       "event_ts": reply.ts})
    assert await endpoint.post(body, sign(body)) in (200, 500)
    assert await post_click(endpoint, click_body(
        picker.ts, button_value(picker, "depth_standard"))) == 200
    assert [r.depth for r in endpoint.queue.research_requests] == ["standard"]
    log_is_clean(caplog)
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any(m.startswith("a event_callback handler's Slack call failed: ") for m in said)
    assert any("not turned into its status" in m for m in said)
