"""Logs an operator can follow: RED_LOG_FORMAT=json is one JSON object per line with the time,
level, process role, and the run, team and channel the line is about; the default stays the
readable line; a secret of the settings never shows in either. (A real worker process's JSON
log is checked in tests/test_metrics.py.)"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from playground.fake_slack import BOT_USER_ID
from redsearch.logs import log_handler
from research_core import log_context
from research_core.errors import SettingsError
from research_core.policy import Policy
from research_core.settings import Settings
from tests.conftest import RecordingBackend
from tests.scripted import Script
from tests.slack_stack import CHANNEL, StartStack

TOKEN = "xoxb-1234-secret-token"


@contextmanager
def captured(name: str, role: str, fmt: str,
             secrets: tuple[str, ...] = ()) -> Iterator[io.StringIO]:
    """What the logger `name` (and its children) write at INFO, in `fmt`, while inside."""
    out = io.StringIO()
    handler = log_handler(role, fmt, secrets, stream=out)
    logger = logging.getLogger(name)
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield out
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def lines(out: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_a_json_line_has_time_level_role_and_context_and_no_secret() -> None:
    with captured("red.test", "worker", "json", (TOKEN,)) as out:
        log = logging.getLogger("red.test.job")
        with log_context.bound(run_id="s0123", team="T1", channel="C1"):
            log.warning("posting with %s failed", TOKEN)
            try:
                raise ValueError(f"bad token {TOKEN}")
            except ValueError:
                log.exception("it broke")
        log.info("outside a run")
    first, second, third = lines(out)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", str(first["time"]))
    assert first["level"] == "warning" and first["role"] == "worker"
    assert first["logger"] == "red.test.job"
    assert first["message"] == "posting with *** failed"
    assert (first["run_id"], first["team"], first["channel"]) == ("s0123", "T1", "C1")
    assert "ValueError: bad token ***" in str(second["exc"])
    assert "run_id" not in third and "channel" not in third
    assert TOKEN not in out.getvalue()


def test_the_default_line_stays_readable_and_masks_secrets_too() -> None:
    with captured("red.text", "bot", "text", (TOKEN,)) as out:
        logging.getLogger("red.text").info("token %s refused", TOKEN)
    line = out.getvalue().strip()
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO red.text: "
                        r"token \*\*\* refused", line), line


async def test_concurrent_jobs_each_log_their_own_run() -> None:
    async def job(run_id: str) -> None:
        with log_context.bound(run_id=run_id, channel=f"C{run_id}"):
            for _ in range(3):
                logging.getLogger("red.jobs").info("step of %s", run_id)
                await asyncio.sleep(0)

    with captured("red.jobs", "worker", "json") as out:
        await asyncio.gather(job("a"), job("b"))
    found = lines(out)
    assert len(found) == 6
    assert all(e["message"] == f"step of {e['run_id']}" and e["channel"] == f"C{e['run_id']}"
               for e in found)


def test_an_unknown_context_field_is_a_bug() -> None:
    with pytest.raises(ValueError, match="question"), log_context.bound(question="what?"):
        pass


def test_an_unknown_log_format_is_one_settings_line() -> None:
    with pytest.raises(SettingsError, match="RED_LOG_FORMAT='xml': use text or json"):
        Settings.from_env({"RED_LOG_FORMAT": "xml"})
    assert Settings.from_env({"RED_LOG_FORMAT": "JSON"}).log_format == "json"
    assert Settings.from_env({}).log_format == "text"


def test_the_settings_name_their_secrets() -> None:
    settings = Settings.from_env({
        "SLACK_BOT_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": "signing-secret-1",
        "RED_PLANNER_BASE_URL": "http://127.0.0.1:1/v1", "RED_PLANNER_MODEL": "m",
        "RED_PLANNER_API_KEY": "sk-planner-key",
        "REDIS_URL": "redis://:redis-pass@127.0.0.1:6379/0",
        "DATABASE_URL": "postgresql+asyncpg://u:db%40pass@127.0.0.1/db"})
    assert set(settings.secret_values()) == {TOKEN, "signing-secret-1", "sk-planner-key",
                                             "redis-pass", "db@pass"}


async def test_the_bots_lines_name_the_team_and_channel_of_the_request(
        start_stack: StartStack, backend: RecordingBackend) -> None:
    stack = await start_stack(Script(), backend, in_process_worker=False,
                              policy=Policy(channels=("C0ELSEWHERE",)))
    with captured("bot", "bot", "json") as out:
        status, _ = await stack.driver.mention(f"<@{BOT_USER_ID}> How did sales move?")
    assert status == 200
    [line] = [e for e in lines(out) if "not answering" in str(e["message"])]
    assert (line["role"], line["team"], line["channel"]) == ("bot", stack.driver.team, CHANNEL)
