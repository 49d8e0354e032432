"""The soak: an hour (or `--soak SECONDS`) of the chaos suite's deployment under steady
traffic, to find what only time shows (a leak, a slow drift, a run lost once in a hundred):

    make soak                                  # one hour
    python -m redsearch.harness.chaos --soak 3600 [--arrival-s 30] [--seed N]

Research runs arrive at a steady rate (one every `--arrival-s`) through the bot's signed
endpoint; a worker is SIGKILLed every few minutes (evenly spaced, never worker 0, whose
process lives the whole soak so that its memory can be read start to end); Redis restarts
once and every database connection of the workers is cut once, a third and two thirds in.
The bot runs in a process of its own. The report is the chaos suite's (runs started,
finished and lost; messages posted twice; steps redone; recoveries), then the resident
memory of every long-lived process at its start, once warm (a tenth in) and at the end.
Exit status 0 when the chaos report passes and no process grew past the leak rule."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import tempfile
import time
from pathlib import Path

from redsearch.harness.chaos import Chaos, render, stack_config
from redsearch.harness.chaos_audit import ChaosReport
from redsearch.harness.chaos_memory import HARNESS, LEAK_FLOOR_KIB, LEAK_SHARE, MemoryLog
from redsearch.harness.chaos_plan import DB_CUT, KILL, REDIS_RESTART, STORM, ChaosPlan, Fault
from redsearch.harness.suite_stack import SuiteStack

KILL_EVERY_S = 180.0  # "a worker killed every few minutes"
WARM_SHARE = 0.1  # memory is compared from this share of the soak on (imports, caches)
MEMORY_EVERY_S = 30.0
STORM_S = 30.0


def soak_plan(plan: ChaosPlan, seconds: float) -> ChaosPlan:
    """The plan of a soak of `seconds`: the given plan's timing and model delay, with one
    kill every KILL_EVERY_S, one Redis restart, one database cut and one 30 s 429 storm;
    a run arrives every `plan.arrival_s` (30 s unless given)."""
    return dataclasses.replace(
        plan, window_s=seconds, kills=max(1, int(seconds // KILL_EVERY_S)),
        redis_restarts=1, db_cuts=1, redis_losses=0, storm_s=min(STORM_S, seconds / 10),
        runs=1, arrival_s=plan.arrival_s or 30.0, keep_runs_in_flight=False,
        aim_at_runs=False)


def soak_schedule(plan: ChaosPlan) -> list[Fault]:
    """Kills evenly spaced over the window, on workers 1 … n-1 in turn; the Redis restart a
    third in and the database cut two thirds in, each half a kill spacing from the kills;
    the storm half way."""
    spacing = plan.window_s / plan.kills
    spares = list(range(1, plan.workers)) or [0]
    at = [plan.warmup_s + (i + 0.5) * spacing for i in range(plan.kills)]
    faults = [Fault(t, KILL, spares[i % len(spares)]) for i, t in enumerate(at)]
    third = plan.warmup_s + plan.window_s / 3
    faults += [Fault(third, REDIS_RESTART), Fault(third * 2 - plan.warmup_s, DB_CUT)]
    if plan.storm_s > 0:
        faults.append(Fault(plan.warmup_s + plan.window_s / 2 + spacing / 4, STORM))
    return sorted(faults, key=lambda f: f.at_s)


def processes(stack: SuiteStack) -> dict[str, int]:
    """Label → pid of every process of the deployment that is alive now."""
    found = {f"worker {w.index} pid {w.pid}": w.pid for w in stack.fleet.workers if w.alive}
    found.update({f"bot pid {b.process.pid}": b.process.pid for b in stack.bot_procs})
    if stack.redis.process is not None:
        found[f"redis-server pid {stack.redis.process.pid}"] = stack.redis.process.pid
    found[f"{HARNESS} (fake Slack, models)"] = os.getpid()
    return found


async def run_soak(plan: ChaosPlan, data_dir: Path, db_server_url: str
                   ) -> tuple[ChaosReport, MemoryLog]:
    config = dataclasses.replace(stack_config(plan, data_dir, db_server_url),
                                 bot_processes=True)
    stack = SuiteStack(config)
    memory = MemoryLog(lambda: processes(stack), every_s=MEMORY_EVERY_S)
    try:
        await stack.start()
        memory.warm_at = time.time() + plan.warmup_s + WARM_SHARE * plan.window_s
        memory.sample(force=True)
        chaos = Chaos(plan, stack, planned=soak_schedule(plan), on_tick=memory.sample)
        report = await chaos.run()
        memory.sample(force=True)
    finally:
        await stack.stop()
    return report, memory


def soak_main(base: ChaosPlan, args: argparse.Namespace) -> int:
    plan = soak_plan(base, args.soak)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="redsearch-soak-") as tmp:
        folder = Path(args.keep_dir or tmp)
        report, memory = asyncio.run(run_soak(plan, folder, args.db_server))
    leaks = memory.leaks()
    print(render(report, plan, time.monotonic() - started))
    print(f"\nmemory (resident; warm from t+{plan.warmup_s + WARM_SHARE * plan.window_s:.0f}s; "
          f"a leak: growth past {LEAK_SHARE:.0%} of the warm size and "
          f"{LEAK_FLOOR_KIB // 1024} MiB):\n{memory.table()}")
    print(f"leaks: {', '.join(m.label for m in leaks) if leaks else 'none'}")
    if args.json_path:
        data = {"report": dataclasses.asdict(report),
                "memory": {m.label: m.samples for m in memory.seen.values()}}
        Path(args.json_path).write_text(json.dumps(data, indent=1, default=str))
    return 0 if report.ok and not leaks else 1

