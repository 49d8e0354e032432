"""Scheduled work on time under load: a watch that falls due while runs fill every job slot
of the worker starts within the bound (60 s in production: a 30 s tick and ARQ's poll),
not when a run ends (it once waited 908 s). Real Redis, the real ARQ worker, the bot and
the fake Slack; the scripted tiers answer slowly, so the two runs stay in flight."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import json
import time
from typing import Any

import pytest
from arq.jobs import Job, JobStatus

from contract.keys import request_key
from contract.queue import JobPayload
from contract.requests import Requests, job_id
from playground.fake_slack import BOT_USER_ID
from research_core.store.sql import SqlStore
from research_core.store.watches import WatchStore
from tests.conftest import AS_OF, RecordingBackend
from tests.engine_run import default_similarity
from tests.fakes.openai_server import Reply
from tests.scripted import Script
from tests.slack_driver import ALICE
from tests.slack_stack import CHANNEL, Stack, StartStack
from tests.test_watch_cycle import watch_script
from tests.test_watch_flow import research
from workers.worker import run_worker

TICK_S = 0.5  # RED_WORKER_WATCH_TICK_S, scaled down from 30 s
WITHIN_S = 5.0  # the bound, scaled down from 60 s (a tick and ARQ's 0.5 s poll, with room)
HELD_CALL_S = 3.0  # each model call of the runs in flight: they outlast the measurement
STARTED = (JobStatus.in_progress, JobStatus.complete)


class Held:
    """The scripted tiers, each call taking `call_s` (0 until the runs are to be held)."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.call_s = 0.0

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        answer = self.script(body)
        reply = answer if isinstance(answer, Reply) else Reply(content=answer)
        return dataclasses.replace(reply, delay_s=self.call_s)


async def start_worker(stack: Stack, backend: RecordingBackend) -> None:
    """The stack's worker (two job slots, the default) with the watch tick scaled down."""
    worker = dataclasses.replace(stack.settings.worker, watch_tick_s=TICK_S)
    stack.settings = dataclasses.replace(stack.settings, worker=worker)
    stack.worker = asyncio.create_task(run_worker(
        stack.settings, worker.redis_url, backend=backend, similarity=default_similarity()))


async def status(stack: Stack, job: str) -> JobStatus:
    return await Job(job, stack.pool).status()


async def in_flight(stack: Stack, count: int) -> list[str]:
    """Start `count` researches and wait until the worker runs all of them; their job ids."""
    jobs = []
    for n in range(count):
        _, mention = await stack.driver.mention(f"<@{BOT_USER_ID}> Heat pump exports {n}?")
        [picker] = stack.thread(mention)
        assert await stack.driver.click(ALICE, "depth_standard", picker) == 200
        jobs.append(job_id(CHANNEL, mention.ts))
    for _ in range(400):
        if [await status(stack, j) for j in jobs] == [JobStatus.in_progress] * count:
            return jobs
        await asyncio.sleep(0.05)
    raise AssertionError("the runs never were in flight together")


async def watch_due_now(stack: Stack, store: SqlStore, thread_ts: str) -> None:
    """Watch a finished thread daily from the day before the worker's date: due now."""
    key = request_key(CHANNEL, thread_ts)
    request = await Requests(stack.pool).load(key)
    assert request is not None
    await WatchStore(store).watch(
        request_key=key, team=request.team or "", run_id=request.run_id, channel=CHANNEL,
        thread_ts=thread_ts, request=json.loads(request.to_json()), cadence="daily",
        last_as_of=AS_OF - dt.timedelta(days=1))


async def started_after(stack: Stack, job: str, limit_s: float) -> float | None:
    """Seconds until ARQ started `job` (None: not within `limit_s`)."""
    began = time.monotonic()
    while time.monotonic() - began < limit_s:
        if await status(stack, job) in STARTED:
            return time.monotonic() - began
        await asyncio.sleep(0.05)
    return None


@pytest.mark.timeout(120)
async def test_a_due_watch_starts_within_the_bound_while_runs_fill_the_worker(
        start_stack: StartStack, backend: RecordingBackend) -> None:
    tiers = Held(watch_script())
    stack = await start_stack(tiers, backend, in_process_worker=False)
    await start_worker(stack, backend)
    watched, _ = await research(stack)
    tiers.call_s = HELD_CALL_S
    runs = await in_flight(stack, stack.settings.worker.max_jobs)
    store = await SqlStore.open(stack.settings.db_url)
    try:
        await watch_due_now(stack, store, watched.ts)
        cycle = JobPayload.watch("", CHANNEL, watched.ts, AS_OF.isoformat()).job_id
        waited_s = await started_after(stack, cycle, WITHIN_S)
        still = [await status(stack, j) for j in runs]
    finally:
        tiers.call_s = 0.0
        await store.close()
    assert waited_s is not None, \
        f"the due watch did not start within {WITHIN_S:g}s while {len(runs)} runs were in flight"
    assert still == [JobStatus.in_progress] * len(runs), "measured with the runs in flight"
