"""What a worker loads once at startup and shares between its jobs: the models, similarity,
search backend, store, Slack client and Redis."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass

from arq.connections import ArqRedis
from slack_sdk.oauth.installation_store.sqlalchemy import AsyncSQLAlchemyInstallationStore
from slack_sdk.web.async_client import AsyncWebClient

from contract.installations import installation_store, team_client
from contract.keys import RATE_PREFIX
from contract.queue import JobQueue
from contract.requests import Requests
from contract.slack_client import make_client
from research_core.budget.caps import CapGuard
from research_core.loop.engine import Engine
from research_core.models.embeddings import build_similarity
from research_core.models.tier_factory import (
    aclose_tiers,
    build_tiers,
    describe_tier,
    embedded_calls,
    gpu_setting,
    placements,
)
from research_core.protocols import ModelTier, Publisher, SearchBackend, Similarity, SteerSource
from research_core.search.combined import Closes
from research_core.search.corpus import CorpusBackend, sample_corpus_dir
from research_core.search.web.factory import build_backend, rate_table, uses_corpus
from research_core.search.web.rate_limit import RedisRateLimiter
from research_core.settings import Settings
from research_core.store.jobs import JobRecords
from research_core.store.patterns import SqlPatternBook
from research_core.store.sql import SqlStore

log = logging.getLogger(__name__)


@dataclass
class Services:
    settings: Settings
    tiers: Mapping[str, ModelTier]
    similarity: Similarity
    backend: SearchBackend
    store: SqlStore
    slack: AsyncWebClient
    redis: ArqRedis
    installations: AsyncSQLAlchemyInstallationStore | None = None  # many workspaces (OAuth)

    @property
    def requests(self) -> Requests:
        return Requests(self.redis)

    @property
    def queue(self) -> JobQueue:
        return JobQueue(self.redis, JobRecords(self.store))

    @classmethod
    async def load(cls, settings: Settings, redis: ArqRedis, backend: SearchBackend | None = None,
                   similarity: Similarity | None = None) -> Services:
        """Everything from the settings; `backend` and `similarity` may be given instead."""
        started = time.monotonic()
        for name, tier in settings.tiers.items():
            log.info("model %s", describe_tier(name, tier, embedded_calls(settings)))
        tiers = await asyncio.to_thread(build_tiers, settings)
        for name, offload in placements(tiers):  # llama.cpp's word: GPU or CPU
            (log.warning if offload.missed else log.info)(
                "model %s runs on %s", name, offload.describe(gpu_setting(name)))
        similarity = similarity or build_similarity(settings.embedding)
        if backend is None:
            backend = await _backend(settings, redis, similarity)
        store = await SqlStore.open(settings.db_url, settings.db_origin)
        slack = make_client(settings.slack.bot_token, settings.slack.api_url)
        installations = await installation_store(settings.slack.client_id, store.engine) \
            if settings.slack.oauth else None
        log.info("worker ready in %.1fs: search %s, store %s%s", time.monotonic() - started,
                 backend.name, settings.db_url.split("://", 1)[0],
                 ", many workspaces" if installations is not None else "")
        return cls(settings, tiers, similarity, backend, store, slack, redis, installations)

    async def for_team(self, team: str) -> Services:
        """These services speaking to Slack with `team`'s bot token (many workspaces); the
        same services with SLACK_BOT_TOKEN in single-workspace mode. NotInstalled when the
        team has no installation."""
        if self.installations is None or not team:
            return self
        client = await team_client(self.installations, team, self.settings.slack.api_url)
        return dataclasses.replace(self, slack=client)

    def engine(self, publisher: Publisher, settings: Settings | None = None,
               caps: CapGuard | None = None, backend: SearchBackend | None = None,
               steers: SteerSource | None = None) -> Engine:
        """The engine for one job: `settings` as the job sees them (Deep per channel),
        `caps` the run's spending caps, `backend` what it searches (the worker's backend,
        with the workspace's own Slack when the job may search it), `steers` what people
        write to the research."""
        return Engine.build(settings or self.settings, self.tiers, backend or self.backend,
                            self.store,
                            similarity=self.similarity, publisher=publisher, caps=caps,
                            learning=SqlPatternBook(self.store, self.backend.name),
                            steers=steers)

    async def aclose(self) -> None:
        await aclose_tiers(self.tiers)
        if isinstance(self.backend, Closes):  # MCP servers' sessions
            await self.backend.aclose()
        await self.store.close()


async def _backend(settings: Settings, redis: ArqRedis, similarity: Similarity) -> SearchBackend:
    """RED_SEARCH_BACKENDS; web backends share one rate limit per key through Redis; the
    corpus searches are hybrid (BM25 and the embedder, fused)."""
    corpus = None
    if uses_corpus(settings):
        folder = settings.corpus_dir or sample_corpus_dir()
        corpus = await asyncio.to_thread(CorpusBackend.from_folder, folder, similarity)
        log.info("corpus: %d documents from %s", len(corpus), folder)
    limiter = RedisRateLimiter(redis, rate_table(settings.web), RATE_PREFIX)
    return build_backend(settings, corpus, limiter)
