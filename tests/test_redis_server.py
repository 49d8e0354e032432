"""The Redis that `redsearch up` and the tests use: REDIS_URL when it answers, else embedded."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from arq import create_pool
from arq.connections import RedisSettings
from arq.jobs import Job
from arq.worker import Worker

from contract import redis_server
from contract.redis_server import EmbeddedRedis, ensure_redis, free_port, redis_answers
from research_core.errors import RedisUnavailable


@pytest.fixture
async def embedded() -> AsyncIterator[EmbeddedRedis]:
    server = EmbeddedRedis()
    await server.start()
    yield server
    await server.stop()


async def test_embedded_server_answers_and_stores(embedded: EmbeddedRedis) -> None:
    assert embedded.running
    assert await redis_answers(embedded.url)
    client = aioredis.Redis.from_url(embedded.url)
    try:
        assert await client.set("greeting", "hello")
        assert await client.get("greeting") == b"hello"
        info = await client.info("server")
        assert str(info["redis_version"]).startswith("6.2")
    finally:
        await client.aclose()


async def test_stop_frees_the_port_and_ends_the_process() -> None:
    server = EmbeddedRedis()
    url = await server.start()
    process, workdir = server.process, server.workdir
    assert process is not None and workdir is not None and workdir.is_dir()
    await server.stop()
    assert process.poll() is not None
    assert not server.running
    assert not workdir.exists()
    assert not await redis_answers(url, timeout_s=0.5)
    await server.stop()  # a second stop is harmless


async def test_context_manager_stops_the_server() -> None:
    async with EmbeddedRedis() as server:
        url = server.url
        assert await redis_answers(url)
    assert not await redis_answers(url, timeout_s=0.5)
    with pytest.raises(RedisUnavailable):
        _ = server.url


async def test_a_server_that_cannot_start_raises_a_typed_error(tmp_path: Path) -> None:
    broken = tmp_path / "redis-server"
    broken.write_text("#!/bin/sh\necho 'Fatal: cannot start' >&2\nexit 3\n")
    broken.chmod(0o755)
    server = EmbeddedRedis(broken, start_timeout_s=5)
    with pytest.raises(RedisUnavailable, match="exited with code 3: Fatal: cannot start"):
        await server.start()
    assert server.process is None and server.workdir is None


async def test_a_silent_server_times_out_and_is_killed(tmp_path: Path) -> None:
    stubborn = tmp_path / "redis-server"
    stubborn.write_text("#!/bin/sh\ntrap '' TERM\necho 'stuck'\n"
                        "while :; do sleep 0.05; done\n")
    stubborn.chmod(0o755)
    server = EmbeddedRedis(stubborn, start_timeout_s=0.5, stop_timeout_s=0.3)
    with pytest.raises(RedisUnavailable, match=r"did not answer within 0.5 s: stuck"):
        await server.start()
    assert server.process is None and server.workdir is None


async def test_a_port_taken_meanwhile_is_retried_on_another(
        embedded: EmbeddedRedis, monkeypatch: pytest.MonkeyPatch) -> None:
    assert embedded.port is not None
    ports = iter([embedded.port, redis_server.free_port()])
    monkeypatch.setattr(redis_server, "free_port", lambda: next(ports))
    async with EmbeddedRedis() as second:
        assert second.port != embedded.port
        assert await redis_answers(second.url)


async def test_redis_answers_is_false_where_nothing_listens() -> None:
    assert not await redis_answers(f"redis://127.0.0.1:{free_port()}/0", timeout_s=0.5)
    assert not await redis_answers("not a url", timeout_s=0.5)


async def test_ensure_redis_keeps_a_url_that_answers(embedded: EmbeddedRedis) -> None:
    url, started = await ensure_redis(embedded.url)
    assert url == embedded.url
    assert started is None


@pytest.mark.parametrize("given", ["dead-port", None])
async def test_ensure_redis_starts_an_embedded_server_otherwise(given: str | None) -> None:
    dead = f"redis://127.0.0.1:{free_port()}/0" if given else None
    url, started = await ensure_redis(dead)
    assert started is not None
    try:
        assert url == started.url != dead
        assert await redis_answers(url)
    finally:
        await started.stop()
    assert not await redis_answers(url, timeout_s=0.5)


async def double(ctx: dict[str, Any], value: int) -> int:
    return value * 2


async def test_arq_round_trip_with_json_and_deduplicated_job_ids(
        embedded: EmbeddedRedis) -> None:
    def serialize(data: dict[str, Any]) -> bytes:
        return json.dumps(data).encode()

    pool = await create_pool(RedisSettings.from_dsn(embedded.url),
                             job_serializer=serialize, job_deserializer=json.loads)
    try:
        job = await pool.enqueue_job("double", 21, _job_id="double:21")
        assert isinstance(job, Job)
        assert await pool.enqueue_job("double", 21, _job_id="double:21") is None
        raw = await pool.get(b"arq:job:double:21")
        assert raw is not None and json.loads(raw)["a"] == [21]  # JSON, not pickle
        # The worker shares our pool: Worker.close() calls redis' deprecated close().
        worker = Worker([double], redis_pool=pool, burst=True, handle_signals=False,
                        job_serializer=serialize, job_deserializer=json.loads, poll_delay=0.05)
        assert await worker.run_check() == 1
        assert await job.result(timeout=5) == 42
    finally:
        await pool.aclose()
