"""Serves the bot over aiohttp: POST /slack/events (events and interactivity), GET /healthz and
GET /metrics (Prometheus); with SLACK_APP_TOKEN set, events and clicks arrive over Socket Mode
instead (no public URL)."""

from __future__ import annotations

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
from bot.metrics import EVENTS_RECEIVED, answered, event_type
from bot.oauth import oauth_settings
from bot.slack_fields import where
from contract.estimates import estimate_line
from contract.queue import JobQueue, connect
from research_core import log_context
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


@dataclass
class BotServer:
    runner: web.AppRunner
    pool: ArqRedis
    port: int
    socket: AsyncSocketModeHandler | None = None
    usage: LazyUsage | None = None
    engine: AsyncEngine | None = None  # the installations' database (many workspaces)
    records: LazyJobRecords | None = None  # the jobs it queued, in SQL (workers/sweep.py)

    @property
    def events_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/slack/events"

    async def stop(self) -> None:
        if self.socket is not None:
            await self.socket.close_async()  # type: ignore[no-untyped-call]  # untyped in bolt
        await self.runner.cleanup()
        await self.pool.aclose()
        if self.usage is not None:
            await self.usage.close()
        if self.engine is not None:
            await self.engine.dispose()
        if self.records is not None:
            await self.records.close()


async def start_bot(settings: Settings, redis_url: str, host: str = "0.0.0.0",
                    port: int | None = None) -> BotServer:
    """The bot listening on `port` (settings' RED_BOT_PORT when None; 0 picks a free one)."""
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
                    estimate=lambda team, w: estimate_line(pool, team, w),
                    usage=usage, oauth=oauth)
    web_application = web_app(app, settings.slack.signing_secret, pool)
    web_application.router.add_get("/healthz", _health)
    runner = web.AppRunner(web_application)
    await runner.setup()
    server = BotServer(runner, pool, 0, usage=usage, engine=engine, records=records)
    try:
        await web.TCPSite(runner, host, settings.slack.bot_port if port is None else port).start()
        server.port = int(runner.addresses[0][1])
        if settings.slack.app_token:
            server.socket = CountedSocketModeHandler(app, settings.slack.app_token)
            await server.socket.connect_async()  # type: ignore[no-untyped-call]  # untyped
    except BaseException:
        await server.stop()
        raise
    return server
