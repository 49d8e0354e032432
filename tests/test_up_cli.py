"""`redsearch up` from the command line: a busy port is one clear line and exit 2."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import subprocess
import sys
from pathlib import Path

import aiohttp

from contract.keys import request_key
from contract.requests import Requests
from playground.fake_slack import BOT_USER_ID, FakeSlack
from redsearch.up import start_up
from research_core.search.corpus import CorpusBackend, sample_corpus_dir
from research_core.settings import Secret, Settings, SlackSettings, WorkerSettings
from tests.conftest import SLACK_TOKEN, TEST_REDIS_URL, RecordingBackend, cli_env
from tests.engine_run import default_similarity
from tests.slack_driver import CHANNEL, SECRET, SlackDriver
from tests.slack_stack import wait_for


def test_a_busy_playground_port_is_a_one_line_error(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = {**cli_env(tmp_path), "REDIS_URL": TEST_REDIS_URL}
        done = subprocess.run([sys.executable, "-m", "redsearch.cli", "up", "--port", str(port)],
                              env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    [error] = errors
    assert error.startswith(f"redsearch: error: cannot serve the playground on 127.0.0.1:{port}")
    assert error.endswith("choose another port with --port (make run PORT=…)")
    assert "Traceback" not in done.stderr


async def test_with_slack_credentials_up_serves_slack_instead_of_the_playground(
        fake: FakeSlack, redis_url: str, tmp_path: Path) -> None:
    settings = dataclasses.replace(
        Settings(), data_dir=tmp_path,
        slack=SlackSettings(bot_token=Secret(SLACK_TOKEN), signing_secret=Secret(SECRET),
                            api_url=fake.base_url, bot_port=0),
        worker=WorkerSettings(redis_url=redis_url))
    said: list[str] = []
    stack = await start_up(settings, say=said.append, inline_worker={
        "backend": RecordingBackend(CorpusBackend.from_folder(sample_corpus_dir())),
        "similarity": default_similarity()})
    try:
        assert stack.playground is None and stack.bot is not None
        assert not any(line.startswith("playground") for line in said)
        async with aiohttp.ClientSession() as session:
            driver = SlackDriver(stack.bot.events_url, session, fake)
            status, mention = await driver.mention(f"<@{BOT_USER_ID}> heat pump sales?")
            assert status == 200
            await wait_for(lambda: len(driver.replies(mention)) == 1, 10, "the picker")
            requests = Requests(stack.bot.pool)
            for _ in range(100):  # the handler's last step (ack first, work after): let it end
                stored = await requests.load(request_key(CHANNEL, mention.ts))
                if stored is not None and stored.picker_ts:
                    break
                await asyncio.sleep(0.05)
    finally:
        await stack.stop()
