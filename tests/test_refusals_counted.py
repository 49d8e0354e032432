"""Every refusal the bot's HTTP server makes is counted in
`redsearch_slack_requests_refused_total` and told in one log line, whoever makes it: the
endpoint (a bad signature, a body too large, a malformed payload), or aiohttp before any of the
project's code runs (a header line too long, too many headers, a chunked body past the limit
or broken, bytes that are not HTTP, a path or method the server does not serve). A Socket Mode
connection that fails is one line with its cause, not a traceback at every retry."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from pathlib import Path

import pytest
from aiohttp import web
from prometheus_client import REGISTRY

from bot.server import start_bot
from playground.fake_slack import FakeSlack
from playground.fake_socket_mode import FakeSocketMode
from research_core.settings import Secret, Settings, SlackSettings, WorkerSettings
from tests.conftest import SLACK_TOKEN
from tests.slack_stack import wait_for
from tests.test_bad_slack import (
    MARKER,
    VALID,
    Endpoint,
    endpoint,
    huge_header_cases,
    log_is_clean,
    raw_request,
    sign,
)

__all__ = ["endpoint"]
START = b"POST /slack/events HTTP/1.1\r\nHost: bot\r\n"


def refused(reason: str) -> float:
    return sum(s.value for family in REGISTRY.collect() for s in family.samples
               if s.name == "redsearch_slack_requests_refused_total"
               and s.labels.get("reason") == reason)


def chunked(size: int, chunk: int = 65536) -> bytes:
    body = b"".join(b"%x\r\n%s\r\n" % (chunk, b"x" * chunk) for _ in range(size // chunk))
    return START + b"Transfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n" \
        + body + b"0\r\n"


# raw bytes sent to the server -> the label its refusal is counted under
RAW = {"signature-100k": "too_large", "timestamp-100k": "too_large", "name-100k": "too_large",
       "request-line-100k": "too_large", "headers-500": "too_large", "no-colon": "malformed",
       "chunked-2mb": "too_large", "chunked-broken": "malformed", "not-http": "malformed",
       "get": "method", "no-such-path": "not_found"}


def raw_case(name: str) -> bytes:
    if name in huge_header_cases():
        return huge_header_cases()[name]
    return {
        "chunked-2mb": chunked(2 * 1024 * 1024)[:-2],  # raw_request ends it with \r\n\r\n
        "chunked-broken": START + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n" + MARKER.encode(),
        "not-http": b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + MARKER.encode(),
        "get": b"GET /slack/events HTTP/1.1\r\nHost: bot",
        "no-such-path": b"POST /slack/commands HTTP/1.1\r\nHost: bot\r\nContent-Length: 0",
    }[name]


@pytest.mark.parametrize("case", list(RAW))
async def test_a_refusal_aiohttp_makes_is_counted_and_one_line(
        endpoint: Endpoint, caplog: pytest.LogCaptureFixture, case: str) -> None:
    label = RAW[case]
    before = {reason: refused(reason) for reason in set(RAW.values())}
    status_line = await raw_request(endpoint.url, raw_case(case))
    assert status_line.split()[1][:1] == b"4", status_line
    await wait_for(lambda: refused(label) == before[label] + 1, 5, f"the {label} refusal")
    assert {r: refused(r) - before[r] for r in before} == {
        r: float(r == label) for r in before}
    log_is_clean(caplog)
    [line] = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert line.startswith("refused a request from ") and len(line) < 200, line
    assert endpoint.fake.calls("chat.postMessage") == []


async def test_the_endpoints_own_refusals_are_counted_once(
        endpoint: Endpoint, caplog: pytest.LogCaptureFixture) -> None:
    before = {r: refused(r) for r in ("signature", "too_large", "malformed")}
    assert await endpoint.post(VALID, {}) == 401
    big = (b'{"type": "' + MARKER.encode()).ljust(2 * 1024 * 1024, b"x")
    assert await endpoint.post(big, sign(big)) == 413
    assert await endpoint.post(b"[]", sign(b"[]")) == 400
    assert {r: refused(r) - n for r, n in before.items()} == {
        "signature": 1, "too_large": 1, "malformed": 1}
    assert len([r for r in caplog.records if "refused a request" in r.getMessage()]) == 3
    log_is_clean(caplog)


@pytest.mark.parametrize("fault", ["token-refused", "socket-unreachable"])
async def test_a_socket_mode_connection_that_fails_is_one_line_with_its_cause(
        redis_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture, fault: str) -> None:
    caplog.set_level(logging.INFO)
    fake = FakeSlack(token=SLACK_TOKEN, post_interval=0.0)
    socket = FakeSocketMode(fake, "xapp-1-right")
    app = web.Application()
    socket.install(app)
    if fault == "socket-unreachable":  # Slack hands out a URL nothing answers at
        fake.add_method("apps.connections.open", lambda params: {
            "url": "ws://127.0.0.1:9/socket-mode"}, token="xapp-1-right")
    await fake.start(app=app)
    token = "xapp-1-wrong" if fault == "token-refused" else "xapp-1-right"
    settings = dataclasses.replace(
        Settings(), data_dir=tmp_path,
        slack=SlackSettings(bot_token=Secret(SLACK_TOKEN), app_token=Secret(token),
                            api_url=fake.base_url),
        worker=WorkerSettings(redis_url=redis_url))
    starting = asyncio.create_task(start_bot(settings, redis_url, host="127.0.0.1", port=0))
    try:
        await wait_for(lambda: any("Socket Mode" in r.getMessage() for r in caplog.records),
                       15, "the failed connection's line")
    finally:
        starting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await starting
        await fake.stop()
    cause = "invalid_auth" if fault == "token-refused" else \
        "connection failed (ClientConnectorError)"
    said = [r for r in caplog.records if r.name.startswith(("bot.", "slack_"))
            and r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in said] == [
        f"Socket Mode: failed to connect ({cause}); trying again"]
    assert all(r.exc_info is None for r in caplog.records), caplog.text
    assert "Traceback" not in caplog.text and "\nThe server responded" not in caplog.text
