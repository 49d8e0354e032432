"""What the bot counts for Prometheus, and its `GET /metrics`.

Slack requests received and acked by type, how long the ack took, retried deliveries dropped,
requests refused (bad signature, too large, malformed); and, read from Redis at most once every
QUEUE_READ_EVERY_S whatever the number of scrapes (a scrape serves what is kept in memory,
reading again only when that is older), how many jobs wait in the queue and how many must run
until they end. The bot's process also counts its Slack Web API calls and the jobs it queues
(`contract.metrics`). Labels take values from small fixed sets: an event type Slack sends
(anything else is "other"), a reason.

`GET /metrics` is served on the bot's own port unless the bot is given a metrics port
(RED_BOT_METRICS_PORT, `--metrics-port`): then it is served, with `/healthz`, on a listener of
its own (`metrics_app`) and the bot's public port answers 404 for it. With RED_METRICS_TOKEN
set, a scrape must bring it as `Authorization: Bearer …` (401 otherwise).
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from arq.constants import default_queue_name
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Counter, Gauge, Histogram
from prometheus_client.exposition import generate_latest
from redis.asyncio import Redis
from redis.exceptions import RedisError

from contract.keys import ACTIVE_KEY
from contract.redis_server import awaited

log = logging.getLogger("bot.metrics")

METRICS_PATH = "/metrics"
HEALTH_PATH = "/healthz"
SCRAPE_REDIS_S = 1.0  # a scrape waits at most this long for the queue's figures
QUEUE_READ_EVERY_S = 1.0  # the queue's figures are read from Redis at most this often
# The request types Slack sends this app (an event's own type for event callbacks).
EVENT_TYPES = frozenset({
    "app_mention", "message", "assistant_thread_started", "assistant_thread_context_changed",
    "app_home_opened", "block_actions", "block_suggestion", "view_submission", "view_closed",
    "shortcut", "message_action", "slash_command", "url_verification"})

EVENTS_RECEIVED = Counter(
    "redsearch_slack_events_received_total",
    "Slack requests (events, clicks, commands) that passed the signature and shape checks.",
    ["type"])
EVENTS_ACKED = Counter(
    "redsearch_slack_events_acked_total", "Slack requests answered with a 2xx (acked).",
    ["type"])
ACK_SECONDS = Histogram(
    "redsearch_slack_ack_seconds", "From a Slack request's arrival to its ack (Slack retries "
    "after 3 s).", ["type"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5))
DUPLICATES = Counter(
    "redsearch_slack_duplicate_deliveries_total",
    "Deliveries already handled, acked and dropped: Slack's retries of an event (by its event "
    "id) and repeats of a signed request within the signature window (by its timestamp and "
    "body).")
REFUSED = Counter(
    "redsearch_slack_requests_refused_total",
    "Requests refused before bolt saw them (signature: missing, stale or invalid; too_large; "
    "malformed).", ["reason"])
QUEUE_JOBS = Gauge(
    "redsearch_queue_jobs", "Jobs in ARQ's queue, waiting or running (state: due), or "
    "deferred to a later time (state: deferred); read at each scrape.", ["state"])
ACTIVE_JOBS = Gauge(
    "redsearch_active_jobs", "Jobs that must run until they end (red:active): queued, "
    "running, or waiting to be resumed; read at each scrape.")


def event_type(payload: dict[str, Any]) -> str:
    """The type of a Slack request, for a label: one of EVENT_TYPES, else "other"."""
    if "command" in payload:
        return "slash_command"
    kind = payload.get("type")
    event = payload.get("event")
    if kind == "event_callback" and isinstance(event, dict):
        kind = event.get("type")
    return kind if isinstance(kind, str) and kind in EVENT_TYPES else "other"


def answered(kind: str, status: int, started: float) -> None:
    """A request of `kind` answered with `status`, `started` at time.monotonic()."""
    if 200 <= status < 300:
        EVENTS_ACKED.labels(kind).inc()
    ACK_SECONDS.labels(kind).observe(time.monotonic() - started)


async def _read_queue(redis: Redis) -> None:
    now_ms = int(time.time() * 1000)
    due = await redis.zcount(default_queue_name, "-inf", now_ms)
    later = await redis.zcount(default_queue_name, f"({now_ms}", "+inf")
    QUEUE_JOBS.labels("due").set(due)
    QUEUE_JOBS.labels("deferred").set(later)
    ACTIVE_JOBS.set(await awaited(redis.hlen(ACTIVE_KEY)))


@dataclass
class QueueFigures:
    """The queue's gauges, read from `redis` at most once every `every_s` (one read at a time,
    shared by the scrapes that wait for it); kept as they were when Redis does not answer
    within SCRAPE_REDIS_S: the scrape itself never fails for it."""

    redis: Redis
    every_s: float = QUEUE_READ_EVERY_S
    read_at: float | None = None
    reads: int = 0
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def refresh(self) -> None:
        async with self._lock:
            if self.read_at is not None and time.monotonic() - self.read_at < self.every_s:
                return
            self.read_at = time.monotonic()  # a failed read is not tried again at once
            self.reads += 1
            try:
                async with asyncio.timeout(SCRAPE_REDIS_S):
                    await _read_queue(self.redis)
            except (RedisError, OSError, TimeoutError) as exc:
                log.debug("queue figures not read for /metrics: %s", exc)


@dataclass
class MetricsEndpoint:
    """What `GET /metrics` serves and to whom: the queue's figures (None: none), the bearer
    token a scrape must bring ("": none), and whether it is served on the application it was
    added to (`elsewhere`: on a listener of its own, `metrics_app`)."""

    figures: QueueFigures | None = None
    token: str = ""
    elsewhere: bool = False

    def authorised(self, request: web.Request) -> bool:
        if not self.token:
            return True
        given = request.headers.get("Authorization", "")
        return hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode())

    async def scrape(self, request: web.Request) -> web.Response:
        if not self.authorised(request):
            return web.Response(status=401, text="a bearer token is required\n",
                                headers={"WWW-Authenticate": 'Bearer realm="metrics"'})
        if self.figures is not None:
            await self.figures.refresh()
        return web.Response(body=generate_latest(REGISTRY),
                            headers={"Content-Type": CONTENT_TYPE_LATEST})


METRICS_ENDPOINT = web.AppKey("metrics_endpoint", MetricsEndpoint)


def metrics_route(application: web.Application, redis: Redis | None) -> None:
    """`GET /metrics` on `application`: the process's metrics in Prometheus's text format;
    with `redis`, the queue's figures too (`QueueFigures`). Its `MetricsEndpoint` is
    `application[METRICS_ENDPOINT]`, for the bot to set its token or move it elsewhere."""
    endpoint = MetricsEndpoint(QueueFigures(redis) if redis is not None else None)
    application[METRICS_ENDPOINT] = endpoint

    async def scrape(request: web.Request) -> web.Response:
        if endpoint.elsewhere:
            raise web.HTTPNotFound()
        return await endpoint.scrape(request)

    application.router.add_get(METRICS_PATH, scrape)


def metrics_app(endpoint: MetricsEndpoint,
                health: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.Application:
    """The listener of its own that serves `endpoint` and `health` (RED_BOT_METRICS_PORT)."""
    application = web.Application()
    application.router.add_get(METRICS_PATH, endpoint.scrape)
    application.router.add_get(HEALTH_PATH, health)
    return application
