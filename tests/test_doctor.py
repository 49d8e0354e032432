"""`redsearch doctor`: one line per dependency, in the order a request needs them, against real
parts: Redis, SQLite (and PostgreSQL), the fake OpenAI server, the local corpus and the fake
Slack (auth.test with its X-OAuth-Scopes header). A healthy setup passes (exit 0); a dead
Redis, a wrong database URL, a bad token each give exactly one failing line (exit 1); no
line shows a secret; a dependency that hangs costs its time limit, not the command."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from contract.redis_server import free_port
from playground.fake_slack import GRANTED_SCOPES, FakeSlack
from redsearch.doctor import doctor
from research_core.store.sql import SqlStore
from tests.conftest import SLACK_TOKEN, cli_env
from tests.engine_run import Serve
from tests.fakes.openai_server import Reply
from tests.fakes.web_server import Doc, Failure, FakeWeb, article
from tests.scripted import Script
from tests.sentinel_cluster import SentinelCluster
from tests.test_store_backends import PG_URL, _postgres_answers

ORDER = ["settings", "redis", "database", "model planner", "model executor",
         "model reporter", "embeddings", "search corpus", "slack token", "signing secret"]
SIGNING = "doctor-signing-secret-0123"
API_KEY = "sk-doctor-key-0123456789"


@pytest.fixture
async def healthy(serve: Serve, fake: FakeSlack, redis_url: str, corpus_dir: Path,
                  tmp_path: Path) -> dict[str, str]:
    """The environment of a working deployment: every dependency there and answering."""
    server = await serve(Script())
    db_url = f"sqlite+aiosqlite:///{tmp_path / 'runs.db'}"
    await (await SqlStore.open(db_url)).close()  # the tables a worker creates
    env = {**cli_env(tmp_path / "data", server.base_url), "REDIS_URL": redis_url,
           "DATABASE_URL": db_url, "RED_CORPUS_DIR": str(corpus_dir),
           "SLACK_BOT_TOKEN": SLACK_TOKEN, "SLACK_SIGNING_SECRET": SIGNING,
           "SLACK_API_URL": fake.base_url}
    env = {k: v for k, v in env.items() if not k.startswith("SLACK_") or k in (
        "SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_API_URL")}
    for tier in ("PLANNER", "EXECUTOR", "REPORTER"):
        env[f"RED_{tier}_API_KEY"] = API_KEY
    return env


async def checked(env: dict[str, str], limit_s: float = 10) -> tuple[int, list[str]]:
    said: list[str] = []
    status = await doctor(env, limit_s, said.append)
    return status, said


def results(said: list[str]) -> list[tuple[str, str]]:
    """(ok|FAIL, check name) of each check line."""
    found = []
    for line in said[1:-1]:
        verdict, rest = line[:5].strip(), line[5:]
        found.append((verdict, rest[:18].strip()))
    return found


def failing(said: list[str]) -> list[str]:
    return [name for verdict, name in results(said) if verdict == "FAIL"]


async def test_a_healthy_deployment_passes_every_check_in_order(
        healthy: dict[str, str]) -> None:
    status, said = await checked(healthy)
    assert status == 0, "\n".join(said)
    assert results(said) == [("ok", name) for name in ORDER]
    assert said[-1] == f"all {len(ORDER)} checks passed"
    text = "\n".join(said)
    assert "Redis 7" in text or "Redis 6" in text
    assert "SQLite 3" in text and "schema current (" in text
    assert "answered a one-token call" in text
    assert "5 documents from" in text
    assert f"all {len(GRANTED_SCOPES)} scopes manifest.yml asks for" in text
    for secret in (SLACK_TOKEN, SIGNING, API_KEY):
        assert secret not in text


async def test_a_dead_redis_is_the_one_failing_line(healthy: dict[str, str]) -> None:
    dead = f"redis://:redis-pass-123@127.0.0.1:{free_port()}/0"
    status, said = await checked({**healthy, "REDIS_URL": dead})
    assert status == 1
    assert failing(said) == ["redis"]
    [line] = [s for s in said if s.startswith("FAIL")]
    assert "REDIS_URL=redis://***@127.0.0.1" in line
    assert "redis-pass-123" not in "\n".join(said)
    assert said[-1] == f"1 of {len(ORDER)} checks failed: redis"


async def test_with_sentinel_the_primary_the_sentinels_name_is_shown(
        healthy: dict[str, str], tmp_path: Path) -> None:
    async with SentinelCluster(tmp_path / "ha") as cluster:
        status, said = await checked({**healthy, "REDIS_URL": cluster.url})
        assert status == 0, "\n".join(said)
        [line] = [s for s in said if s[5:].startswith("redis")]
        assert f"the sentinels name 127.0.0.1:{cluster.primary_port} primary of 'mymaster'" \
            in line and ", Redis " in line
        cluster.kill_primary()  # the sentinels promote the replica: doctor follows them
        await cluster.wait_failover()
        status, said = await checked({**healthy, "REDIS_URL": cluster.url})
        [line] = [s for s in said if s[5:].startswith("redis")]
        assert status == 0, "\n".join(said)
        assert f"name 127.0.0.1:{cluster.replica_port} primary" in line


async def test_a_wrong_database_url_is_the_one_failing_line(healthy: dict[str, str]) -> None:
    wrong = f"postgresql+asyncpg://red:db-pass-123@127.0.0.1:{free_port()}/runs"
    status, said = await checked({**healthy, "DATABASE_URL": wrong})
    assert status == 1
    assert failing(said) == ["database"]
    [line] = [s for s in said if s.startswith("FAIL")]
    assert "DATABASE_URL=postgresql+asyncpg://***@127.0.0.1" in line
    assert "db-pass-123" not in "\n".join(said)


async def test_a_database_made_by_an_older_version_is_out_of_date(
        healthy: dict[str, str], tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    with sqlite3.connect(old) as conn:
        conn.execute("CREATE TABLE runs (run_id VARCHAR(32) PRIMARY KEY, question TEXT)")
    status, said = await checked({**healthy, "DATABASE_URL": f"sqlite+aiosqlite:///{old}"})
    assert status == 1 and failing(said) == ["database"]
    [line] = [s for s in said if s.startswith("FAIL")]
    assert "schema out of date (table runs lacks as_of, created_at" in line


@pytest.mark.skipif(not _postgres_answers(), reason="no PostgreSQL answers on 127.0.0.1:5432")
async def test_postgresql_is_reached_and_its_schema_read(healthy: dict[str, str]) -> None:
    await (await SqlStore.open(PG_URL)).close()
    status, said = await checked({**healthy, "DATABASE_URL": PG_URL})
    assert status == 0, "\n".join(said)
    [line] = [s for s in said if s[5:].startswith("database")]
    assert "PostgreSQL " in line and "schema current" in line


async def test_each_search_backend_is_asked_and_a_failing_one_named(
        healthy: dict[str, str]) -> None:
    web = FakeWeb(docs=[Doc("sales", "Heat pump sales", "Sales rose.", "2026-10-10",
                            article("Heat pump sales", "2026-10-10", ["Sales rose."]))],
                  failures={"brave": [Failure(503)]})
    await web.start()
    try:
        status, said = await checked({
            **healthy, "RED_SEARCH_BACKENDS": "searxng,brave,corpus",
            "RED_SEARXNG_URL": web.url("/searxng"), "BRAVE_API_KEY": "brave-doctor-key",
            "RED_BRAVE_URL": web.url("/brave/res/v1/web/search")})
    finally:
        await web.stop()
    assert status == 1
    names = [name for _, name in results(said)]
    assert names[names.index("embeddings") + 1:][:3] == ["search searxng", "search brave",
                                                        "search corpus"]
    assert failing(said) == ["search brave"]
    [line] = [s for s in said if s.startswith("FAIL")]
    assert "brave failed (503)" in line and "/brave/res/v1/web/search" in line
    assert web.of("searxng") and "brave-doctor-key" not in "\n".join(said)


async def test_a_bad_token_is_the_one_failing_line(healthy: dict[str, str]) -> None:
    status, said = await checked({**healthy, "SLACK_BOT_TOKEN": "xoxb-not-the-token"})
    assert status == 1
    assert failing(said) == ["slack token"]
    [line] = [s for s in said if s.startswith("FAIL")]
    assert "auth.test refused SLACK_BOT_TOKEN: invalid_auth" in line
    assert "xoxb-not-the-token" not in "\n".join(said)


async def test_a_token_missing_a_scope_of_the_manifest_fails(
        healthy: dict[str, str], fake: FakeSlack) -> None:
    fake.scopes = tuple(s for s in GRANTED_SCOPES if s not in ("commands", "im:history"))
    status, said = await checked(healthy)
    assert status == 1 and failing(said) == ["slack token"]
    [line] = [s for s in said if s.startswith("FAIL")]
    assert "lacks im:history, commands of the scopes manifest.yml asks for" in line


async def test_no_signing_secret_fails_unless_socket_mode_is_used(
        healthy: dict[str, str]) -> None:
    unsigned = {k: v for k, v in healthy.items() if k != "SLACK_SIGNING_SECRET"}
    status, said = await checked(unsigned)
    assert status == 1 and failing(said) == ["signing secret"]


async def test_a_model_that_hangs_costs_its_limit_not_the_command(
        serve: Serve, healthy: dict[str, str]) -> None:
    hanging = await serve(lambda body: Reply(content="OK", delay_s=30))
    env = {**healthy, "RED_REPORTER_BASE_URL": hanging.base_url}
    started = time.monotonic()
    status, said = await checked(env, limit_s=1)
    assert time.monotonic() - started < 20
    assert status == 1 and failing(said) == ["model reporter"]
    [line] = [s for s in said if s.startswith("FAIL")]
    assert "openai model=reporter-script host=127.0.0.1:" in line
    assert line.endswith("no answer within 1 s")


async def test_invalid_settings_stop_at_the_first_line(healthy: dict[str, str]) -> None:
    status, said = await checked({**healthy, "RED_BUDGET_STEPS": "many"})
    assert status == 1
    assert said[1].startswith("FAIL settings") and "RED_BUDGET_STEPS" in said[1]
    assert len(said) == 3


async def test_the_command_exits_0_when_healthy_and_1_with_a_dead_redis(
        healthy: dict[str, str]) -> None:
    for env, expected in ((healthy, 0), ({**healthy, "REDIS_URL": "redis://127.0.0.1:1/0"}, 1)):
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "redsearch.cli", "doctor", "--timeout", "10", env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, _ = await asyncio.wait_for(proc.communicate(), 90)
        assert proc.returncode == expected, out.decode()
        lines = out.decode().splitlines()
        assert [ln.startswith("FAIL") for ln in lines].count(True) == expected


async def test_each_mcp_server_is_started_and_a_dead_one_named(healthy: dict[str, str]) -> None:
    """Every server of RED_MCP_SERVERS gets its own line; one whose command cannot start is
    the failing one, and the working one lists the tool it is searched with."""
    servers = json.dumps([{"name": "wiki", "command": [sys.executable, "-m",
                                                       "tests.mcp_wiki_server"]},
                          {"name": "gone", "command": ["/nonexistent/mcp-server"]}])
    status, said = await checked({**healthy, "RED_SEARCH_BACKENDS": "corpus,mcp",
                                  "RED_MCP_SERVERS": servers}, limit_s=30)
    assert status == 1
    names = [name for _, name in results(said)]
    assert "search mcp wiki" in names and "search mcp gone" in names
    assert failing(said) == ["search mcp gone"]
