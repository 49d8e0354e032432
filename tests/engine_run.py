"""Runs the real engine against scripted tiers over HTTP, for the engine tests."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from research_core.loop.engine import Engine
from research_core.loop.memory.state import RunState
from research_core.loop.report.reporter import Report
from research_core.models.embeddings import build_similarity
from research_core.models.tier_factory import aclose_tiers, build_tiers
from research_core.protocols import Publisher, SearchBackend, Similarity, SteerSource
from research_core.search.patterns import QueryLearning
from research_core.settings import EmbeddingSettings
from research_core.store.sql import SqlStore
from tests.conftest import AS_OF, scripted_settings
from tests.fakes.openai_server import FakeOpenAIServer, Handler

QUESTION = "How did heat pump sales and prices move in 2026?"
Serve = Callable[[Handler], Awaitable[FakeOpenAIServer]]


@cache
def default_similarity() -> Similarity:
    """The real offline embedder (loaded once for the whole test session)."""
    return build_similarity(EmbeddingSettings())


@dataclass
class Outcome:
    state: RunState
    report: Report
    server: FakeOpenAIServer


async def run_engine(serve: Serve, handler: Handler, backend: SearchBackend, store: SqlStore,
                     question: str = QUESTION, similarity: Similarity | None = None,
                     publisher: Publisher | None = None, mode: str = "auto",
                     learning: QueryLearning | None = None,
                     steers: SteerSource | None = None, **engine: Any) -> Outcome:
    server = await serve(handler)
    settings = scripted_settings(server.base_url, **engine)
    state = RunState.new(question, AS_OF, settings, mode=mode)
    report = await run_state(server, state, backend, store, similarity, publisher,
                             learning=learning, steers=steers, **engine)
    return Outcome(state, report, server)


async def run_state(server: FakeOpenAIServer, state: RunState, backend: SearchBackend,
                    store: SqlStore, similarity: Similarity | None = None,
                    publisher: Publisher | None = None, learning: QueryLearning | None = None,
                    steers: SteerSource | None = None, **engine: Any) -> Report:
    """Run (or resume) the engine on a given state, with the tiers on `server`."""
    settings = scripted_settings(server.base_url, **engine)
    tiers = build_tiers(settings)
    try:
        return await Engine.build(settings, tiers, backend, store,
                                  similarity=similarity or default_similarity(),
                                  publisher=publisher, learning=learning,
                                  steers=steers).run(state)
    finally:
        await aclose_tiers(tiers)
