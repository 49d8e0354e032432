"""Signed delivery of Events API and interactivity requests to an app, with Slack's retries.

Every attempt is signed afresh (`X-Slack-Signature: v0=HMAC-SHA256(secret, "v0:ts:body")`,
`X-Slack-Request-Timestamp`). An event that is not answered 2xx within `ack_timeout_s` (Slack: 3 s)
is retried up to `max_retries` times with `X-Slack-Retry-Num` and `X-Slack-Retry-Reason`
(`http_timeout`, `http_error`), the app deduplicating by `event_id`. While the app cannot be
reached at all (`connection_failed`: a bot restarting) any delivery, clicks included, is retried
every `down_retry_s` for up to `down_give_up_s`, so a restart loses nothing. A click that reached
the app is never re-sent (Slack does not retry interactions).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

log = logging.getLogger(__name__)

JSON = dict[str, Any]

DELIVERIES_KEPT = 1000  # finished deliveries kept for inspection
TIMEOUT = "http_timeout"
HTTP_ERROR = "http_error"
CONNECTION_FAILED = "connection_failed"


def signature(secret: str, timestamp: str, body: str) -> str:
    digest = hmac.new(secret.encode(), f"v0:{timestamp}:{body}".encode(), hashlib.sha256)
    return "v0=" + digest.hexdigest()


@dataclass
class Attempt:
    """One POST: its retry number, the HTTP status (None: no answer) and the failure reason."""

    number: int
    status: int | None
    reason: str | None


@dataclass
class Delivery:
    """One event or interaction and what became of it."""

    kind: str  # "event", "interaction" or "command"
    key: str  # the event_id, the action_id for a click, the command
    body: str
    content_type: str
    attempts: list[Attempt] = field(default_factory=list)
    done: bool = False
    delivered: bool = False
    reply: str = ""  # the app's answer to a delivered request (a command's ack text)

    @property
    def retrying(self) -> str | None:
        """The reason of the last failed attempt while the delivery is still retrying."""
        if self.done or not self.attempts:
            return None
        return self.attempts[-1].reason


Notify = Callable[[Delivery], None]


class Deliverer:
    """Delivers signed requests to `url` in the background; `close()` it when done."""

    def __init__(self, url: str, signing_secret: str, *, ack_timeout_s: float = 3.0,
                 max_retries: int = 3, retry_delay_s: float = 1.0, down_retry_s: float = 1.0,
                 down_give_up_s: float = 600.0, notify: Notify | None = None) -> None:
        self.url = url
        self.signing_secret = signing_secret
        self.ack_timeout_s = ack_timeout_s
        self.max_retries = max_retries
        self.retry_delay_s = retry_delay_s
        self.down_retry_s = down_retry_s
        self.down_give_up_s = down_give_up_s
        self.notify = notify
        self.deliveries: list[Delivery] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def idle(self, timeout_s: float = 30.0) -> None:
        """Wait until every delivery has finished (delivered or given up)."""
        async with asyncio.timeout(timeout_s):
            while self._tasks:
                await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def send_event(self, envelope: JSON) -> Delivery:
        delivery = Delivery("event", str(envelope["event_id"]), json.dumps(envelope),
                            "application/json")
        return self._start(delivery)

    def send_interaction(self, payload: JSON) -> Delivery:
        body = urllib.parse.urlencode({"payload": json.dumps(payload)})
        actions = payload.get("actions") or [{}]
        delivery = Delivery("interaction", str(actions[0].get("action_id") or payload["type"]),
                            body, "application/x-www-form-urlencoded")
        return self._start(delivery)

    def send_command(self, form: dict[str, str]) -> Delivery:
        delivery = Delivery("command", form.get("command", ""), urllib.parse.urlencode(form),
                            "application/x-www-form-urlencoded")
        return self._start(delivery)

    def _start(self, delivery: Delivery) -> Delivery:
        if len(self.deliveries) >= DELIVERIES_KEPT:
            self.deliveries = [d for d in self.deliveries if not d.done][-DELIVERIES_KEPT:]
        self.deliveries.append(delivery)
        task = asyncio.create_task(self._deliver(delivery))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return delivery

    async def _deliver(self, delivery: Delivery) -> None:
        started = time.monotonic()
        retries = 0
        try:
            while True:
                attempt = await self._attempt(delivery)
                delivery.attempts.append(attempt)
                if attempt.reason is None:
                    delivery.delivered = True
                    return
                self._notify(delivery)
                if attempt.reason == CONNECTION_FAILED:
                    if time.monotonic() - started > self.down_give_up_s:
                        return
                    await asyncio.sleep(self.down_retry_s)
                    continue
                if delivery.kind != "event" or retries >= self.max_retries:
                    return
                retries += 1
                await asyncio.sleep(self.retry_delay_s * retries)
        finally:
            delivery.done = True
            self._notify(delivery)

    async def _attempt(self, delivery: Delivery) -> Attempt:
        number = len(delivery.attempts)
        timestamp = str(int(time.time()))
        headers = {"Content-Type": delivery.content_type,
                   "X-Slack-Request-Timestamp": timestamp,
                   "X-Slack-Signature": signature(self.signing_secret, timestamp, delivery.body)}
        if delivery.kind == "event" and delivery.attempts:
            headers["X-Slack-Retry-Num"] = str(number)
            headers["X-Slack-Retry-Reason"] = str(delivery.attempts[-1].reason)
        timeout = aiohttp.ClientTimeout(total=self.ack_timeout_s)
        try:
            async with self._client().post(self.url, data=delivery.body.encode(),
                                           headers=headers, timeout=timeout) as resp:
                reply = await resp.text()
                ok = 200 <= resp.status < 300
                if ok:
                    delivery.reply = reply
                return Attempt(number, resp.status, None if ok else HTTP_ERROR)
        except TimeoutError:
            return Attempt(number, None, TIMEOUT)
        except aiohttp.ClientConnectionError as exc:
            log.info("delivery %s: %s", delivery.key, exc)
            return Attempt(number, None, CONNECTION_FAILED)

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession()
        return self._session

    def _notify(self, delivery: Delivery) -> None:
        if self.notify is not None:
            self.notify(delivery)


__all__ = ["CONNECTION_FAILED", "HTTP_ERROR", "TIMEOUT", "Attempt", "Deliverer", "Delivery",
           "signature"]
