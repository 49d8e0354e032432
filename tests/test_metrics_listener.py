"""The bot's /metrics off its public port (issue 45, item 2): with a metrics port (`--metrics-port`,
RED_BOT_METRICS_PORT) /metrics and /healthz are served on a listener of their own and the Slack
port answers 404 for /metrics; `--host` places the bot (and `up`); RED_METRICS_TOKEN makes every
/metrics (the bot's, a worker's) ask for a bearer token; and however often it is scraped, the
bot reads the queue's figures from Redis at most once a second."""

from __future__ import annotations

import asyncio
import dataclasses
import signal
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import aiohttp
import pytest
from redis.asyncio import Redis

from bot.metrics import METRICS_ENDPOINT, QUEUE_READ_EVERY_S
from bot.server import start_bot
from contract.keys import ACTIVE_KEY
from contract.redis_server import awaited, free_port
from playground.fake_slack import FakeSlack
from redsearch.cli import build_parser
from research_core.settings import Secret, Settings, SlackSettings, WorkerSettings
from tests.conftest import SLACK_TOKEN, TEST_REDIS_URL, cli_env
from tests.metrics_scrape import Scrape
from tests.slack_driver import SECRET
from workers.metrics import serve_metrics, stop_metrics

TOKEN = "metrics-bearer-token-0123"


def bot_settings(fake: FakeSlack, redis_url: str, tmp_path: Path, **slack: object) -> Settings:
    return dataclasses.replace(
        Settings(), data_dir=tmp_path,
        slack=SlackSettings(bot_token=Secret(SLACK_TOKEN), signing_secret=Secret(SECRET),
                            api_url=fake.base_url, bot_port=0, bot_host="127.0.0.1",
                            **slack),  # type: ignore[arg-type]
        worker=WorkerSettings(redis_url=redis_url))


async def get(session: aiohttp.ClientSession, url: str,
              token: str | None = None) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with session.get(url, headers=headers) as resp:
        return resp.status, await resp.text()


async def test_with_a_metrics_port_the_slack_port_serves_no_metrics(
        fake: FakeSlack, redis_url: str, tmp_path: Path) -> None:
    settings = bot_settings(fake, redis_url, tmp_path, metrics_port=0)
    server = await start_bot(settings, redis_url)
    try:
        assert server.metrics_port and server.metrics_port != server.port
        public = f"http://127.0.0.1:{server.port}"
        inside = f"http://127.0.0.1:{server.metrics_port}"
        async with aiohttp.ClientSession() as session:
            assert (await get(session, f"{public}/metrics"))[0] == 404
            assert (await get(session, f"{public}/healthz"))[0] == 200  # a load balancer's
            status, text = await get(session, f"{inside}/metrics")
            assert status == 200 and "redsearch_queue_jobs" in Scrape(text).names()
            assert (await get(session, f"{inside}/healthz"))[0] == 200
            assert (await get(session, f"{inside}/slack/events"))[0] == 404
        assert server.metrics_url == f"{inside}/metrics"
    finally:
        await server.stop()


async def test_without_one_the_metrics_stay_on_the_bots_port(
        fake: FakeSlack, redis_url: str, tmp_path: Path) -> None:
    server = await start_bot(bot_settings(fake, redis_url, tmp_path), redis_url)
    try:
        assert server.metrics_port is None and server.metrics is None
        async with aiohttp.ClientSession() as session:
            assert (await get(session, server.metrics_url))[0] == 200
    finally:
        await server.stop()


async def test_the_metrics_token_is_asked_for_by_the_bot_and_a_worker(
        fake: FakeSlack, redis_url: str, tmp_path: Path) -> None:
    settings = dataclasses.replace(bot_settings(fake, redis_url, tmp_path, metrics_port=0),
                                   metrics_token=Secret(TOKEN))
    server = await start_bot(settings, redis_url)
    worker = serve_metrics("127.0.0.1", 0, TOKEN)
    worker_url = f"http://127.0.0.1:{worker.server_address[1]}/metrics"
    try:
        async with aiohttp.ClientSession() as session:
            for url in (server.metrics_url, worker_url):
                assert (await get(session, url))[0] == 401
                assert (await get(session, url, "not-the-token"))[0] == 401
                status, text = await get(session, url, TOKEN)
                assert status == 200 and "redsearch_" in text
            assert (await get(session, f"http://127.0.0.1:{server.metrics_port}/healthz"))[0] \
                == 200
    finally:
        stop_metrics(worker)
        await server.stop()


async def test_a_scrape_reads_the_queue_at_most_once_a_second(
        fake: FakeSlack, redis_url: str, redis: Redis, tmp_path: Path) -> None:
    server = await start_bot(bot_settings(fake, redis_url, tmp_path), redis_url)
    figures = server.runner.app[METRICS_ENDPOINT].figures
    assert figures is not None
    try:
        async with aiohttp.ClientSession() as session:
            started = time.monotonic()
            scrapes = await asyncio.gather(*(get(session, server.metrics_url)
                                             for _ in range(40)))
            assert all(status == 200 for status, _ in scrapes)
            within = time.monotonic() - started < QUEUE_READ_EVERY_S
            assert figures.reads == 1 if within else figures.reads <= 3
            assert Scrape(scrapes[0][1]).value("redsearch_active_jobs") == 0
            await awaited(redis.hset(ACTIVE_KEY, "job-1", "1"))  # a job to run to its end
            await asyncio.sleep(QUEUE_READ_EVERY_S + 0.1)
            _, later = await get(session, server.metrics_url)
            assert Scrape(later).value("redsearch_active_jobs") == 1  # read again: moved on
    finally:
        await server.stop()


def test_the_commands_take_host_and_metrics_port() -> None:
    bot = build_parser().parse_args(["bot", "--host", "127.0.0.1", "--port", "3000",
                                     "--metrics-port", "9100", "--metrics-host", "10.0.0.5"])
    assert (bot.host, bot.port, bot.metrics_port, bot.metrics_host) == (
        "127.0.0.1", 3000, 9100, "10.0.0.5")
    up = build_parser().parse_args(["up", "--host", "0.0.0.0", "--metrics-port", "9100"])
    assert (up.host, up.metrics_port, up.metrics_host) == ("0.0.0.0", 9100, None)
    for bad in (["bot", "--host", "a b"], ["up", "--metrics-port", "70000"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(bad)
    env = Settings.from_env({"RED_BOT_HOST": "127.0.0.1", "RED_BOT_METRICS_PORT": "9100",
                             "RED_BOT_METRICS_HOST": "10.0.0.5", "RED_METRICS_TOKEN": TOKEN})
    assert (env.slack.bot_host, env.slack.metrics_port, env.slack.metrics_host) == (
        "127.0.0.1", 9100, "10.0.0.5")
    assert TOKEN in env.secret_values() and TOKEN not in repr(env)


def _scrape_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.timeout(120)
async def test_up_serves_the_bots_metrics_on_the_metrics_port(tmp_path: Path) -> None:
    """`redsearch up --metrics-port M`: the bot's metrics at M, its workers' after it."""
    port, metrics = free_port(), free_port()
    env = {**cli_env(tmp_path), "REDIS_URL": TEST_REDIS_URL}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "redsearch.cli", "up", "--port", str(port), "--host", "127.0.0.1",
        "--metrics-port", str(metrics), env=env, stderr=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.DEVNULL, start_new_session=True)
    lines: list[str] = []
    try:
        assert process.stderr is not None
        while not any(line.startswith("metrics:") for line in lines):
            line = (await asyncio.wait_for(process.stderr.readline(), 60)).decode()
            assert line, "up ended: " + "".join(lines)
            lines.append(line)
        [bot_line] = [ln for ln in lines if ln.startswith("bot:")]
        bot_port = int(bot_line.split("127.0.0.1:", 1)[1].split("/", 1)[0])
        [where] = [ln for ln in lines if ln.startswith("metrics:")]
        assert f"bot http://127.0.0.1:{metrics}/metrics" in where, where
        assert f"worker 1 http://127.0.0.1:{metrics + 1}/metrics" in where, where
        status = await asyncio.to_thread(_scrape_status, f"http://127.0.0.1:{metrics}/metrics")
        assert status == 200
        assert await asyncio.to_thread(
            _scrape_status, f"http://127.0.0.1:{bot_port}/metrics") == 404
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
            await asyncio.wait_for(process.wait(), 60)
