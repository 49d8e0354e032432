"""The deployment the chaos and load suites exercise, on this machine's local services only:
a Redis of their own (restartable, persistent), a PostgreSQL database of their own (created,
then dropped), the scripted OpenAI-compatible endpoint for all three tiers, the project's fake
Slack, bot replicas serving the real endpoint in this process, and `redsearch worker`
processes. Nothing here reaches another address."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import redis.asyncio as aioredis

from bot.server import BotServer, start_bot
from contract.keys import lease_key, request_key
from contract.redis_server import free_port
from contract.requests import CHOOSING, Requests, run_id_for
from playground.fake_slack import BOT_USER_ID, Change, Message
from redsearch.harness.fleet import BotProcess, WorkerFleet
from redsearch.harness.local_services import DurableRedis, PrivateDatabase
from redsearch.harness.scripted_tiers import ScriptedTiers
from redsearch.harness.slack_events import SignedSender
from redsearch.harness.stormy_slack import StormySlack
from research_core.settings import TIERS, Secret, Settings, SlackSettings, WorkerSettings
from workers.lease import holder_of

TOKEN = "xoxb-suite"
SECRET = "suite-signing-secret"
REQUESTER = "U0SUITE"
DEFAULT_DB_SERVER = "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
PICKER_WAIT_S = 15.0
CLICK_WAIT_S = 5.0
DELIVERY_TRIES = 5


class RequestLost(RuntimeError):
    """A person's request the service never answered: no picker, or a click never queued."""


@dataclass
class StackConfig:
    workers: int
    worker_jobs: int
    model_delay_s: float
    lease_s: float
    heartbeat_s: float
    reconcile_s: float
    data_dir: Path
    bots: int = 1
    bot_processes: bool = False  # `redsearch bot` processes instead of bots in this process
    db_server_url: str = DEFAULT_DB_SERVER
    post_interval_s: float = 1.0
    seed: int = 0
    extra_env: dict[str, str] = field(default_factory=dict)


def worker_env(config: StackConfig, redis_url: str, db_url: str, tiers_url: str,
               slack_url: str) -> dict[str, str]:
    """The workers' environment: this process's, without its RED_* and service settings."""
    own = ("DATABASE_URL", "REDIS_URL", "SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET",
           "SLACK_APP_TOKEN", "SLACK_API_URL")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RED_") and k not in own}
    env.update({
        "RED_DATA_DIR": str(config.data_dir), "DATABASE_URL": db_url, "REDIS_URL": redis_url,
        "SLACK_BOT_TOKEN": TOKEN, "SLACK_API_URL": slack_url,
        "RED_WORKER_JOBS": str(config.worker_jobs), "RED_WORKER_LEASE_S": str(config.lease_s),
        "RED_WORKER_HEARTBEAT_S": str(config.heartbeat_s),
        "RED_WORKER_RECONCILE_S": str(config.reconcile_s),
        "RED_SLACK_PROGRESS_INTERVAL_S": "1"})
    for tier in TIERS:
        env[f"RED_{tier.upper()}_BASE_URL"] = tiers_url
        env[f"RED_{tier.upper()}_MODEL"] = f"{tier}-scripted"
    env.update(config.extra_env)
    return env


@dataclass
class SuiteStack:
    config: StackConfig
    redis: DurableRedis = field(default_factory=DurableRedis)
    tiers: ScriptedTiers = field(init=False)
    fake: StormySlack = field(init=False)
    db: PrivateDatabase = field(init=False)
    fleet: WorkerFleet = field(init=False)
    bots: list[BotServer] = field(default_factory=list)
    bot_procs: list[BotProcess] = field(default_factory=list)
    session: aiohttp.ClientSession | None = None
    client: aioredis.Redis | None = None
    _event_seq: int = 0
    _pickers: dict[tuple[str, str], str] = field(default_factory=dict)  # thread → picker ts
    posted_at: dict[str, float] = field(default_factory=dict)  # message key → first posted

    def __post_init__(self) -> None:
        self.tiers = ScriptedTiers(self.config.model_delay_s)
        self.fake = StormySlack(TOKEN, self.config.post_interval_s, self.config.seed)
        self.db = PrivateDatabase(self.config.db_server_url)

    @property
    def sender(self) -> SignedSender:
        assert self.session is not None
        return SignedSender(self.session, SECRET)

    @property
    def bot_urls(self) -> list[str]:
        return [b.events_url for b in self.bots] + [b.events_url for b in self.bot_procs]

    async def start(self, start_workers: bool = True) -> None:
        await self.redis.start()
        await self.db.create()
        await self.tiers.start()
        await self.fake.start()
        self.fake.add_listener(self._note_posted)
        self.client = aioredis.Redis.from_url(self.redis.url)
        self.session = aiohttp.ClientSession()
        env = worker_env(self.config, self.redis.url, self.db.url, self.tiers.base_url,
                         self.fake.base_url)
        await self.start_bots(env)
        self.fleet = WorkerFleet(self.config.workers, env, self.config.data_dir / "logs")
        if start_workers:
            await self.fleet.start()
            await self.fleet.wait_ready()

    async def start_bots(self, env: dict[str, str]) -> None:
        if not self.config.bot_processes:
            settings = self.bot_settings()
            for _ in range(self.config.bots):
                self.bots.append(await start_bot(settings, self.redis.url, "127.0.0.1", 0))
            return
        bot_env = {**env, "SLACK_SIGNING_SECRET": SECRET}
        logs = self.config.data_dir / "logs"
        for i in range(self.config.bots):
            self.bot_procs.append(await BotProcess.start(bot_env, free_port(),
                                                         logs / f"bot-{i}.log"))

    def bot_settings(self) -> Settings:
        return dataclasses.replace(
            Settings(), data_dir=self.config.data_dir, database_url=self.db.url,  # its jobs
            slack=SlackSettings(bot_token=Secret(TOKEN), signing_secret=Secret(SECRET),
                                api_url=self.fake.base_url),
            worker=WorkerSettings(redis_url=self.redis.url))

    async def stop(self) -> None:
        with contextlib.suppress(AttributeError):
            await self.fleet.stop()
        for bot in self.bots:
            await bot.stop()
        for proc in self.bot_procs:
            await proc.stop()
        if self.session is not None:
            await self.session.close()
        if self.client is not None:
            await self.client.aclose()
        await self.fake.stop()
        await self.tiers.stop()
        await self.redis.stop()
        await self.db.drop()

    # -- asking for research, as a person in Slack does ----------------------------------------

    def next_event_id(self) -> str:
        self._event_seq += 1
        return f"EvSuite{self._event_seq:06d}"

    def _note_posted(self, change: Change) -> None:
        """Keeps, as messages are posted, each picker and when each message key appeared."""
        if change.kind != "posted":
            return
        msg = self.fake.message(change.channel, change.ts)
        payload = ((msg.metadata if msg else None) or {}).get("event_payload") or {}
        if isinstance(payload.get("key"), str):
            self.posted_at.setdefault(payload["key"], time.time())
        if change.thread_ts and any(
                e.get("action_id") == "depth_standard" for b in change.data.get("blocks", [])
                if b.get("type") == "actions" for e in b.get("elements", [])):
            self._pickers.setdefault((change.channel, change.thread_ts), change.ts)

    def picker_of(self, mention: Message) -> Message | None:
        """The depth picker the bot posted under `mention`, as it is now."""
        ts = self._pickers.get((mention.channel, mention.ts))
        return None if ts is None else self.fake.message(mention.channel, ts)

    async def mention(self, channel: str, question: str, bot: int = 0) -> Message:
        """A person asks in `channel`; the signed event is delivered (and delivered again, as
        Slack retries, while no picker appears); returns the mention once it has one."""
        msg = self.fake.post_user_message(channel, REQUESTER, f"<@{BOT_USER_ID}> {question}")
        event_id = self.next_event_id()
        for attempt in range(DELIVERY_TRIES):
            url = self.bot_urls[(bot + attempt) % len(self.bot_urls)]
            with contextlib.suppress(aiohttp.ClientError):
                await self.sender.mention(url, msg, event_id)
            if await self._until(lambda: self.picker_of(msg) is not None, PICKER_WAIT_S):
                return msg
        raise RequestLost(f"no depth picker for the mention in {channel}")

    async def choose(self, mention: Message, depth: str = "standard", bot: int = 0) -> float:
        """The requester clicks a depth (again, as a person would, while the request has not
        left `choosing`); returns the time of the click that queued it."""
        key = request_key(mention.channel, mention.ts)
        assert self.client is not None
        for attempt in range(DELIVERY_TRIES):
            picker = self.picker_of(mention)
            assert picker is not None
            clicked = time.time()
            url = self.bot_urls[(bot + attempt) % len(self.bot_urls)]
            with contextlib.suppress(aiohttp.ClientError):
                await self.sender.click(url, REQUESTER, f"depth_{depth}", picker)
            if await self._until_async(lambda: self._chosen(key), CLICK_WAIT_S):
                return clicked
        raise RequestLost(f"the click on {key} never queued the request")

    async def _chosen(self, key: str) -> bool:
        assert self.client is not None
        try:
            request = await Requests(self.client).load(key)
        except (aioredis.RedisError, OSError):
            return False
        return request is not None and request.status != CHOOSING

    # -- what the services hold -----------------------------------------------------------------

    async def holders(self, run_ids: list[str]) -> dict[str, str]:
        """run id → the worker (`host:pid`) holding its lease, for the runs that have one."""
        assert self.client is not None
        held: dict[str, str] = {}
        for run_id in run_ids:
            raw = await self.client.get(lease_key(run_id))
            if raw is not None:
                held[run_id] = holder_of(raw.decode())[1]
        return held

    @staticmethod
    def run_id(mention: Message) -> str:
        return run_id_for(request_key(mention.channel, mention.ts))

    @staticmethod
    async def _until(check: Callable[[], bool], timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if check():
                return True
            await asyncio.sleep(0.05)
        return False

    @staticmethod
    async def _until_async(check: Callable[[], Awaitable[bool]], timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if await check():
                return True
            await asyncio.sleep(0.1)
        return False
