"""The Slack Web API client the bot and the workers share, and how its failures are read.

Every client retries what a retry can fix, a bounded number of times: HTTP 429 after its
`Retry-After` (at most MAX_WAIT_S), a 5xx after its `Retry-After` or an exponential back-off,
and a dropped connection. A 5xx to a call that adds to a thread (chat.postMessage,
chat.postEphemeral, chat.startStream, chat.appendStream) or makes a canvas or shares a file
(canvases.create, files.completeUploadExternal) is not repeated here: the first
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
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from contract.metrics import SLACK_CALLS, SLACK_RATELIMITED, SLACK_RETRIES, SLACK_RETRY_WAIT

# What a failed Slack call raises: Slack's error, a connection that failed, a timeout.
SLACK_FAILURES = (SlackApiError, aiohttp.ClientError, TimeoutError)
MAX_WAIT_S = 30.0  # the longest Retry-After waited for in one call
SERVER_ERRORS = frozenset({500, 502, 503, 504})
POSTS = ("chat.postMessage", "chat.postEphemeral", "chat.startStream", "chat.appendStream",
         "canvases.create", "files.completeUploadExternal")  # each adds a canvas or a file


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
        wait = min(wait, MAX_WAIT_S) + random.random() * 0.25
        _count_retry(request, response, wait)
        await asyncio.sleep(wait)
        state.increment_current_attempt()


def _method(request: HttpRequest) -> str:
    """The Web API method of a request (`…/api/chat.postMessage`)."""
    return request.url.rstrip("/").rsplit("/", 1)[-1]


def _count_retry(request: HttpRequest, response: HttpResponse | None, wait_s: float) -> None:
    method = _method(request)
    limited = response is not None and response.status_code == 429
    if limited:
        SLACK_RATELIMITED.labels(method).inc()
    SLACK_RETRIES.labels(method, "ratelimited" if limited else "server_error").inc()
    SLACK_RETRY_WAIT.labels(method).inc(wait_s)


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


class CountedClient(AsyncWebClient):
    """The Web API client, counting every call by method and how it ended
    (`redsearch_slack_api_calls_total`)."""

    async def api_call(
        self, api_method: str, *, http_verb: str = "POST", files: dict[str, Any] | None = None,
        data: Any = None, params: dict[str, Any] | None = None,
        json: dict[str, Any] | None = None, headers: dict[str, Any] | None = None,
        auth: dict[str, Any] | None = None,
    ) -> AsyncSlackResponse:
        try:
            response = await super().api_call(api_method, http_verb=http_verb, files=files,
                                              data=data, params=params, json=json,
                                              headers=headers, auth=auth)
        except Exception as exc:
            result = call_result(exc)
            SLACK_CALLS.labels(api_method, result).inc()
            if result == "ratelimited":
                SLACK_RATELIMITED.labels(api_method).inc()
            raise
        SLACK_CALLS.labels(api_method, "ok").inc()
        return response


def counted(client: AsyncWebClient) -> AsyncWebClient:
    """`client` as a CountedClient (the same token, URL, session, headers and retries): bolt
    hands each request's listeners a plain client of its own making."""
    if isinstance(client, CountedClient):
        return client
    copy = CountedClient(token=client.token, base_url=client.base_url, timeout=client.timeout,
                         ssl=client.ssl, proxy=client.proxy, session=client.session,
                         trust_env_in_session=client.trust_env_in_session,
                         headers=dict(client.headers), logger=client.logger,
                         retry_handlers=client.retry_handlers)
    copy.default_params = dict(client.default_params)
    return copy


def make_client(token: str, base_url: str | None = None, max_retries: int = 3) -> AsyncWebClient:
    """An AsyncWebClient that retries 429 and 5xx (bounded, Retry-After honoured) and
    dropped connections, and counts its calls."""
    handlers = retry_handlers(max_retries)
    if base_url is None:
        return CountedClient(token=token, retry_handlers=handlers)
    return CountedClient(token=token, base_url=base_url, retry_handlers=handlers)


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


def call_result(exc: BaseException) -> str:
    """How a failed call ended, as `contract.metrics.SLACK_RESULTS` names it."""
    if isinstance(exc, aiohttp.ClientError | TimeoutError):
        return "network"
    if not isinstance(exc, SlackApiError):
        return "error"
    status = _status(exc.response)
    if status == 429:
        return "ratelimited"
    return "server_error" if is_outage(exc) else "error"
