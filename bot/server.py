"""Serves the bot over aiohttp: POST /slack/events (events and interactivity), GET /healthz and
GET /metrics (Prometheus); with SLACK_APP_TOKEN set, events and clicks arrive over Socket Mode
instead (no public URL). With a metrics port (RED_BOT_METRICS_PORT, `--metrics-port`), /metrics
and /healthz are served on a listener of their own instead, which the public port never
reaches (docs/operations.md)."""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass

from aiohttp import web
from arq.connections import ArqRedis
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.adapter.socket_mode.async_internals import (
    run_async_bolt_app,
    send_async_response,
)
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from bot.app import build_app, web_app
from bot.metrics import (
    EVENTS_RECEIVED,
    METRICS_ENDPOINT,
    answered,
    event_type,
    metrics_app,
)
from bot.oauth import oauth_settings
from bot.slack_fields import where
from bot.slack_http import socket_mode_logger
from contract.estimates import RecentEstimates
from contract.queue import JobQueue, connect
from research_core import log_context
from research_core.errors import PortBusy
from research_core.settings import Settings
from research_core.store.jobs import LazyJobRecords
from research_core.store.usage import LazyUsage


async def _health(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


class CountedSocketModeHandler(AsyncSocketModeHandler):
    """Socket Mode, counted like the HTTP endpoint: requests received and acked by type, and
    how long the ack took; with their team and channel on the log lines they cause."""

    async def handle(self, client: SocketModeClient,  # type: ignore[override]  # as bolt's
                     req: SocketModeRequest) -> None:
        started = time.monotonic()
        payload = req.payload if isinstance(req.payload, dict) else {}
        kind = event_type(payload)
        EVENTS_RECEIVED.labels(kind).inc()
        team, channel = where(payload)
        with log_context.bound(team=team, channel=channel):
            response = await run_async_bolt_app(self.app, req)
        await send_async_response(client, req, response, started)
        answered(kind, response.status, started)


async def _listen(runner: web.AppRunner, host: str, port: int) -> int:
    """`runner` served at host:port (the port it got); PortBusy naming the setting."""
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError as exc:
        raise PortBusy(f"RED_BOT_METRICS_PORT={port}: cannot serve metrics on {host}:{port} "
                       f"({exc.strerror or exc})") from exc
    return int(runner.addresses[0][1])


GC_THRESHOLDS = (20000, 50, 1000)  # Python's defaults are (700, 10, 10)
_GC_DEFAULTS = gc.get_threshold()


def settle_heap() -> None:
    """Set aside for the garbage collector what start-up made (modules, the app, clients:
    some 250,000 objects that live as long as the process), and collect the young less
    often: without this every full collection walked them all, stalling the event loop
    0.1-0.5 s under a few hundred mentions a second, acks included, and the collections of
    requests still in flight took a quarter of the bot's CPU at 1,000 mentions a second
    (docs/reliability.md). Garbage is still collected, from a young generation of 20,000
    objects instead of 700 (a pause of a few milliseconds), the old one rarely: at 1,000
    mentions a second the median p99 ack was 17 ms with these thresholds against 32 ms with
    (5000, 20, 20), alternating runs of `make load` in one sitting."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def unsettle_heap() -> None:
    """Undo `settle_heap` (a bot stopped inside a longer-lived process: tests, `redsearch up`)."""
    gc.unfreeze()
    gc.set_threshold(*_GC_DEFAULTS)


@dataclass
class BotServer:
    runner: web.AppRunner
    pool: ArqRedis
    port: int
    socket: AsyncSocketModeHandler | None = None
    usage: LazyUsage | None = None
    engine: AsyncEngine | None = None  # the installations' database (many workspaces)
    records: LazyJobRecords | None = None  # the jobs it queued, in SQL (workers/sweep.py)
    metrics: web.AppRunner | None = None  # /metrics and /healthz on a listener of their own
    metrics_port: int | None = None

    @property
    def events_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/slack/events"

    @property
    def metrics_url(self) -> str:
        """Where Prometheus scrapes the bot (from this machine)."""
        return f"http://127.0.0.1:{self.metrics_port or self.port}/metrics"

    async def stop(self) -> None:
        unsettle_heap()
        if self.socket is not None:
            await self.socket.close_async()  # type: ignore[no-untyped-call]  # untyped in bolt
        if self.metrics is not None:
            await self.metrics.cleanup()
        await self.runner.cleanup()
        await self.pool.aclose()
        if self.usage is not None:
            await self.usage.close()
        if self.engine is not None:
            await self.engine.dispose()
        if self.records is not None:
            await self.records.close()


async def start_bot(settings: Settings, redis_url: str, host: str | None = None,
                    port: int | None = None) -> BotServer:
    """The bot listening on `host`:`port` (settings' RED_BOT_HOST and RED_BOT_PORT when None;
    port 0 picks a free one); with RED_BOT_METRICS_PORT, its /metrics and /healthz on a
    listener of their own at RED_BOT_METRICS_HOST (the bot's host when unset)."""
    host = settings.slack.bot_host if host is None else host
    pool = await connect(redis_url)
    records = LazyJobRecords(settings.db_url, settings.db_origin)  # opened on the first click
    usage = LazyUsage(settings.db_url) if settings.policy.admins else None
    engine = create_async_engine(settings.db_url, pool_pre_ping=True) \
        if settings.slack.oauth else None
    oauth = await oauth_settings(settings.slack, engine) if engine is not None else None
    app = build_app(bot_token=settings.slack.bot_token,
                    signing_secret=settings.slack.signing_secret,
                    api_url=settings.slack.api_url, redis=pool, queue=JobQueue(pool, records),
                    max_question_chars=settings.engine.max_question_chars,
                    deep_allowed=settings.budget.deep_allowed,
                    max_steps=settings.budget.steps, budget=settings.budget,
                    policy=settings.policy, plan_limit=settings.engine.max_children,
                    estimate=RecentEstimates(pool).line,
                    usage=usage, oauth=oauth)
    web_application = web_app(app, settings.slack.signing_secret, pool)
    web_application.router.add_get("/healthz", _health)
    endpoint = web_application[METRICS_ENDPOINT]
    endpoint.token = str(settings.metrics_token)
    endpoint.elsewhere = settings.slack.metrics_port is not None
    runner = web.AppRunner(web_application)
    await runner.setup()
    server = BotServer(runner, pool, 0, usage=usage, engine=engine, records=records)
    try:
        await web.TCPSite(runner, host, settings.slack.bot_port if port is None else port).start()
        server.port = int(runner.addresses[0][1])
        if settings.slack.metrics_port is not None:
            server.metrics = web.AppRunner(metrics_app(endpoint, _health))
            await server.metrics.setup()
            server.metrics_port = await _listen(server.metrics,
                                                settings.slack.metrics_host or host,
                                                settings.slack.metrics_port)
        if settings.slack.app_token:
            server.socket = CountedSocketModeHandler(app, settings.slack.app_token,
                                                     logger=socket_mode_logger())
            await server.socket.connect_async()  # type: ignore[no-untyped-call]  # untyped
    except BaseException:
        await server.stop()
        raise
    settle_heap()
    return server
