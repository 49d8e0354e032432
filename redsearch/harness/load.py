"""`make load`: how much the deployment takes, on this machine's local services.

1. Ack latency of signed mentions at fixed rates through one `redsearch bot` process and
   through two replicas (events alternate between them), whether every mention got its
   depth picker, and the bots' CPU per mention (a figure the machine's other load hardly
   moves, unlike the latencies: the load average is printed beside it).
2. Click → first progress message in the thread, with a warm worker.
3. Runs in flight on one worker (RED_WORKER_JOBS raised), with the scripted API tiers at a
   fixed latency per call: queue wait (click → the run's first model call) and wall time
   (click → its closing message) as more runs share the worker, and the worker's CPU use.

    python -m redsearch.harness.load [--rates 50,200,500,1000] [--levels 1,2,4,8,16,32] …
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from arq.jobs import Job

from contract.queue import deserialize
from contract.requests import job_id
from playground.fake_slack import BOT_USER_ID, Message
from redsearch.harness.chaos_audit import percentile
from redsearch.harness.fleet import cpu_seconds
from redsearch.harness.scripted_tiers import tagged
from redsearch.harness.suite_stack import DEFAULT_DB_SERVER, REQUESTER, StackConfig, SuiteStack

QUESTION = "How did European heat pump sales, prices and exports move in 2026?"
PICKERS_WAIT_S = 120.0
RESULT_WAIT_S = 15.0
READ_PICKER_S = 1.0  # and Slack takes one message a second per channel


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class LoadPlan:
    rates: tuple[int, ...] = (50, 200, 500, 1000)
    ack_seconds: float = 8.0
    clicks: int = 20
    levels: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    model_delay_s: float = 1.0
    steps: int = 0  # RED_BUDGET_STEPS for the runs (0: the default)
    db_server_url: str = DEFAULT_DB_SERVER


@dataclass
class AckRow:
    bots: int
    rate: int
    sent: int
    achieved_rate: float
    p50_ms: float
    p99_ms: float
    failed: int
    pickers: int
    pickers_after_s: float  # from the last ack until the last picker was posted
    bot_cpu_ms: float = float("nan")  # the bots' CPU per mention, its picker included
    load_1m: float = float("nan")  # the machine's load average as the row ended


@dataclass
class InflightRow:
    runs: int
    queue_p50_s: float  # ARQ: enqueued → started
    queue_max_s: float
    start_p50_s: float  # click → the run's first model call
    start_max_s: float
    wall_p50_s: float
    wall_max_s: float
    finished: int
    peak_model_calls: int
    worker_cpu: float  # CPU seconds per wall second of the worker process


@dataclass
class LoadReport:
    acks: list[AckRow] = field(default_factory=list)
    first_progress_s: list[float] = field(default_factory=list)
    inflight: list[InflightRow] = field(default_factory=list)


def config(plan: LoadPlan, folder: Path, bots: int, workers: int, jobs: int,
           post_interval_s: float = 0.0) -> StackConfig:
    extra = {"RED_BUDGET_STEPS": str(plan.steps)} if plan.steps else {}
    return StackConfig(workers=workers, worker_jobs=jobs, model_delay_s=plan.model_delay_s,
                       lease_s=30.0, heartbeat_s=5.0, reconcile_s=10.0, data_dir=folder,
                       bots=bots, bot_processes=True, post_interval_s=post_interval_s,
                       db_server_url=plan.db_server_url, extra_env=extra)


@asynccontextmanager
async def started(cfg: StackConfig, workers: bool) -> AsyncIterator[SuiteStack]:
    stack = SuiteStack(cfg)
    try:
        await stack.start(start_workers=workers)
        yield stack
    finally:
        await stack.stop()


# -- 1. acks -----------------------------------------------------------------------------------

def _ticks(rate: int, seconds: float) -> Iterator[float]:
    for i in range(int(rate * seconds)):
        yield i / rate


async def blast(stack: SuiteStack, urls: list[str], rate: int, seconds: float) -> AckRow:
    """Signed mentions at `rate` per second for `seconds`, spread over the bots at `urls`."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    sends: list[asyncio.Task[float | None]] = []
    mentions: list[Message] = []
    for n, offset in enumerate(_ticks(rate, seconds)):
        await asyncio.sleep(max(0.0, start + offset - loop.time()))
        msg = stack.fake.post_user_message(f"C0LOAD{n % 50:02d}", REQUESTER,
                                           f"<@{BOT_USER_ID}> question {n}: {QUESTION}")
        mentions.append(msg)
        url = urls[n % len(urls)]
        sends.append(asyncio.create_task(_ack(stack, url, msg, stack.next_event_id())))
    achieved = len(sends) / max(loop.time() - start, 1e-9)
    latencies = await asyncio.gather(*sends)
    sent_at = loop.time()
    ok = [x * 1000 for x in latencies if x is not None]
    deadline = time.monotonic() + PICKERS_WAIT_S
    while sum(stack.picker_of(m) is not None for m in mentions) < len(mentions):
        if time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)
    pickers = sum(stack.picker_of(m) is not None for m in mentions)
    return AckRow(len(urls), rate, len(sends), achieved, percentile(ok, 0.5),
                  percentile(ok, 0.99), len(sends) - len(ok), pickers,
                  loop.time() - sent_at)


async def _ack(stack: SuiteStack, url: str, msg: Message, event_id: str) -> float | None:
    try:
        delivery = await stack.sender.mention(url, msg, event_id)
    except OSError:
        return None
    return delivery.latency_s if delivery.status == 200 else None


def bots_cpu_s(stack: SuiteStack, bots: int) -> float:
    """CPU seconds the first `bots` bot processes have used."""
    return sum(cpu_seconds(bot.process.pid) for bot in stack.bot_procs[:bots])


async def measure_acks(plan: LoadPlan, folder: Path, report: LoadReport) -> None:
    async with started(config(plan, folder / "acks", 2, 0, 1), False) as stack:
        for bots in (1, 2):
            for rate in plan.rates:
                cpu = bots_cpu_s(stack, bots)
                row = await blast(stack, stack.bot_urls[:bots], rate, plan.ack_seconds)
                row.bot_cpu_ms = 1000 * (bots_cpu_s(stack, bots) - cpu) / max(row.sent, 1)
                row.load_1m = os.getloadavg()[0]
                say(f"acks: {bots} bot(s) at {rate}/s: p50 {row.p50_ms:.1f} ms, p99 "
                    f"{row.p99_ms:.1f} ms, {row.failed} failed, {row.pickers}/{row.sent} "
                    f"pickers ({row.pickers_after_s:.1f} s after the last ack), bot CPU "
                    f"{row.bot_cpu_ms:.2f} ms a mention, load {row.load_1m:.1f}")
                report.acks.append(row)


# -- 2. click → first progress ---------------------------------------------------------------

async def ask(stack: SuiteStack, number: int, tag: str) -> tuple[Message, float]:
    """A person asks, reads the picker for a moment, and clicks; returns the click's time."""
    mention = await stack.mention(f"C0RUN{number:03d}", tagged(QUESTION, tag))
    await asyncio.sleep(READ_PICKER_S)
    return mention, await stack.choose(mention, "standard")


def first_progress_at(stack: SuiteStack, mention: Message) -> float | None:
    prefix = f"{stack.run_id(mention)}/progress/"
    times = [at for key, at in stack.posted_at.items() if key.startswith(prefix)]
    return min(times) if times else None


async def measure_first_progress(stack: SuiteStack, plan: LoadPlan,
                                 report: LoadReport) -> None:
    mentions = []
    for n in range(plan.clicks):
        mention, clicked = await ask(stack, n, f"p{n:03d}")
        mentions.append(mention)
        deadline = time.monotonic() + 30
        while (seen := first_progress_at(stack, mention)) is None:
            if time.monotonic() > deadline:
                raise RuntimeError("no progress message within 30 s of a click")
            await asyncio.sleep(0.02)
        report.first_progress_s.append(seen - clicked)
    await until_finished(stack, mentions)  # before the runs in flight are counted
    values = report.first_progress_s
    say(f"click → first progress: p50 {percentile(values, 0.5):.2f} s, p99 "
        f"{percentile(values, 0.99):.2f} s over {len(values)} clicks")


# -- 3. runs in flight on one worker -----------------------------------------------------------

def finished_at(stack: SuiteStack, mention: Message) -> float | None:
    return stack.posted_at.get(f"{stack.run_id(mention)}/final/v1")


async def until_finished(stack: SuiteStack, mentions: list[Message],
                         timeout_s: float = 600.0) -> int:
    """Until every run has its closing message; returns the most model calls seen at once."""
    peak = 0
    deadline = time.monotonic() + timeout_s
    while not all(finished_at(stack, m) for m in mentions) and time.monotonic() < deadline:
        peak = max(peak, stack.tiers.in_flight)
        await asyncio.sleep(0.05)
    return peak


async def one_level(stack: SuiteStack, runs: int, base: int) -> InflightRow:
    asked = await asyncio.gather(*(ask(stack, base + i, f"r{base + i:04d}")
                                   for i in range(runs)))
    pid = stack.fleet.workers[0].pid
    cpu0, wall0 = cpu_seconds(pid), time.monotonic()
    peak = await until_finished(stack, [m for m, _ in asked])
    cpu = (cpu_seconds(pid) - cpu0) / max(time.monotonic() - wall0, 1e-9)
    starts, walls = [], []
    for i, (mention, clicked) in enumerate(asked):
        calls = [c.at for c in stack.tiers.calls_of(f"r{base + i:04d}")]
        if calls:
            starts.append(min(calls) - clicked)
        done = finished_at(stack, mention)
        if done is not None:
            walls.append(done - clicked)
    waits = await queue_waits(stack, [m for m, _ in asked])
    return InflightRow(runs, percentile(waits, 0.5), max(waits, default=float("nan")),
                       percentile(starts, 0.5), max(starts, default=float("nan")),
                       percentile(walls, 0.5), max(walls, default=float("nan")), len(walls),
                       peak, cpu)


async def queue_waits(stack: SuiteStack, mentions: list[Message]) -> list[float]:
    """ARQ's own record of each research job: from enqueued to started."""
    assert stack.client is not None
    waits = []
    for mention in mentions:
        job = Job(job_id(mention.channel, mention.ts), stack.client, _deserializer=deserialize)
        deadline = time.monotonic() + RESULT_WAIT_S  # the job returns after its last message
        while (info := await job.result_info()) is None and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        if info is not None:
            waits.append((info.start_time - info.enqueue_time).total_seconds())
    return waits


async def measure_inflight(stack: SuiteStack, plan: LoadPlan, report: LoadReport) -> None:
    base = plan.clicks
    for runs in plan.levels:
        row = await one_level(stack, runs, base)
        base += runs
        say(f"in flight {runs}: queue wait p50 {row.queue_p50_s:.2f} s / max "
            f"{row.queue_max_s:.2f} s, first model call p50 {row.start_p50_s:.2f} s, "
            f"wall p50 {row.wall_p50_s:.1f} s / max "
            f"{row.wall_max_s:.1f} s, {row.finished}/{runs} finished, worker CPU "
            f"{row.worker_cpu:.0%}")
        report.inflight.append(row)


# -- report --------------------------------------------------------------------------------------

def render(report: LoadReport, plan: LoadPlan, wall_s: float) -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = [f"load suite: {wall_s:.0f} s wall; load average {load} on {os.cpu_count()} CPUs; "
             f"model delay {plan.model_delay_s:g} s/call", "",
             "bots  rate/s  sent  achieved/s  ack p50 ms  ack p99 ms  failed  pickers  "
             "last picker s  bot CPU ms  load"]
    lines += [f"{r.bots:>4}  {r.rate:>6}  {r.sent:>4}  {r.achieved_rate:>10.0f}  "
              f"{r.p50_ms:>10.1f}  {r.p99_ms:>10.1f}  {r.failed:>6}  {r.pickers:>7}  "
              f"{r.pickers_after_s:>13.1f}  {r.bot_cpu_ms:>10.2f}  {r.load_1m:>4.1f}"
              for r in report.acks]
    if report.first_progress_s:
        values = report.first_progress_s
        lines += ["", f"click → first progress message ({len(values)} clicks, warm worker): "
                  f"p50 {percentile(values, 0.5):.2f} s, p99 {percentile(values, 0.99):.2f} s"]
    if report.inflight:
        lines += ["", "runs in flight on one worker: queue wait (ARQ: enqueued → started), "
                  "click → first model call, wall time (click → closing message)",
                  "runs  wait p50 s  wait max s  1st call p50 s  1st call max s  wall p50 s  "
                  "wall max s  finished  model calls at once  worker CPU"]
        lines += [f"{r.runs:>4}  {r.queue_p50_s:>10.2f}  {r.queue_max_s:>10.2f}  "
                  f"{r.start_p50_s:>14.2f}  {r.start_max_s:>14.2f}  "
                  f"{r.wall_p50_s:>10.1f}  {r.wall_max_s:>10.1f}  {r.finished:>8}  "
                  f"{r.peak_model_calls:>19}  {r.worker_cpu:>10.0%}" for r in report.inflight]
    return "\n".join(lines)


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(",") if part.strip())


def parse_plan(argv: list[str] | None) -> tuple[LoadPlan, argparse.Namespace]:
    parser = argparse.ArgumentParser(prog="python -m redsearch.harness.load", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    d = LoadPlan()
    parser.add_argument("--rates", type=_ints, default=d.rates, help="mentions per second")
    parser.add_argument("--ack-seconds", type=float, default=d.ack_seconds)
    parser.add_argument("--clicks", type=int, default=d.clicks)
    parser.add_argument("--levels", type=_ints, default=d.levels, help="runs in flight")
    parser.add_argument("--model-delay-s", type=float, default=d.model_delay_s)
    parser.add_argument("--steps", type=int, default=d.steps)
    parser.add_argument("--only", choices=("acks", "clicks", "inflight"))
    parser.add_argument("--db-server", default=DEFAULT_DB_SERVER,
                        help="a PostgreSQL database the suite connects to while it creates "
                        "(and at the end drops) a database of its own")
    parser.add_argument("--keep", dest="keep_dir", help="keep logs and data in this folder")
    args = parser.parse_args(argv)
    return LoadPlan(args.rates, args.ack_seconds, args.clicks, args.levels,
                    args.model_delay_s, args.steps, args.db_server), args


async def run_load(plan: LoadPlan, folder: Path, only: str | None = None) -> LoadReport:
    report = LoadReport()
    if only in (None, "acks"):
        await measure_acks(plan, folder, report)
    if only == "acks":
        return report
    jobs = max(plan.levels, default=1)
    async with started(config(plan, folder / "runs", 1, 1, jobs, 1.0), True) as stack:
        if only in (None, "clicks"):
            await measure_first_progress(stack, plan, report)
        if only in (None, "inflight"):
            await measure_inflight(stack, plan, report)
    return report


def main(argv: list[str] | None = None) -> int:
    plan, args = parse_plan(argv)
    started_at = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="redsearch-load-") as tmp:
        report = asyncio.run(run_load(plan, Path(args.keep_dir or tmp), args.only))
    print(render(report, plan, time.monotonic() - started_at))
    return 0


if __name__ == "__main__":
    sys.exit(main())
