"""`redsearch research` with RED_SEARCH_BACKENDS: the real CLI in a subprocess, searching fake
SearxNG and Brave services, with scripted tiers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.conftest import cli_env
from tests.engine_run import Serve
from tests.fakes.web_server import Doc, Failure, FakeWeb, article
from tests.scripted import Script
from tests.test_replay_cli import redsearch

BRAVE_KEY = "brave-cli-secret"
QUESTION = "How did heat pump sales move in 2026?"


@pytest.fixture
async def fake() -> AsyncIterator[FakeWeb]:
    server = FakeWeb(docs=[Doc(
        "sales", "Heat pump sales September 2026",
        "Heat pump sales reached 214,000 units in September 2026, up 12.4% on the year.",
        "2026-10-10", article("Heat pump sales September 2026", "2026-10-10",
                              ["Heat pump sales reached 214,000 units."]))])
    await server.start()
    yield server
    await server.stop()


async def test_research_searches_the_configured_web_backends_in_order(
        serve: Serve, fake: FakeWeb, tmp_path: Path) -> None:
    fake.failures["searxng"] = [Failure(429, retry_after="0")]
    server = await serve(Script())
    env = cli_env(tmp_path / "data", server.base_url)
    env.update({"DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}",
                "RED_SEARCH_BACKENDS": "searxng,brave", "RED_SEARXNG_URL": fake.url("/searxng"),
                "RED_BRAVE_URL": fake.url("/brave/res/v1/web/search"),
                "BRAVE_API_KEY": BRAVE_KEY, "RED_SEARCH_RETRIES": "0",
                "RED_BUDGET_STEPS": "3"})
    out_json = tmp_path / "run.json"
    done = await redsearch(env, "research", QUESTION, "--as-of", "2026-10-31",
                           "--json", str(out_json))
    assert done.code == 0, done.stderr
    assert "search: searxng>brave" in done.stderr and "corpus:" not in done.stderr
    assert "searxng failed (429); using brave" in done.stderr
    assert fake.of("searxng") and fake.of("brave")
    assert BRAVE_KEY not in done.stderr + done.stdout
    # the CLI reader keeps the default policy: the fake pages on 127.0.0.1 are never read
    assert "loopback address refused" in done.stderr
    result = json.loads(out_json.read_text("utf-8"))
    assert any(s["url"] == fake.url("/pages/sales") for s in result["sources"])
