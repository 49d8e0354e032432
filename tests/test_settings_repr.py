"""No settings object shows a secret (issue 45, item 4): settings built with a secret in every
field that can carry one — tokens, keys, passwords and secret query values in every URL, an
MCP server's environment, headers, command line and fixed arguments, the metrics token — show
none in their repr or str, at any depth, and none reaches the log."""

from __future__ import annotations

import dataclasses
import io
import json
import logging

import pytest

from redsearch.logs import log_handler
from research_core.settings import Settings
from research_core.settings.service import sentinel_target

SECRETS = {
    "SLACK_BOT_TOKEN": "xoxb-sek-bot-token-0001",
    "SLACK_SIGNING_SECRET": "sek-signing-0002",
    "SLACK_APP_TOKEN": "xapp-sek-app-0003",
    "SLACK_CLIENT_SECRET": "sek-client-0004",
    "RED_PLANNER_API_KEY": "sk-sek-planner-0005",
    "RED_EXECUTOR_API_KEY": "sk-sek-executor-0006",
    "RED_REPORTER_API_KEY": "sk-sek-reporter-0007",
    "RED_EMBED_API_KEY": "sk-sek-embed-0008",
    "BRAVE_API_KEY": "sek-brave-0009",
    "TAVILY_API_KEY": "tvly-sek-tavily-0010",
    "RED_METRICS_TOKEN": "sek-metrics-0011",
}
IN_URLS = ["sek-redis-pw-0012", "sek-db-pw-0013", "sek-searx-pw-0014", "sek-brave-q-0015",
           "sek-tavily-q-0016", "sek-slack-user-0017", "sek-slack-q-0018",
           "sek-planner-pw-0019", "sek-embed-pw-0020", "sek-mcp-url-pw-0021",
           "sek-mcp-url-q-0022"]
IN_MCP = ["sek-mcp-env-0023", "sek-mcp-header-0024", "sek-mcp-opt-0025", "sek-mcp-flag-0026",
          "sek-mcp-argv-url-0027", "sek-mcp-arg-0028"]
EVERY_SECRET = [*SECRETS.values(), *IN_URLS, *IN_MCP]

SERVERS = [
    {"name": "wiki", "command": ["wiki-mcp", f"--token={IN_MCP[2]}", "--password", IN_MCP[3],
                                 f"https://reader:{IN_MCP[4]}@wiki.example/api"],
     "arguments": {"api_key": IN_MCP[5], "space": "BAKE"}, "env": {"WIKI_AUTH": IN_MCP[0]}},
    {"name": "tickets", "url": f"https://bot:{IN_URLS[9]}@mcp.example/mcp?token={IN_URLS[10]}",
     "headers": {"Authorization": f"Bearer {IN_MCP[1]}"}},
]
ENV = {
    **SECRETS,
    "SLACK_CLIENT_ID": "1234.5678",
    "SLACK_API_URL": f"https://{IN_URLS[5]}@slack.example/api/?token={IN_URLS[6]}",
    "REDIS_URL": f"redis://:{IN_URLS[0]}@127.0.0.1:6379/0",
    "DATABASE_URL": f"postgresql+asyncpg://red:{IN_URLS[1]}@db.example/red",
    "RED_SEARCH_BACKENDS": "searxng,brave,tavily,mcp",
    "RED_SEARXNG_URL": f"https://red:{IN_URLS[2]}@searx.example/search",
    "RED_BRAVE_URL": f"https://brave.example/search?api_key={IN_URLS[3]}",
    "RED_TAVILY_URL": f"https://tavily.example/search?key={IN_URLS[4]}",
    "RED_PLANNER_BASE_URL": f"https://u:{IN_URLS[7]}@llm.example/v1",
    "RED_PLANNER_MODEL": "planner-model",
    "RED_EMBED_BASE_URL": f"https://u:{IN_URLS[8]}@embed.example/v1",
    "RED_EMBED_MODEL": "embed-model",
    "RED_MCP_SERVERS": json.dumps(SERVERS),
}


def assert_no_secret(text: str) -> None:
    leaked = [s for s in EVERY_SECRET if s in text]
    assert not leaked, f"{leaked} in {text}"


@pytest.fixture(scope="module")
def settings() -> Settings:
    return Settings.from_env(ENV)


def everything_in(settings: object) -> list[object]:
    """The settings object and every settings object inside it."""
    found = [settings]
    for f in dataclasses.fields(settings):  # type: ignore[arg-type]
        value = getattr(settings, f.name)
        values = value.values() if isinstance(value, dict) else \
            value if isinstance(value, tuple) else [value]
        found += [v for item in values if dataclasses.is_dataclass(item)
                  for v in everything_in(item)]
    return found


def test_the_settings_hold_every_secret_planted(settings: Settings) -> None:
    """The test is worth something: every secret is in there, and named as one (the log masks
    what `secret_values` names)."""
    assert set(EVERY_SECRET) <= set(settings.secret_values())
    assert str(settings.slack.bot_token) == SECRETS["SLACK_BOT_TOKEN"]
    assert settings.mcp.servers[0].arguments["api_key"] == IN_MCP[5]


def test_no_settings_object_shows_a_secret(settings: Settings) -> None:
    objects = everything_in(settings)
    kinds = {type(o).__name__ for o in objects}
    assert {"Settings", "TierSettings", "EngineSettings", "EmbeddingSettings", "BudgetSettings",
            "SlackSettings", "WorkerSettings", "WebSettings", "McpSettings", "McpServer"} <= kinds
    for shown in objects:
        assert_no_secret(repr(shown))
        assert_no_secret(str(shown))
        assert_no_secret(f"{shown!r} {shown}")
    text = repr(settings)
    assert "redis://***@127.0.0.1:6379/0" in text  # what is not secret is still shown
    assert "postgresql+asyncpg://***@db.example/red" in text
    assert "'--token=***', '--password', '***'" in text
    assert "'space': 'BAKE'" in text and "client_id='1234.5678'" in text


def test_a_sentinel_target_shows_no_password() -> None:
    target = sentinel_target("redis+sentinel://:sek-sentinel-0029@s1:26379,s2:26379/red/0")
    assert target.password == "sek-sentinel-0029"
    assert "sek-sentinel-0029" not in repr(target) and "sek-sentinel-0029" not in str(target)
    settings = Settings.from_env({"REDIS_URL": "redis+sentinel://:sek-sentinel-0029@s1:26379/red"})
    assert "sek-sentinel-0029" not in repr(settings)
    assert "sek-sentinel-0029" in settings.secret_values()


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_the_log_shows_no_secret(settings: Settings, fmt: str) -> None:
    """The settings logged whole, and every secret logged bare (as a library might): masked."""
    out = io.StringIO()
    handler = log_handler("cli", fmt, settings.secret_values(), out)
    logger = logging.getLogger("tests.settings_repr")
    logger.addHandler(handler)
    logger.propagate, logger.level = False, logging.INFO
    try:
        logger.info("settings: %s", settings)
        logger.info("settings: %r", settings.mcp)
        for secret in EVERY_SECRET:
            logger.info("connecting with %s", secret)
        try:
            raise RuntimeError(f"refused: {ENV['DATABASE_URL']}")
        except RuntimeError:
            logger.exception("the database failed")
    finally:
        logger.removeHandler(handler)
    written = out.getvalue()
    assert written.count("\n") >= len(EVERY_SECRET) + 3
    assert_no_secret(written)
