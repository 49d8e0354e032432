"""`redsearch bot` and `redsearch worker`: the Slack surface and the ARQ worker as processes.

Both need a Redis that answers at REDIS_URL (`redsearch up` starts an embedded one instead).
Each runs until Ctrl-C or SIGTERM and then shuts down cleanly.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import signal
from dataclasses import dataclass
from typing import TYPE_CHECKING

from contract.redis_server import redis_answers
from redsearch.logs import configure_logging
from redsearch.terminal import say
from research_core.errors import RedisUnavailable, SettingsError
from research_core.redaction import redact_url
from research_core.settings import Settings

if TYPE_CHECKING:
    from bot.server import BotServer


def start_logging(role: str, settings: Settings) -> None:
    """The process's log lines in RED_LOG_FORMAT, the settings' secrets masked."""
    configure_logging(role, settings.log_format, settings.secret_values())


async def wait_for_signal() -> None:
    """Until SIGINT or SIGTERM."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


async def _redis_url(settings: Settings) -> str:
    url = settings.worker.redis_url
    if not await redis_answers(url):
        raise RedisUnavailable(f"no Redis answers at REDIS_URL={redact_url(url)}; start one, or "
                               "use `redsearch up`, which starts an embedded Redis")
    return url


@dataclass(frozen=True)
class Listen:
    """Where `redsearch bot` or `up` listens, from the command line (None: from the settings,
    RED_BOT_HOST, RED_BOT_METRICS_PORT and RED_BOT_METRICS_HOST)."""

    host: str | None = None
    metrics_port: int | None = None
    metrics_host: str | None = None

    def applied(self, settings: Settings) -> Settings:
        slack = settings.slack
        slack = dataclasses.replace(
            slack, bot_host=slack.bot_host if self.host is None else self.host,
            metrics_port=slack.metrics_port if self.metrics_port is None else self.metrics_port,
            metrics_host=slack.metrics_host if self.metrics_host is None else self.metrics_host)
        return dataclasses.replace(settings, slack=slack)


def metrics_line(server: BotServer) -> str:
    """Where the bot's metrics are, for its start-up line."""
    if server.metrics_port is None:
        return "metrics at /metrics (on this port: set --metrics-port in production)"
    return f"metrics and /healthz on port {server.metrics_port}"


async def run_bot(port: int | None, settings: Settings | None = None,
                  listen: Listen | None = None) -> int:
    from bot.server import start_bot

    settings = (listen or Listen()).applied(settings or Settings.from_env())
    if not settings.slack.configured:
        raise SettingsError("set SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET (or SLACK_APP_TOKEN "
                            "for Socket Mode; see docs/slack.md; SLACK_CLIENT_ID and "
                            "SLACK_CLIENT_SECRET for many workspaces), or try `redsearch up` "
                            "for the local playground")
    start_logging("bot", settings)
    server = await start_bot(settings, await _redis_url(settings), port=port)
    how = "Socket Mode" if server.socket else "HTTP events at /slack/events"
    say(f"bot on port {server.port} of {settings.slack.bot_host}: {how}, {metrics_line(server)} "
        f"(Web API {redact_url(settings.slack.api_url)}); Ctrl-C stops it")
    try:
        await wait_for_signal()
    finally:
        await server.stop()
    say("bot stopped")
    return 0


async def run_worker_command(settings: Settings | None = None) -> int:
    from workers.worker import run_worker

    settings = settings or Settings.from_env()
    if not settings.slack.bot_token:
        raise SettingsError("set SLACK_BOT_TOKEN: the worker posts in Slack threads")
    start_logging("worker", settings)
    url = await _redis_url(settings)
    config = settings.worker
    metrics = "" if config.metrics_port is None else \
        f", metrics at http://{config.metrics_host}:{config.metrics_port}/metrics"
    say(f"worker starting on Redis {redact_url(url)} ({config.max_jobs} jobs at once"
        f"{metrics}); Ctrl-C stops it")
    task = asyncio.create_task(run_worker(settings, url))
    waiter = asyncio.create_task(wait_for_signal())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    for running in (task, waiter):
        running.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    say("worker stopped")
    return 0
