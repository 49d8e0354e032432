"""Settings from the environment: every numeric setting has a declared range and is finite,
every URL setting is a usable URL, and each refusal is one line naming the variable and
holding no secret. URLs that can carry credentials are shown redacted."""

from __future__ import annotations

import dataclasses
import math

import pytest

from research_core.errors import SettingsError
from research_core.redaction import redact_url
from research_core.settings import (
    BudgetSettings,
    EmbeddingSettings,
    EngineSettings,
    Settings,
    TierSettings,
)
from research_core.settings.mcp import McpSettings
from research_core.settings.service import SlackSettings, WebSettings, WorkerSettings
from research_core.settings.values import bounds_of, check_value
from tests.bad_input import SECRETS, assert_clean

SETTINGS_CLASSES = (TierSettings, EngineSettings, EmbeddingSettings, BudgetSettings, Settings,
                    SlackSettings, WorkerSettings, WebSettings, McpSettings)
MODEL = {"RED_PLANNER_MODEL": "m"}

BAD = [
    ({"RED_ENGINE_SEARCH_CONCURRENCY": "0"}, "RED_ENGINE_SEARCH_CONCURRENCY"),
    ({"RED_ENGINE_LOOKBACK_DAYS": "100000000"}, "RED_ENGINE_LOOKBACK_DAYS"),
    ({"RED_ENGINE_EVIDENCE_THRESHOLD": "2"}, "RED_ENGINE_EVIDENCE_THRESHOLD"),
    ({"RED_ENGINE_EVIDENCE_THRESHOLD": "nan"}, "RED_ENGINE_EVIDENCE_THRESHOLD"),
    ({"RED_ENGINE_EVIDENCE_THRESHOLD": "-inf"}, "RED_ENGINE_EVIDENCE_THRESHOLD"),
    ({"RED_ENGINE_QUERY_VARIANTS": "-3"}, "RED_ENGINE_QUERY_VARIANTS"),
    ({"RED_ENGINE_MAX_DEPTH": "-1"}, "RED_ENGINE_MAX_DEPTH"),
    ({"RED_ENGINE_HITS_PER_QUERY": "0"}, "RED_ENGINE_HITS_PER_QUERY"),
    ({"RED_ENGINE_WORKING_MEMORY_CAP": "0"}, "RED_ENGINE_WORKING_MEMORY_CAP"),
    ({"RED_ENGINE_DEDUP_SIMILARITY": "0"}, "RED_ENGINE_DEDUP_SIMILARITY"),
    ({"RED_ENGINE_RECENCY_ZERO_DAYS": "90"}, "RED_ENGINE_RECENCY_ZERO_DAYS"),
    ({"RED_ENGINE_CACHE_TTL_S": "1e9"}, "RED_ENGINE_CACHE_TTL_S"),
    ({"RED_PAGE_TIMEOUT_S": "nan"}, "RED_PAGE_TIMEOUT_S"),
    ({"RED_PAGE_TIMEOUT_S": "inf"}, "RED_PAGE_TIMEOUT_S"),
    ({"RED_PAGE_MAX_BYTES": "-5"}, "RED_PAGE_MAX_BYTES"),
    ({"RED_SEARCH_RETRIES": "1000"}, "RED_SEARCH_RETRIES"),
    ({"RED_BOT_PORT": "70000"}, "RED_BOT_PORT"),
    ({"RED_BOT_PORT": "-1"}, "RED_BOT_PORT"),
    ({"RED_WORKER_HEARTBEAT_S": "nan"}, "RED_WORKER_HEARTBEAT_S"),
    ({"RED_WORKER_JOBS": "0"}, "RED_WORKER_JOBS"),
    ({"RED_WORKER_WATCH_JOBS": "0"}, "RED_WORKER_WATCH_JOBS"),
    ({"RED_WORKER_WATCH_JOBS": "two"}, "RED_WORKER_WATCH_JOBS"),
    ({"RED_WORKER_WATCH_TICK_S": "0"}, "RED_WORKER_WATCH_TICK_S"),
    ({"RED_WORKER_WATCH_TICK_S": "nan"}, "RED_WORKER_WATCH_TICK_S"),
    ({"RED_WORKER_JOB_TIMEOUT_S": "99999999999"}, "RED_WORKER_JOB_TIMEOUT_S"),
    ({"RED_SLACK_PROGRESS_INTERVAL_S": "-0.5"}, "RED_SLACK_PROGRESS_INTERVAL_S"),
    ({"RED_PLANNER_TIMEOUT_S": "inf"}, "RED_PLANNER_TIMEOUT_S"),
    ({"RED_REPORTER_PRICE_IN_PER_MTOK": "-1"}, "RED_REPORTER_PRICE_IN_PER_MTOK"),
    ({"RED_EXECUTOR_MAX_RETRIES": "-2"}, "RED_EXECUTOR_MAX_RETRIES"),
    ({"RED_BUDGET_REMINDER_FRACTION": "nan"}, "RED_BUDGET_REMINDER_FRACTION"),
    ({"RED_BUDGET_ACTIVE_TIME_S": "1e12"}, "RED_BUDGET_ACTIVE_TIME_S"),
    ({"RED_GGUF_CONTEXT": "0"}, "RED_GGUF_CONTEXT"),
    ({"RED_GGUF_THREADS": "-4"}, "RED_GGUF_THREADS"),
    ({"REDIS_URL": "localhost:6379"}, "REDIS_URL"),
    ({"REDIS_URL": "redis://:hunter2@127.0.0.1:70000/0"}, "REDIS_URL"),
    ({"REDIS_URL": "http://127.0.0.1:6379"}, "REDIS_URL"),
    ({"RED_PLANNER_BASE_URL": "http://127.0.0.1:99999/v1", **MODEL}, "RED_PLANNER_BASE_URL"),
    ({"RED_PLANNER_BASE_URL": "http://sk-bad-input-key@127.0.0.1:-1/v1", **MODEL},
     "RED_PLANNER_BASE_URL"),
    ({"RED_PLANNER_BASE_URL": "127.0.0.1:8000", **MODEL}, "RED_PLANNER_BASE_URL"),
    ({"RED_EMBED_BASE_URL": "http://[::1/v1", "RED_EMBED_MODEL": "e"}, "RED_EMBED_BASE_URL"),
    ({"SLACK_API_URL": "ftp://slack.example/api?token=tok-in-query"}, "SLACK_API_URL"),
    ({"RED_SEARXNG_URL": "http:///search", "RED_SEARCH_BACKENDS": "searxng"},
     "RED_SEARXNG_URL"),
    ({"RED_TAVILY_URL": "https://api.tavily.example:0/"}, "RED_TAVILY_URL"),
    ({"RED_MCP_SERVERS": '[{"name": "wiki", "command": ["w"]'}, "RED_MCP_SERVERS"),
    ({"RED_MCP_SERVERS": '{"name": "wiki"}'}, "RED_MCP_SERVERS"),
    ({"RED_MCP_SERVERS": '[{"name": "Wiki Pages", "command": ["w"]}]'}, "RED_MCP_SERVERS"),
    ({"RED_MCP_SERVERS": '[{"name": "wiki"}]'}, "RED_MCP_SERVERS"),
    ({"RED_MCP_SERVERS": '[{"name": "wiki", "command": []}]'}, "RED_MCP_SERVERS"),
    ({"RED_MCP_SERVERS": '[{"name": "wiki", "command": ["w"], "url": "http://h/mcp"}]'},
     "RED_MCP_SERVERS"),
    ({"RED_MCP_SERVERS": '[{"name": "wiki", "comand": ["w"]}]'}, "RED_MCP_SERVERS"),
    ({"RED_MCP_SERVERS": '[{"name": "wiki", "url": "http://sk-bad-input-key@h:99999/mcp"}]'},
     "RED_MCP_SERVERS"),
    ({"RED_MCP_SERVERS": '[{"name": "wiki", "url": "ftp://h/mcp"}]'}, "RED_MCP_SERVERS"),
    ({"RED_MCP_SERVERS": '[{"name": "a", "command": ["w"]}, {"name": "a", "url": "http://h"}]'},
     "RED_MCP_SERVERS"),
    ({"RED_MCP_SERVERS": '[{"name": "a", "command": ["w"], "env": {"K": 1}}]'},
     "RED_MCP_SERVERS"),
    ({"RED_MCP_SERVERS": '[{"name": "a", "command": ["w"]}]', "RED_SEARCH_BACKENDS": "corpus"},
     "RED_MCP_SERVERS"),
    ({"RED_SEARCH_BACKENDS": "corpus,mcp"}, "RED_SEARCH_BACKENDS"),
    ({"RED_MCP_TIMEOUT_S": "0"}, "RED_MCP_TIMEOUT_S"),
    ({"RED_MCP_MAX_BYTES": "100"}, "RED_MCP_MAX_BYTES"),
]


@pytest.mark.parametrize(("env", "key"), BAD, ids=[f"{k}={next(iter(e.values()))}"
                                                   for e, k in BAD])
def test_a_bad_setting_is_one_line_naming_it(env: dict[str, str], key: str) -> None:
    with pytest.raises(SettingsError) as raised:
        Settings.from_env(env)
    message = str(raised.value)
    assert message.startswith(key) or f" {key}" in message, message
    assert "\n" not in message
    assert_clean(message)


@pytest.mark.parametrize("cls", SETTINGS_CLASSES, ids=lambda c: c.__name__)
def test_every_numeric_setting_declares_a_range_its_default_is_in(cls: type) -> None:
    for f in dataclasses.fields(cls):
        hint = str(f.type)
        if not any(word in hint for word in ("int", "float")) or "tuple" in hint:
            continue
        assert bounds_of(f) is not None, f"{cls.__name__}.{f.name} has no declared range"
        default = None if f.default is dataclasses.MISSING else f.default
        check_value(f"{cls.__name__}.{f.name}", default, bounds_of(f))


def test_values_at_the_edges_of_their_ranges_are_accepted() -> None:
    settings = Settings.from_env({
        "RED_ENGINE_SEARCH_CONCURRENCY": "1", "RED_ENGINE_EVIDENCE_THRESHOLD": "1",
        "RED_ENGINE_MAX_DEPTH": "0", "RED_ENGINE_LOOKBACK_DAYS": "36500",
        "RED_BOT_PORT": "65535", "RED_PAGE_TIMEOUT_S": "0.5",
        "REDIS_URL": "rediss://:pw@redis.example:6380/2", "RED_BUDGET_REVISIONS_PER_RUN": "0",
    })
    assert settings.engine.search_concurrency == 1
    assert settings.engine.lookback_days == 36_500
    assert settings.slack.bot_port == 65_535
    assert math.isclose(settings.web.page_timeout_s, 0.5)
    assert settings.budget.revisions_per_run == 0


@pytest.mark.parametrize(("key", "least"), [
    ("RED_PAGE_MAX_BYTES", 4096), ("RED_GGUF_CONTEXT", 1024),
    ("RED_ENGINE_JSON_MAX_TOKENS", 64), ("RED_ENGINE_REPORT_MAX_TOKENS", 64),
    ("RED_ENGINE_SNIPPET_CHARS", 50), ("RED_ENGINE_MAX_QUESTION_CHARS", 100),
])
def test_caps_have_minimums_that_can_work(key: str, least: int) -> None:
    """A cap of one byte (or token, or character) is not refused for being negative, but it
    would cut every page, answer or question to nothing: the least that can work is the
    minimum, and it is itself accepted."""
    for too_small in ("1", str(least - 1)):
        with pytest.raises(SettingsError) as raised:
            Settings.from_env({key: too_small})
        assert str(raised.value) == f"{key}={int(too_small)} must be at least {least}"
    Settings.from_env({key: str(least)})


def test_web_settings_built_in_code_are_held_to_the_same_ranges() -> None:
    with pytest.raises(SettingsError, match="RED_PAGE_MAX_BYTES=1 must be at least 4096"):
        WebSettings(page_max_bytes=1)
    with pytest.raises(SettingsError, match="RED_SEARCH_MAX_RETRY_WAIT_S"):
        WebSettings(max_retry_wait_s=-1.0)


def test_budgets_built_in_code_are_held_to_the_same_ranges() -> None:
    """The resource owner trusts its budget wherever it came from."""
    with pytest.raises(SettingsError, match="RED_BUDGET_REMINDER_FRACTION"):
        BudgetSettings(reminder_fraction=math.nan)
    with pytest.raises(SettingsError, match="RED_BUDGET_STEPS"):
        BudgetSettings(steps=0)


@pytest.mark.parametrize(("url", "shown"), [
    ("redis://:hunter2@127.0.0.1:6379/0", "redis://***@127.0.0.1:6379/0"),
    ("redis://127.0.0.1:6379/0?password=hunter2", "redis://127.0.0.1:6379/0?password=***"),
    ("redis://user:p@ss/w#rd@cache.example:6379/1", "redis://***@cache.example:6379/1"),
    ("https://slack.example/api/?token=tok-in-query&x=1", "https://slack.example/api/?token=***&x=***"),
    ("postgresql+asyncpg://app:hunter2@db/red", "postgresql+asyncpg://***@db/red"),
    ("hunter2@localhost:6379", "***@localhost:6379"),
    ("https://slack.com/api/", "https://slack.com/api/"),
    ("redis://127.0.0.1:6379/0#hunter2", "redis://127.0.0.1:6379/0"),
    ("", ""),
])
def test_urls_are_shown_without_their_secrets(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert not any(secret in redact_url(url) for secret in SECRETS)


def test_mcp_servers_are_read_with_their_defaults_and_secrets_hidden() -> None:
    settings = Settings.from_env({"RED_MCP_SERVERS": (
        '[{"name": "wiki", "command": ["wiki-mcp", "--ro"], "env": {"WIKI_TOKEN": "hunter2"}},'
        ' {"name": "tickets", "url": "https://mcp.example/mcp", "tool": "find",'
        ' "headers": {"Authorization": "Bearer sk-bad-input-key"}, "source_type": "news"}]')})
    wiki, tickets = settings.mcp.servers
    assert settings.web.backends == ("mcp",)  # the servers, not the sample corpus
    assert (wiki.command, wiki.transport, wiki.tool, wiki.source_type) == (
        ("wiki-mcp", "--ro"), "stdio", "", "internal")
    assert (tickets.url, tickets.transport, tickets.tool) == ("https://mcp.example/mcp",
                                                              "http", "find")
    assert_clean(repr(settings))
    both = Settings.from_env({"RED_MCP_SERVERS": '[{"name": "w", "command": ["w"]}]',
                              "RED_SEARCH_BACKENDS": "corpus,mcp"})
    assert both.web.backends == ("corpus", "mcp")
