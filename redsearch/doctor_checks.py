"""The checks of `redsearch doctor`, one per dependency a request needs (`redsearch.doctor`
runs them in order, each within its time limit).

Each check returns what it found (one line) or raises `Failed` saying what is wrong and, where
it can, what to do; it changes nothing (no table created, no message posted). URLs are shown
without their credentials; the runner masks every secret of the settings on top of that.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import redis.asyncio as aioredis
from redis.asyncio.sentinel import Sentinel
from redis.exceptions import RedisError
from slack_sdk.errors import SlackApiError
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import create_async_engine

from contract.redis_target import is_sentinel
from contract.slack_client import SLACK_FAILURES, make_client, slack_error
from research_core.models.embeddings import GGUFEmbedder, build_embedder
from research_core.models.no_model import NoModelTier
from research_core.models.offload import Offload
from research_core.models.openai_tier import OpenAITier
from research_core.models.tier_factory import (
    build_tier,
    describe_tier,
    embedded_calls,
    gpu_setting,
    offload_of,
)
from research_core.protocols import Message, SearchRequest
from research_core.redaction import redact_url
from research_core.search.corpus import CorpusBackend, sample_corpus_dir
from research_core.search.mcp.backend import McpBackend
from research_core.search.mcp.connection import McpFailed
from research_core.search.web.api_client import BackendFailed
from research_core.search.web.factory import make_search, rate_table
from research_core.search.web.rate_limit import LocalRateLimiter
from research_core.settings import Settings, TierSettings
from research_core.settings.service import sentinel_target
from research_core.store.schema import SchemaState, read_schema, sqlite_file
from research_core.store.sql import store_failure

T = TypeVar("T")
PROBE_QUERY = "test"  # one query to each search backend


class Failed(Exception):
    """A check found a problem; the message is its line."""


def in_thread(work: Callable[[], T]) -> asyncio.Future[T]:
    """`work()` in a daemon thread of its own: a check that runs past its limit is abandoned
    without holding up the command's exit (the default executor would be waited for)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if future.done():  # abandoned: the check ran past its limit
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]  # None only with an error

    def run() -> None:
        result: T | None = None
        error: BaseException | None = None
        try:
            result = work()
        except BaseException as exc:  # handed to the awaiting check, which reports it
            error = exc
        with contextlib.suppress(RuntimeError):  # the command has finished meanwhile
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=run, daemon=True, name="doctor-check").start()
    return future


# -- Redis -------------------------------------------------------------------------------------

async def redis_check(url: str, limit_s: float) -> str:
    """The server's version; with Sentinel, the primary the sentinels name."""
    try:
        if is_sentinel(url):
            return await _sentinel(url, limit_s)
        client = aioredis.Redis.from_url(url, socket_timeout=limit_s,
                                         socket_connect_timeout=limit_s)
        try:
            info = await client.info("server")
        finally:
            await client.aclose()
    except (RedisError, OSError) as exc:
        raise Failed(f"REDIS_URL={redact_url(url)}: {_said(exc)}") from exc
    return f"{redact_url(url)}: Redis {info.get('redis_version', '?')}"


async def _sentinel(url: str, limit_s: float) -> str:
    target = sentinel_target(url)
    timeouts = {"socket_timeout": limit_s, "socket_connect_timeout": limit_s}
    sentinel = Sentinel(  # type: ignore[no-untyped-call]  # untyped in redis-py
        list(target.sentinels), sentinel_kwargs=timeouts, **timeouts)
    try:
        host, port = await sentinel.discover_master(target.service)
        primary = sentinel.master_for(target.service, db=target.db, password=target.password)
        try:
            info = await primary.info("server")
        finally:
            await primary.aclose()
    finally:
        for client in sentinel.sentinels:
            await client.aclose()
    return (f"{redact_url(url)}: the sentinels name {host}:{port} primary of "
            f"{target.service!r}, Redis {info.get('redis_version', '?')}")


def _said(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__


# -- the database --------------------------------------------------------------------------------

async def database_check(settings: Settings) -> str:
    """Reachable, and its tables hold every column this version writes."""
    url, origin = settings.db_url, settings.db_origin
    path = sqlite_file(url)
    if path is not None and not path.exists():
        return _no_file_yet(url, origin, path)
    try:
        engine = create_async_engine(url)
    except (SQLAlchemyError, ImportError, ValueError) as exc:
        raise Failed(str(store_failure(url, origin, exc))) from exc
    try:
        async with engine.connect() as conn:
            state = await read_schema(conn)
    except (SQLAlchemyError, OSError, ValueError, OverflowError) as exc:
        raise Failed(str(store_failure(url, origin, exc))) from exc
    finally:
        await engine.dispose()
    return _schema_line(redact_url(url), state)


def _no_file_yet(url: str, origin: str, path: Path) -> str:
    """A SQLite file that does not exist yet: fine when its folder can be made and written."""
    folder = next((p for p in (path.parent, *path.parent.parents) if p.exists()), None)
    if folder is None or not folder.is_dir():
        raise Failed(f"{origin or 'database'}: {path.parent} cannot be created")
    return (f"{redact_url(url)}: no database file yet (the bot or a worker creates it "
            "when it starts)")


def _schema_line(url: str, state: SchemaState) -> str:
    if not state.current:
        lacks = "; ".join(f"table {t} lacks {', '.join(c)}"
                          for t, c in state.missing_columns.items())
        raise Failed(f"{url}: {state.server}, schema out of date ({lacks}): made by an older "
                     "version; migrate it or point DATABASE_URL at a new database")
    later = f"; {len(state.missing_tables)} created when a worker starts" \
        if state.missing_tables else ""
    return f"{url}: {state.server}, schema current ({state.tables} tables{later})"


# -- models --------------------------------------------------------------------------------------

async def tier_check(name: str, settings: Settings, limit_s: float) -> str:
    """An endpoint answers a one-token call; a GGUF model loads (its grammars compiled), and
    llama.cpp says whether its layers went to a GPU (a failure when asked and none did)."""
    tier = settings.tiers.get(name, TierSettings())
    described = describe_tier(name, tier, embedded_calls(settings)).split(": ", 1)[1]
    if not tier.base_url:
        built = await in_thread(lambda: build_tier(name, settings))
        if isinstance(built, NoModelTier):
            return described
        return _placed(f"{described}: loaded", offload_of(built), gpu_setting(name))
    model = OpenAITier(dataclasses.replace(tier, timeout_s=limit_s, max_retries=0), name=name)
    try:
        done = await model.complete([Message("user", "Reply with OK.")], schema=None,
                                    schema_name="text", max_tokens=1)
    finally:
        await model.aclose()
    return f"{described}: answered a one-token call ({done.completion_tokens} token)"


async def embeddings_check(settings: Settings, limit_s: float) -> str:
    """The similarity model (not a tier, but every worker loads it): embeds one text."""
    cfg = dataclasses.replace(settings.embedding, timeout_s=limit_s, max_retries=0)
    embedder = build_embedder(cfg)
    try:
        if cfg.kind == "openai":
            vectors = await embedder.embed(["test"])
        else:  # a local model loads in a thread of its own (see in_thread)
            vectors = await in_thread(lambda: asyncio.run(embedder.embed(["test"])))
    finally:
        await embedder.aclose()
    found = f"{embedder.name}: embedded a test text ({vectors.shape[1]} dimensions)"
    inner = getattr(embedder, "inner", embedder)
    offload = inner.offload if isinstance(inner, GGUFEmbedder) else None
    return _placed(found, offload, "RED_EMBED_GPU_LAYERS")


def _placed(found: str, offload: Offload | None, setting: str) -> str:
    """`found` with where a local model runs; Failed when GPU layers were asked for and
    llama.cpp put none on a GPU (the model works, many times slower than configured)."""
    if offload is None:
        return found
    if offload.missed:
        raise Failed(f"{found}; runs on {offload.describe(setting)}")
    return f"{found}; runs on {offload.describe(setting)}"


# -- search --------------------------------------------------------------------------------------

async def search_check(name: str, settings: Settings, limit_s: float) -> str:
    """The corpus loads and answers a query; a web backend answers one query."""
    request = SearchRequest(query=PROBE_QUERY, limit=1)
    if name == "corpus":
        folder = settings.corpus_dir or sample_corpus_dir()
        corpus = await in_thread(lambda: CorpusBackend.from_folder(folder))
        await corpus.search(request)
        return f"{len(corpus)} documents from {folder}"
    web = dataclasses.replace(settings.web, search_timeout_s=limit_s, search_retries=0)
    service = make_search(name, web, LocalRateLimiter(rate_table(web)))
    where = {"searxng": web.searxng_url, "brave": web.brave_url, "tavily": web.tavily_url}
    try:
        hits = await service.search(request)
    except BackendFailed as exc:
        raise Failed(f"{redact_url(where.get(name, ''))}: {exc}") from exc
    return f"{redact_url(where.get(name, ''))} answered a query " \
           f"({len(hits)} hit{'s' if len(hits) != 1 else ''})"


async def mcp_check(backend: McpBackend) -> str:
    """An MCP server starts and lists the tool it is searched with."""
    try:
        return await backend.check()
    except McpFailed as exc:
        raise Failed(str(exc)) from exc
    finally:
        await backend.aclose()


# -- Slack ---------------------------------------------------------------------------------------

async def slack_token_check(settings: Settings) -> str:
    """auth.test with the bot token, and the scopes the manifest asks for."""
    slack = settings.slack
    if not slack.bot_token:
        if slack.oauth:
            return ("many workspaces (SLACK_CLIENT_ID): each team's token comes from its "
                    "installation, made through /slack/install")
        raise Failed("SLACK_BOT_TOKEN is not set (without Slack credentials `redsearch up` "
                     "serves the local playground instead)")
    client = make_client(slack.bot_token, slack.api_url, max_retries=0)
    try:
        answer = await client.auth_test()
    except SLACK_FAILURES as exc:
        raise Failed(_slack_refusal(slack.api_url, exc)) from exc
    wanted = [s.strip() for s in slack.scopes.split(",") if s.strip()]
    return _scopes_line(answer.data if isinstance(answer.data, dict) else {},
                        _header(answer.headers, "x-oauth-scopes"), wanted)


def _slack_refusal(api_url: str, exc: BaseException) -> str:
    if isinstance(exc, SlackApiError):
        return f"auth.test refused SLACK_BOT_TOKEN: {slack_error(exc)}"
    return f"the Slack Web API at {redact_url(api_url)} did not answer: {slack_error(exc)}"


def _header(headers: Mapping[str, Any], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return str(value[0] if isinstance(value, list) and value else value)
    return None


def _scopes_line(data: dict[str, Any], granted: str | None, wanted: list[str]) -> str:
    who = f"team {data.get('team', '?')} ({data.get('team_id', '?')}), bot user " \
          f"{data.get('user', '?')}"
    if granted is None:
        return f"{who}; Slack did not say the token's scopes"
    missing = [s for s in wanted if s not in {g.strip() for g in granted.split(",")}]
    if missing:
        raise Failed(f"{who}: the token lacks {', '.join(missing)} of the scopes manifest.yml "
                     "asks for; add them to the app and reinstall it")
    return f"{who}; all {len(wanted)} scopes manifest.yml asks for"


async def app_token_check(settings: Settings) -> str:
    """Socket Mode: Slack gives the app-level token a WebSocket URL."""
    client = make_client(settings.slack.app_token, settings.slack.api_url, max_retries=0)
    try:
        await client.apps_connections_open(app_token=settings.slack.app_token)
    except SLACK_FAILURES as exc:
        raise Failed(f"apps.connections.open refused SLACK_APP_TOKEN: {slack_error(exc)}") \
            from exc
    return "Socket Mode: apps.connections.open accepted SLACK_APP_TOKEN"


async def signing_secret_check(settings: Settings) -> str:
    slack = settings.slack
    if slack.signing_secret:
        return "set: Slack's requests to /slack/events are verified"
    if slack.app_token:
        return "not needed: events arrive over Socket Mode (SLACK_APP_TOKEN)"
    raise Failed("SLACK_SIGNING_SECRET is not set: the bot refuses every request Slack sends "
                 "to /slack/events (401)")
