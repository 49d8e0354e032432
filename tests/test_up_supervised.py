"""`redsearch up` keeps going when its worker dies: the worker is a supervised child process.

The scripted tiers (the fake OpenAI server, in this test process) end the worker with SIGSEGV
at chosen model calls, the way a native crash in llama.cpp would. Mid-research: the worker is
restarted, the page keeps answering, the run resumes and finishes, and every message appears
once. A follow-up that crashes its worker every time is given up after RED_WORKER_MAX_CRASHES
crashes with the step it was on, and the next follow-up is answered."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from contract.redis_server import free_port
from tests.conftest import TEST_REDIS_URL, cli_env
from tests.engine_run import Serve
from tests.fakes.openai_server import Reply, last_user_text
from tests.metrics_scrape import Scrape, scrape
from tests.scripted import Script
from tests.up_process import UpProcess, text_of, up_process

QUESTION = "How did heat pump sales and prices move in 2026?"
CRASH_WORD = "crash-me"


class Crashing(Script):
    """Scripted tiers that SIGSEGV `up`'s worker at the 2nd evidence scoring (once) and at
    every follow-up that contains CRASH_WORD."""

    def __init__(self) -> None:
        super().__init__()
        self.up: UpProcess | None = None
        self.scorings = 0
        self.kills: list[str] = []

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        name = body.get("response_format", {}).get("json_schema", {}).get("name", "")
        if name == "HitScores":
            self.scorings += 1
            if self.scorings == 2:
                self._crash("research")
        if name == "FollowUpOut" and CRASH_WORD in last_user_text(body):
            self._crash("follow-up")
        return super().__call__(body)

    def _crash(self, what: str) -> None:
        assert self.up is not None
        for pid in self.up.worker_pids():  # a worker still exiting may be listed too
            os.kill(pid, signal.SIGSEGV)
        self.kills.append(what)  # one crash, however many processes were signalled


@pytest.fixture
async def up(serve: Serve, corpus_dir: Path, redis_url: str,
             tmp_path: Path) -> AsyncIterator[tuple[UpProcess, Crashing]]:
    tiers = Crashing()
    server = await serve(tiers)
    env = {**cli_env(tmp_path / "data", server.base_url), "REDIS_URL": redis_url,
           "RED_CORPUS_DIR": str(corpus_dir), "RED_WORKER_LEASE_S": "3",
           "RED_WORKER_HEARTBEAT_S": "0.5", "RED_WORKER_RECONCILE_S": "0.5",
           "RED_SLACK_PROGRESS_INTERVAL_S": "0.2", "RED_BUDGET_STEPS": "6"}
    assert redis_url == TEST_REDIS_URL or "127.0.0.1" in redis_url
    async with up_process(env, free_port()) as process:
        tiers.up = process
        yield process, tiers


async def ended(session: aiohttp.ClientSession, worker: str, limit_s: float = 15) -> Scrape:
    """The worker's metrics once it counts the run ended: the job posts "Research finished"
    before it returns, and the end is counted when it has (CI scraped in between)."""
    deadline = time.monotonic() + limit_s
    while True:
        found = await scrape(session, worker)
        if found.value("redsearch_jobs_ended_total", kind="research", outcome="finished") or \
                time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.2)


def finished(replies: list[dict[str, Any]]) -> bool:
    return any("Research finished" in text_of(m) for m in replies)


@pytest.mark.timeout(300)
async def test_a_crashing_worker_costs_one_step_never_the_service(
        up: tuple[UpProcess, Crashing]) -> None:
    process, tiers = up
    mention = await process.say(f"@RED {QUESTION}")
    [picker] = await process.wait_for(mention, lambda r: len(r) == 1, 30, "the picker")
    await process.click(picker["ts"], "depth_standard")

    replies = await process.wait_for(mention, finished, 120, "the resumed run's end")
    assert tiers.kills == ["research"]
    async with aiohttp.ClientSession() as session, session.get(process.url) as page:
        assert page.status == 200  # the page never went away
    notices = [n["text"] for n in (await process.state())["notices"]]
    assert any("worker 1 exited (signal SIGSEGV)" in n and "restart 1" in n for n in notices)
    texts = [text_of(m) for m in replies]
    assert len(texts) == len(set(texts)), "a message was posted twice"
    plans = [m for m in replies if (m.get("blocks") or [{}])[0].get("type") == "plan"]
    assert len(plans) == 1 and plans[0]["blocks"][0]["title"].startswith("Done —")
    assert sum("Research finished" in t for t in texts) == 1
    bot, worker = metrics_urls(process)
    async with aiohttp.ClientSession() as session:  # the restart and the resume, counted
        assert (await scrape(session, bot)).value("redsearch_worker_restarts_total",
                                                  exit="SIGSEGV") == 1
        restarted = await ended(session, worker)  # the same port after the restart
    assert restarted.value("redsearch_jobs_resumed_total", cause="crash") == 1
    assert restarted.value("redsearch_jobs_ended_total", kind="research",
                           outcome="finished") == 1

    # A follow-up that takes its worker down every time: given up, then the next one runs.
    await process.say(f"{CRASH_WORD}: which country grew fastest?", thread_ts=mention)
    replies = await process.wait_for(
        mention, lambda r: any("could not be answered" in text_of(m) for m in r), 150,
        "the follow-up given up")
    [gave_up] = [text_of(m) for m in replies if "could not be answered" in text_of(m)]
    assert "the worker crashed 3 times at step" in gave_up and "executor/followup" in gave_up
    assert tiers.kills.count("follow-up") == 3
    await process.say("What were heat pump sales in September?", thread_ts=mention)
    asked = "*Follow-up:* What were heat pump sales in September?"
    replies = await process.wait_for(mention, lambda r: any(asked in text_of(m) for m in r), 90,
                                     "the next follow-up's answer")
    answer = next(text_of(m) for m in replies if asked in text_of(m))
    assert "The findings answer it" in answer
    texts = [text_of(m) for m in replies]
    assert len(texts) == len(set(texts)), "a message was posted twice"
    async with aiohttp.ClientSession() as session:
        assert (await scrape(session, bot)).value("redsearch_worker_restarts_total") == 4
        last = await scrape(session, worker)  # the worker that gave the follow-up up
    assert last.value("redsearch_jobs_ended_total", kind="followup", outcome="given_up") == 1


def metrics_urls(process: UpProcess) -> tuple[str, str]:
    """The bot's and worker 1's metrics, as `up` printed them."""
    [line] = [ln for ln in process.output if ln.startswith("metrics:")]
    found = re.fullmatch(r"metrics: +bot (\S+), worker 1 (\S+)", line)
    assert found, line
    return found.group(1), found.group(2)
