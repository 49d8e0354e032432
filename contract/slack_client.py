"""The Slack Web API client the bot and the workers share, and how its failures are read.

Every client retries what a retry can fix, a bounded number of times: HTTP 429 after its
`Retry-After` (at most MAX_WAIT_S), a 5xx after its `Retry-After` or an exponential back-off,
and a dropped connection. A 5xx to a call that adds to a thread (chat.postMessage,
chat.postEphemeral, chat.startStream, chat.appendStream) is not repeated here: the first
request may have gone through before the proxy failed, so it is the caller's to retry with
its outbox (a worker's job retries and finds what reached the thread by its metadata key;
see `workers/jobs.py`; the bot posts a picker again later, `bot/pickers.py`).

`slack_error` reads the error of any failed call, whatever came back: a Slack `error` code,
else the HTTP status, else what failed (a reset connection, a timeout). A body that is not
Slack's JSON (an HTML 502 from a proxy, a text 405, an empty or truncated 200) is an outage,
never a crash: `SlackApiError.response` is then not always a SlackResponse (slack_sdk puts the
raw aiohttp response there when the JSON cannot be parsed).
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import AsyncConnectionErrorRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient

# What a failed Slack call raises: Slack's error, a connection that failed, a timeout.
SLACK_FAILURES = (SlackApiError, aiohttp.ClientError, TimeoutError)
MAX_WAIT_S = 30.0  # the longest Retry-After waited for in one call
SERVER_ERRORS = frozenset({500, 502, 503, 504})
POSTS = ("chat.postMessage", "chat.postEphemeral", "chat.startStream", "chat.appendStream")


def _retry_after(response: HttpResponse | None) -> float | None:
    """The answer's Retry-After in seconds (bounded), None when it has none or no number."""
    if response is None:
        return None
    for name, values in response.headers.items():
        if name.lower() == "retry-after" and values:
            raw = values[0] if isinstance(values, list) else values
            try:
                return min(max(float(raw), 0.0), MAX_WAIT_S)
            except ValueError:
                return None
    return None


class _Waiting(AsyncRetryHandler):
    async def prepare_for_next_attempt_async(
            self, *, state: RetryState, request: HttpRequest,
            response: HttpResponse | None = None, error: Exception | None = None) -> None:
        """Wait Retry-After when the answer says, else back off; then try again."""
        wait = _retry_after(response)
        if wait is None:
            wait = self.interval_calculator.calculate_sleep_duration(state.current_attempt)
        state.next_attempt_requested = True
        await asyncio.sleep(min(wait, MAX_WAIT_S) + random.random() * 0.25)
        state.increment_current_attempt()


class RateLimitRetry(_Waiting):
    """HTTP 429: wait Retry-After (at most MAX_WAIT_S; 1 s when it says nothing usable)."""

    async def _can_retry_async(self, *, state: RetryState, request: HttpRequest,
                               response: HttpResponse | None = None,
                               error: Exception | None = None) -> bool:
        return response is not None and response.status_code == 429


class ServerErrorRetry(_Waiting):
    """HTTP 500, 502, 503, 504, except to a call that adds to a thread (see above)."""

    async def _can_retry_async(self, *, state: RetryState, request: HttpRequest,
                               response: HttpResponse | None = None,
                               error: Exception | None = None) -> bool:
        if response is None or response.status_code not in SERVER_ERRORS:
            return False
        return not request.url.rstrip("/").endswith(POSTS)


def retry_handlers(max_retries: int = 3) -> list[AsyncRetryHandler]:
    return [RateLimitRetry(max_retry_count=max_retries),
            ServerErrorRetry(max_retry_count=max_retries),
            AsyncConnectionErrorRetryHandler(max_retry_count=1)]


def make_client(token: str, base_url: str | None = None, max_retries: int = 3) -> AsyncWebClient:
    """An AsyncWebClient that retries 429 and 5xx (bounded, Retry-After honoured) and
    dropped connections."""
    handlers = retry_handlers(max_retries)
    if base_url is None:
        return AsyncWebClient(token=token, retry_handlers=handlers)
    return AsyncWebClient(token=token, base_url=base_url, retry_handlers=handlers)


def _status(response: Any) -> int | None:
    for name in ("status_code", "status"):  # a SlackResponse, or an aiohttp response
        value = getattr(response, name, None)
        if isinstance(value, int):
            return value
    return None


def slack_error(exc: BaseException) -> str:
    """The error of a failed Slack call, as a short code, whatever status and body came back:
    Slack's `error` ("channel_not_found"), else "HTTP 502", else what failed."""
    if isinstance(exc, SlackApiError):
        data = getattr(exc.response, "data", None)
        error = data.get("error") if isinstance(data, dict) else None
        if isinstance(error, str) and error:
            return error[:100]
        status = _status(exc.response)
        return f"HTTP {status}" if status is not None else "unreadable answer"
    if isinstance(exc, TimeoutError):
        return "timeout"
    if isinstance(exc, aiohttp.ClientError):
        return f"connection failed ({type(exc).__name__})"
    return type(exc).__name__


def is_outage(exc: BaseException) -> bool:
    """A failure a later try can fix: no answer, a 429 or 5xx, or an answer that is not Slack's
    JSON (a proxy's page, an empty or cut body); not Slack's own `ok: false` with an error."""
    if isinstance(exc, aiohttp.ClientError | TimeoutError):
        return True
    if not isinstance(exc, SlackApiError):
        return False
    data = getattr(exc.response, "data", None)
    status = _status(exc.response)
    slack_said = isinstance(data, dict) and isinstance(data.get("error"), str)
    return status == 429 or (status or 0) >= 500 or not slack_said
