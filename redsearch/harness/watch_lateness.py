"""How late a due watch cycle starts while runs fill a worker's job slots (docs/watch.md).

One `redsearch worker` process with the production defaults (RED_WORKER_JOBS=2, a watch tick
every 30 s, one slot kept for watch cycles) on this machine's local services (`SuiteStack`:
its own Redis and PostgreSQL database, the scripted tiers, the fake Slack). Threads are
researched to their end; then `--runs` researches are kept in flight (every model call
slowed to `--call-s`) and, one after another, a watch of a finished thread falls due at a
random moment (a daily watch from yesterday). Lateness: from falling due to ARQ starting
the cycle. Each cycle is let end before the next watch falls due.

    python -m redsearch.harness.watch_lateness [--samples 3] [--runs 2] [--call-s 3]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import random
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from arq.jobs import Job, JobStatus

from contract.keys import request_key
from contract.queue import JobPayload
from contract.requests import ENDED, Requests, job_id
from playground.fake_slack import Message
from redsearch.harness.scripted_tiers import tagged
from redsearch.harness.suite_stack import DEFAULT_DB_SERVER, StackConfig, SuiteStack
from research_core.store.sql import SqlStore
from research_core.store.watches import WatchStore

CHANNEL = "C0WATCHED"
QUESTION = "How did heat pump sales move in 2026?"
TICK_S = 30.0  # RED_WORKER_WATCH_TICK_S's default: a watch falls due at a random point of it
STARTED = (JobStatus.in_progress, JobStatus.complete)


@dataclass(frozen=True)
class Plan:
    samples: int = 3
    runs: int = 2
    call_s: float = 3.0
    limit_s: float = 600.0
    db_server_url: str = DEFAULT_DB_SERVER


@dataclass(frozen=True)
class Sample:
    late_s: float | None  # None: not started within the limit
    runs_in_flight: int  # research jobs running when it started (or at the limit)


async def until(check: Callable[[], Awaitable[bool]], limit_s: float) -> float | None:
    """Seconds until `check()` held (None: not within `limit_s`)."""
    began = time.monotonic()
    while time.monotonic() - began < limit_s:
        if await check():
            return time.monotonic() - began
        await asyncio.sleep(0.05)
    return None


async def status(stack: SuiteStack, job: str) -> JobStatus:
    assert stack.client is not None
    return await Job(job, stack.client).status()


async def ask(stack: SuiteStack, tag: str) -> Message:
    mention = await stack.mention(CHANNEL, tagged(QUESTION, tag))
    await stack.choose(mention)
    return mention


async def researched(stack: SuiteStack, count: int) -> list[Message]:
    """`count` threads researched to their end, the model at full speed."""
    threads = [await ask(stack, f"watched-{i}") for i in range(count)]
    requests = Requests(stack.client)  # type: ignore[arg-type]
    for thread in threads:
        key = request_key(CHANNEL, thread.ts)
        assert await until(partial(_ended, requests, key), 600) is not None, "not ended"
    return threads


async def _ended(requests: Requests, key: str) -> bool:
    request = await requests.load(key)
    return request is not None and request.status in ENDED


async def in_flight(stack: SuiteStack, jobs: list[str]) -> int:
    return [await status(stack, j) for j in jobs].count(JobStatus.in_progress)


async def keep_in_flight(stack: SuiteStack, runs: int, jobs: list[str]) -> None:
    """Start researches until `runs` of them are running on the worker."""
    while await in_flight(stack, jobs) < runs:
        mention = await ask(stack, f"busy-{len(jobs)}")
        jobs.append(job_id(CHANNEL, mention.ts))
        await until(partial(_running, stack, jobs[-1]), 60)


async def _running(stack: SuiteStack, job: str) -> bool:
    return await status(stack, job) == JobStatus.in_progress


async def fall_due(store: SqlStore, stack: SuiteStack, thread: Message) -> str:
    """Watch `thread` daily from yesterday: due now; the id of the cycle's job."""
    key = request_key(CHANNEL, thread.ts)
    request = await Requests(stack.client).load(key)  # type: ignore[arg-type]
    assert request is not None
    today = dt.datetime.now(dt.UTC).date()
    await WatchStore(store).watch(
        request_key=key, team=request.team or "", run_id=request.run_id, channel=CHANNEL,
        thread_ts=thread.ts, request=json.loads(request.to_json()), cadence="daily",
        last_as_of=today - dt.timedelta(days=1))
    return JobPayload.watch(key, CHANNEL, thread.ts, today.isoformat()).job_id


async def sample(stack: SuiteStack, store: SqlStore, thread: Message, plan: Plan,
                 jobs: list[str]) -> Sample:
    await asyncio.sleep(random.uniform(0, TICK_S))
    await keep_in_flight(stack, plan.runs, jobs)
    cycle = await fall_due(store, stack, thread)
    late_s = await until(partial(_started, stack, cycle), plan.limit_s)
    found = Sample(late_s, await in_flight(stack, jobs))
    print(f"watch cycle started {_late(found)} late, {found.runs_in_flight} runs in flight",
          flush=True)
    await until(partial(_done, stack, cycle), plan.limit_s)  # the watch slot free again
    return found


async def _started(stack: SuiteStack, job: str) -> bool:
    return await status(stack, job) in STARTED


async def _done(stack: SuiteStack, job: str) -> bool:
    return await status(stack, job) == JobStatus.complete


def _late(found: Sample) -> str:
    return f"{found.late_s:.1f} s" if found.late_s is not None else "not started"


async def measure(plan: Plan, folder: Path) -> list[Sample]:
    config = StackConfig(workers=1, worker_jobs=2, model_delay_s=0.0, lease_s=30.0,
                         heartbeat_s=5.0, reconcile_s=10.0, data_dir=folder,
                         db_server_url=plan.db_server_url)
    stack = SuiteStack(config)
    try:
        await stack.start()
        threads = await researched(stack, plan.samples)
        stack.tiers.delay_s = plan.call_s
        store = await SqlStore.open(stack.db.url)
        try:
            jobs: list[str] = []
            return [await sample(stack, store, t, plan, jobs) for t in threads]
        finally:
            await store.close()
    finally:
        await stack.stop()


def render(samples: list[Sample], plan: Plan) -> str:
    late = [s.late_s for s in samples if s.late_s is not None]
    worst = f"{max(late):.1f} s" if late else "-"
    return (f"watch lateness with {plan.runs} runs in flight on a 2-slot worker "
            f"({plan.call_s:g} s per model call): {', '.join(_late(s) for s in samples)}; "
            f"worst {worst}; {len(samples) - len(late)} not started within {plan.limit_s:g} s")


def parse(argv: list[str] | None) -> Plan:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--samples", type=int, default=Plan.samples)
    parser.add_argument("--runs", type=int, default=Plan.runs)
    parser.add_argument("--call-s", type=float, default=Plan.call_s)
    parser.add_argument("--limit-s", type=float, default=Plan.limit_s)
    parser.add_argument("--db-server", default=Plan.db_server_url)
    args = parser.parse_args(argv)
    return Plan(args.samples, args.runs, args.call_s, args.limit_s, args.db_server)


def main(argv: list[str] | None = None) -> int:
    plan = parse(argv)
    with tempfile.TemporaryDirectory(prefix="redsearch-watch-") as tmp:
        samples = asyncio.run(measure(plan, Path(tmp)))
    print(render(samples, plan))
    return 0 if all(s.late_s is not None for s in samples) else 1


if __name__ == "__main__":
    sys.exit(main())
