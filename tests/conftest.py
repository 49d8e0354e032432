"""Shared fixtures: the fake OpenAI server, a real SQLite store, a small real corpus."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from playground.fake_slack import FakeSlack
from research_core.protocols import SearchHit, SearchRequest, Similarity
from research_core.search.corpus import CorpusBackend
from research_core.settings import (
    TIERS,
    BudgetSettings,
    EngineSettings,
    Settings,
    TierSettings,
)
from research_core.store.sql import SqlStore
from tests.fakes.openai_server import FakeOpenAIServer, Handler
from tests.redis_db import empty_redis

pytest_plugins = ["tests.slack_stack"]  # the `start_stack` fixture: bot, Redis, ARQ worker

AS_OF = dt.date(2026, 10, 31)

DOCS = {
    "stats-sales-2026-09": ("official_statistics", "en", "2026-10-10",
                            "Heat pump sales statistics September 2026",
                            "Heat pump sales reached 214,000 units in September 2026, up 12.4% "
                            "on the year.\n\nQ3 2026 heat pump sales were 548,000 units."),
    "news-prices-2026-10": ("news", "en", "2026-10-20", "Heat pump prices fall",
                            "Heat pump equipment prices fell 9.5% to 7,150 euros in October 2026."
                            "\n\nInstalled heat pump prices rose 2.8% to 14,600 euros."),
    "blog-prices-2026-08": ("blog", "en", "2026-08-01", "Heat pump prices guide blog",
                            "Heat pump prices are 18,000 to 25,000 euros, sales up 40%."),
    "old-sales-2022": ("news", "en", "2022-03-01", "Heat pump sales boom 2022",
                       "Heat pump sales rose 35% in 2021 across Europe."),
    "zh-export-2026-10": ("industry_association", "zh", "2026-10-16", "热泵出口欧洲回升",
                          "2026年1—9月中国对欧洲热泵出口额同比增长18%，热泵价格下降。"),
}


def write_doc(folder: Path, doc_id: str, spec: tuple[str, str, str, str, str]) -> None:
    source_type, lang, published, title, body = spec
    folder.joinpath(f"{doc_id}.md").write_text(
        f"---\nid: {doc_id}\ntitle: \"{title}\"\nurl: https://example.example/{doc_id}\n"
        f"published: {published}\nsource_type: {source_type}\npublisher: Test\nlang: {lang}\n"
        f"---\n{body}\n", "utf-8")


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for doc_id, spec in DOCS.items():
        write_doc(folder, doc_id, spec)
    return folder


class RecordingBackend:
    """The real corpus backend, recording every request it receives."""

    def __init__(self, inner: CorpusBackend) -> None:
        self.inner = inner
        self.requests: list[SearchRequest] = []

    @property
    def name(self) -> str:
        return self.inner.name

    async def search(self, request: SearchRequest) -> list[SearchHit]:
        self.requests.append(request)
        return await self.inner.search(request)

    async def read_body(self, source_id: str) -> str | None:
        return await self.inner.read_body(source_id)


@pytest.fixture
def backend(corpus_dir: Path) -> RecordingBackend:
    return RecordingBackend(CorpusBackend.from_folder(corpus_dir))


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqlStore]:
    opened = await SqlStore.open(f"sqlite+aiosqlite:///{tmp_path / 'test.db'}")
    yield opened
    await opened.close()


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Handler], Awaitable[FakeOpenAIServer]]]:
    """Start fake OpenAI servers for a test; all are stopped at its end."""
    servers: list[FakeOpenAIServer] = []

    async def start(handler: Handler) -> FakeOpenAIServer:
        server = FakeOpenAIServer(handler)
        await server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        await server.stop()


def scripted_settings(base_url: str, **overrides: Any) -> Settings:
    """Tiers on the fake server; each override goes to the engine or the budget settings
    that has the field (`max_steps` is the budget's `steps`)."""
    tiers = {t: TierSettings(model=f"{t}-script", base_url=base_url, max_retries=0,
                             price_in_per_mtok=1.0, price_out_per_mtok=2.0) for t in TIERS}
    if "max_steps" in overrides:
        overrides["steps"] = overrides.pop("max_steps")
    budget_names = {f.name for f in dataclasses.fields(BudgetSettings)}
    budget = {k: v for k, v in overrides.items() if k in budget_names}
    engine = {k: v for k, v in overrides.items() if k not in budget_names}
    return dataclasses.replace(
        Settings(), tiers=tiers, engine=dataclasses.replace(EngineSettings(), **engine),
        budget=dataclasses.replace(BudgetSettings(), **budget))


@pytest.fixture
def similarity() -> Similarity:
    from tests.engine_run import default_similarity
    return default_similarity()


SLACK_TOKEN = "xoxb-test"


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    """The local fake of the Slack Web API, without its per-channel post pacing."""
    async with FakeSlack(token=SLACK_TOKEN, post_interval=0.0) as server:
        yield server


def cli_env(data_dir: Path, base_url: str | None = None) -> dict[str, str]:
    """The environment for running the CLI in a subprocess: the caller's RED_* settings and
    DATABASE_URL removed, data under `data_dir`, and every tier on `base_url` when given."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("RED_") and k != "DATABASE_URL"}
    env["RED_DATA_DIR"] = str(data_dir)
    for tier in ("PLANNER", "EXECUTOR", "REPORTER") if base_url else ():
        env[f"RED_{tier}_BASE_URL"] = base_url or ""
        env[f"RED_{tier}_MODEL"] = f"{tier.lower()}-script"
        env[f"RED_{tier}_MAX_RETRIES"] = "0"
    return env


# TEST_REDIS_URL lets two checkouts run their tests at once on one Redis (other databases).
TEST_REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


@pytest.fixture
async def redis_url() -> AsyncIterator[str]:
    """An empty Redis database: the local server's db 15, else an embedded server."""
    async with empty_redis(TEST_REDIS_URL) as url:
        yield url


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(redis_url)
    try:
        yield client
    finally:
        await client.aclose()
