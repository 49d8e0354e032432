"""Redis high availability: the bot and an ARQ worker on a `redis+sentinel://` URL (a primary,
a replica, three sentinels, all local), the primary killed mid-run; the sentinels promote the
replica and the run finishes with nothing lost or posted twice."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from contract.keys import ACTIVE_KEY
from contract.redis_server import awaited, redis_answers
from contract.redis_target import redis_settings, sentinel_settings
from playground.fake_slack import BOT_USER_ID, Change
from research_core.errors import SettingsError
from research_core.settings import Settings
from tests.conftest import RecordingBackend
from tests.fakes.openai_server import Reply
from tests.scripted import Script
from tests.sentinel_cluster import SentinelCluster
from tests.slack_driver import ALICE
from tests.slack_stack import StartStack, is_part, wait_for

QUESTION = "How did heat pump sales, prices and exports move in 2026?"
THREE = [("What were heat pump sales figures?", 0.9), ("What were heat pump prices?", 0.8),
         ("What happened to heat pump exports?", 0.7)]


class Slow(Script):
    """The scripted tiers with a model's latency, so that the run outlasts the failover."""

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        answer = super().__call__(body)
        return dataclasses.replace(answer, delay_s=0.4) if isinstance(answer, Reply) \
            else Reply(content=answer, delay_s=0.4)


def test_a_sentinel_url_names_the_sentinels_the_service_and_the_database() -> None:
    settings = sentinel_settings("redis+sentinel://:pw@10.0.0.1:26379,10.0.0.2:26380/main/3")
    assert settings.sentinel and settings.sentinel_master == "main"
    assert settings.host == [("10.0.0.1", 26379), ("10.0.0.2", 26380)]
    assert (settings.database, settings.password) == (3, "pw")
    assert redis_settings("redis://127.0.0.1:6379/2").retry is not None  # plain: retries too
    for bad in ("redis+sentinel://127.0.0.1/main", "redis+sentinel://127.0.0.1:26379",
                "redis+sentinel://127.0.0.1:26379/main/x"):
        with pytest.raises(SettingsError):
            sentinel_settings(bad)


def test_the_settings_take_a_sentinel_url() -> None:
    url = "redis+sentinel://127.0.0.1:26379,127.0.0.1:26380/mymaster/0"
    assert Settings.from_env({"REDIS_URL": url}).worker.redis_url == url
    with pytest.raises(SettingsError):
        Settings.from_env({"REDIS_URL": "sentinel://127.0.0.1:26379/mymaster"})


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[SentinelCluster]:
    """Set up before the stack, so that it is stopped after the stack's worker and bot."""
    async with SentinelCluster(tmp_path / "ha") as started:
        yield started


@pytest.mark.timeout(120)
async def test_a_run_finishes_through_a_primary_failover(
        cluster: SentinelCluster, start_stack: StartStack, backend: RecordingBackend) -> None:
    assert await redis_answers(cluster.url)
    stack = await start_stack(Slow(subquestions=THREE), backend, redis=cluster.url)
    first_part = asyncio.Event()

    def on_change(change: Change) -> None:
        if change.kind == "posted" and any(
                c.get("text", "").startswith("Sources:") for b in change.data["blocks"]
                if b.get("type") == "context" for c in b.get("elements", [])):
            first_part.set()
    stack.fake.add_listener(on_change)

    _, mention = await stack.driver.mention(f"<@{BOT_USER_ID}> {QUESTION}")
    picker = copy.deepcopy(stack.thread(mention)[0])
    await stack.driver.click(ALICE, "depth_standard", picker)
    await asyncio.wait_for(first_part.wait(), 60)
    cluster.kill_primary()
    assert not stack.finals(mention), "the run ended before the failover"
    await cluster.wait_failover()

    await wait_for(lambda: bool(stack.finals(mention)), 80, "the run's end after failover")
    await stack.settled(20)
    assert await cluster.primary_port_now() == cluster.replica_port
    assert len(stack.finals(mention)) == 1
    texts = stack.posted_texts()
    assert len(texts) == len(set(texts)), "a message was posted twice"
    assert [m for m in stack.thread(mention) if is_part(m)], "no answer part"
    assert not await awaited(stack.pool.hlen(ACTIVE_KEY))
