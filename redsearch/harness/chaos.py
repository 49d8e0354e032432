"""`make chaos`: several workers on PostgreSQL and one Redis, research runs driven through the
bot's real endpoint, and faults at random moments (the seed is printed): workers SIGKILLed
(each started again at once), a Redis restart, every database connection of the workers cut,
a Slack 429 storm, and a Redis write loss (killed right after runs were queued and leases
renewed, back without those writes, as when an asynchronous replica takes over). Then it
counts what was lost, posted twice or redone, and how long each killed worker's runs (and
the runs a write loss caught) took to come back (`redsearch.harness.chaos_audit`).

    python -m redsearch.harness.chaos [--seed N] [--kills 20] [--runs 6] [--window-s 240] …

Exit status 0 when nothing was lost, duplicated or redone and every recovery kept within the
bound; 1 otherwise. Everything runs on this machine; nothing reaches another address.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from redis.exceptions import RedisError
from sqlalchemy.exc import SQLAlchemyError

from redsearch.harness.chaos_audit import (
    ChaosReport,
    KillRecord,
    Resume,
    TrackedRun,
    WriteLoss,
    duplicates,
    loss_recoveries,
    posted,
    recoveries,
    redone_steps,
    signs_of_life,
)
from redsearch.harness.chaos_plan import (
    DB_CUT,
    FULL_SUITE,
    KILL,
    REDIS_LOSS,
    REDIS_RESTART,
    STORM,
    ChaosPlan,
    Fault,
    Outage,
    schedule,
)
from redsearch.harness.scripted_tiers import tagged
from redsearch.harness.suite_stack import DEFAULT_DB_SERVER, RequestLost, StackConfig, SuiteStack
from redsearch.supervisor import describe_exit

QUESTION = "How did European heat pump sales, prices and exports move in 2026?"
POLL_S = 0.5
SNAPSHOT_S = 1.0


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@dataclass
class Chaos:
    plan: ChaosPlan
    stack: SuiteStack
    runs: list[TrackedRun] = field(default_factory=list)
    kills: list[KillRecord] = field(default_factory=list)
    losses: list[WriteLoss] = field(default_factory=list)
    saved: list[tuple[float, dict[str, int]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    done_faults: list[str] = field(default_factory=list)
    outages: list[Outage] = field(default_factory=list)  # Redis away
    planned: list[Fault] | None = None  # the faults to inject (None: the plan's schedule)
    on_tick: Callable[[], None] | None = None  # called every poll (the soak's memory log)
    _steps: dict[str, int] = field(default_factory=dict)  # the last snapshot's steps
    t0: float = 0.0
    asked: int = 0

    # -- runs -------------------------------------------------------------------------------

    async def start_run(self) -> None:
        number, self.asked = self.asked, self.asked + 1
        tag = f"c{number:02d}"
        channel = f"C0CHAOS{number:03d}"
        try:
            mention = await self.stack.mention(channel, tagged(QUESTION, tag), bot=number)
            clicked = await self.stack.choose(mention, "standard", bot=number + 1)
        except RequestLost as lost:  # a failed row of the report, not a traceback
            self.runs.append(TrackedRun(tag, channel, "", f"request {tag}", time.time(),
                                        failed=f"request lost: {lost}"))
            self.notes.append(f"request {tag} lost: {lost}")
            return
        self.runs.append(TrackedRun(tag, channel, mention.ts, self.stack.run_id(mention),
                                    clicked))

    def in_flight(self) -> list[TrackedRun]:
        return [r for r in self.runs if r.finished_at is None and not r.failed]

    def settle_runs(self) -> None:
        posted = self.stack.posted_at
        for run in self.in_flight():
            if f"{run.run_id}/final/v1" in posted:
                run.finished_at = posted[f"{run.run_id}/final/v1"]
            failed = [k for k in posted if k.startswith(f"{run.run_id}/failed-")]
            if failed:
                run.failed = failed[0]
                self.notes.append(f"run {run.tag} failed: {self._failure_text(run)}")

    def _failure_text(self, run: TrackedRun) -> str:
        texts = [m.text for m in self.stack.fake.messages(run.channel, run.thread_ts)
                 if m.text.startswith("Research failed")]
        return texts[-1][:200] if texts else "(no text)"

    # -- faults -------------------------------------------------------------------------------

    async def fault(self, fault: Fault) -> None:
        if fault.kind == KILL:
            await self.kill(fault.worker)
        elif fault.kind == REDIS_RESTART:
            began = time.time()
            away = await self.stack.redis.restart(self.plan.redis_down_s)
            self.outages.append(Outage(began, time.time()))
            self.log_fault(f"Redis restarted (away {away:.1f} s)")
        elif fault.kind == REDIS_LOSS:
            await self.lose_writes()
        elif fault.kind == DB_CUT:
            cut = await self.stack.db.cut_connections()
            self.log_fault(f"PostgreSQL: {cut} backends of the workers terminated")
        elif fault.kind == STORM:
            self.stack.fake.storm(self.plan.storm_s, self.plan.storm_share,
                                  self.plan.storm_retry_after_s)
            self.log_fault(f"Slack 429 storm for {self.plan.storm_s:g} s "
                           f"({self.plan.storm_share:.0%} of calls)")

    async def lose_writes(self) -> None:
        """Redis is snapshotted (what the replica has), every lease is renewed past it and
        `loss_runs` runs are asked (their jobs queued, their requests written); then it is
        killed and comes back with the snapshot only: those writes are lost."""
        await self.stack.redis.snapshot()
        await asyncio.sleep(self.plan.heartbeat_s * 1.5)
        asked = len(self.runs)
        await asyncio.gather(*(self.start_run() for _ in range(self.plan.loss_runs)))
        queued = tuple(r.run_id for r in self.runs[asked:] if not r.failed)
        caught = tuple(r.run_id for r in self.in_flight())
        began = time.time()
        away = await self.stack.redis.lose_writes(self.plan.redis_down_s)
        self.outages.append(Outage(began, time.time(), lost_writes=True))
        self.losses.append(WriteLoss(time.time(), caught, queued))
        self.log_fault(f"Redis killed and back without its last writes (away {away:.1f} s): "
                       f"{len(caught)} run(s) in flight, {len(queued)} asked since the "
                       "snapshot")

    async def kill(self, index: int) -> None:
        if self.plan.aim_at_runs:
            index = await self._busy_worker(index)
        kill = await self.stack.fleet.kill(index)
        held = await self._held_by(kill.pid)
        self.kills.append(KillRecord(kill.at, kill.pid, tuple(held)))
        self.log_fault(f"SIGKILL worker {index} (pid {kill.pid}), holding "
                       f"{len(held)} run(s); restarted")

    async def _busy_worker(self, fallback: int) -> int:
        """A worker that holds a run now (`fallback` when none does)."""
        try:
            holders = set((await self.stack.holders([r.run_id for r in self.in_flight()]))
                          .values())
        except (RedisError, OSError):
            return fallback
        busy = [w.index for w in self.stack.fleet.workers
                if any(h.endswith(f":{w.pid}") for h in holders)]
        return busy[0] if busy else fallback

    async def _held_by(self, pid: int) -> list[str]:
        """The runs whose lease names the killed process (Redis may be restarting)."""
        for _ in range(40):
            try:
                holders = await self.stack.holders([r.run_id for r in self.in_flight()])
            except (RedisError, OSError):  # Redis restarting: read again
                await asyncio.sleep(0.25)
                continue
            return [run for run, who in holders.items() if who.endswith(f":{pid}")]
        return []

    def log_fault(self, what: str) -> None:
        line = f"t+{time.time() - self.t0:6.1f}s  {what}"
        self.done_faults.append(line)
        say(line)

    # -- the scenario -------------------------------------------------------------------------

    async def run(self) -> ChaosReport:
        faults = schedule(self.plan) if self.planned is None else self.planned
        say(f"chaos seed {self.plan.seed}: {len(faults)} faults over "
            f"{self.plan.window_s:g} s after {self.plan.warmup_s:g} s")
        for planned in faults:
            say("  planned " + planned.describe())
        self.t0 = time.time()
        await asyncio.gather(*(self.start_run() for _ in range(self.plan.runs)))
        injector = asyncio.create_task(self._inject(faults))
        await self._watch(injector)
        return await self.report()

    async def _inject(self, faults: list[Fault]) -> None:
        for planned in faults:
            await asyncio.sleep(max(0.0, self.t0 + planned.at_s - time.time()))
            await self.fault(planned)

    async def _watch(self, injector: asyncio.Task[None]) -> None:
        """Until the faults are done and every run ended (or the time is up): settle runs,
        restart workers that exited by themselves, keep runs in flight, snapshot steps."""
        deadline: float | None = None
        last_snapshot = 0.0
        while True:
            self.settle_runs()
            for index, status in await self.stack.fleet.restart_exited():
                self.notes.append(f"worker {index} exited by itself ({describe_exit(status)}; "
                                  f"its log: worker-{index}-*.log); started again")
            if injector.done():
                injector.result()
                deadline = deadline or time.monotonic() + self.plan.finish_timeout_s
                if not self.in_flight() or time.monotonic() > deadline:
                    return
            elif self._wants_run():
                await self.start_run()
            if self.on_tick is not None:
                self.on_tick()
            if time.monotonic() - last_snapshot >= SNAPSHOT_S:
                last_snapshot = time.monotonic()
                await self._snapshot()
            await asyncio.sleep(POLL_S)

    def _wants_run(self) -> bool:
        """Another run now: at the plan's arrival rate (the soak), else to keep `runs` in
        flight while faults remain."""
        if self.plan.arrival_s > 0:
            return time.time() >= self.t0 + self.asked * self.plan.arrival_s
        return self.plan.keep_runs_in_flight and len(self.in_flight()) < self.plan.runs

    async def _snapshot(self) -> None:
        """The checkpoint steps that changed since the last snapshot, as the database has
        them now (the highest step saved before a resume is the same; an hour's soak kept
        a full copy every second, 80 MiB of the harness)."""
        at = time.time()
        try:
            rows = await self.stack.db.fetch("SELECT run_id, step FROM runs")
        except (OSError, SQLAlchemyError):  # cut, or the tables not there yet
            return
        changed = {run_id: step for run_id, step in rows if self._steps.get(run_id) != step}
        self._steps.update(changed)
        if changed:
            self.saved.append((at, changed))

    def worker_up(self, kill_at: float) -> bool:
        """Whether a worker was up from the moment the killed worker's lease ran out until
        the recovery bound (otherwise the runs wait for a worker to start again)."""
        start = kill_at + self.plan.lease_s
        end = kill_at + self.plan.recovery_bound_s
        return any(w.up_throughout(start, end) for w in self.stack.fleet.history)

    async def resumes(self) -> list[Resume]:
        rows = await self.stack.db.fetch("SELECT run_id, step, at FROM events "
                                         "WHERE kind = 'resume'")
        return [Resume(run_id, step, _timestamp(at)) for run_id, step, at in rows]

    async def report(self) -> ChaosReport:
        self.settle_runs()
        calls = self.stack.fake.calls()
        signs = signs_of_life(self.runs, self.stack.tiers.calls, calls)
        return ChaosReport(
            seed=self.plan.seed, runs=self.runs, messages_posted=len(posted(calls)),
            duplicated=duplicates(calls),
            redone=redone_steps(await self.resumes(), self.saved),
            recovery=recoveries(self.kills, signs, self.worker_up,
                                lambda at: self.plan.bound_after(at, self.outages)),
            limited=self.stack.fake.limited, bound_s=self.plan.recovery_bound_s,
            faults=self.done_faults, notes=self.notes, losses=self.losses,
            loss_recovery=loss_recoveries(self.losses, signs),
            loss_bound_s=self.plan.loss_bound_s)


def _timestamp(value: dt.datetime) -> float:
    return (value if value.tzinfo else value.replace(tzinfo=dt.UTC)).timestamp()


def stack_config(plan: ChaosPlan, data_dir: Path, db_server_url: str) -> StackConfig:
    """The suite's stack. Its kills come from outside and no job here is poison, so the
    crash limit (which tells a job that crashes its worker at one point again and again) is
    set above the plan's kills: three kills aimed at the one run left, all while it stalled
    at one model call through a Redis restart and a database cut, gave it up (seed 17)."""
    return StackConfig(workers=plan.workers, worker_jobs=plan.worker_jobs,
                       model_delay_s=plan.model_delay_s, lease_s=plan.lease_s,
                       heartbeat_s=plan.heartbeat_s, reconcile_s=plan.reconcile_s,
                       data_dir=data_dir, db_server_url=db_server_url, seed=plan.seed,
                       extra_env={"RED_WORKER_MAX_CRASHES": str(min(plan.kills + 1, 100))})


async def run_chaos(plan: ChaosPlan, data_dir: Path,
                    db_server_url: str = DEFAULT_DB_SERVER) -> ChaosReport:
    stack = SuiteStack(stack_config(plan, data_dir, db_server_url))
    try:
        await stack.start()
        report = await Chaos(plan, stack).run()
    finally:
        await stack.stop()
    return report


def render(report: ChaosReport, plan: ChaosPlan, wall_s: float) -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = [f"chaos seed {plan.seed}: {plan.workers} workers × {plan.worker_jobs} jobs, "
             f"{plan.kills} kills, {plan.redis_restarts} Redis restart(s), "
             f"{plan.redis_losses} Redis write loss(es), {plan.db_cuts} "
             f"database cut(s), {plan.storm_s:g} s 429 storm; model delay "
             f"{plan.model_delay_s:g} s/call; lease {plan.lease_s:g} s, reconcile "
             f"{plan.reconcile_s:g} s; {wall_s:.0f} s wall; load average {load} "
             f"on {os.cpu_count()} CPUs", "", report.table()]
    if report.notes:
        lines += ["", "notes:", *(f"  {n}" for n in report.notes)]
    for what, found in (("duplicated", report.duplicated), ("redone", report.redone)):
        lines += [f"  {what}: {k} ×{n}" for k, n in found.items()]
    lines += [f"  lost: {r.tag} ({r.run_id}) {r.failed or 'not finished'}" for r in report.lost]
    slow = [r for r in report.recovery if r.seconds is None or r.seconds > report.bound_of(r)]
    start = report.runs[0].clicked_at if report.runs else 0.0
    lines += [f"  slow recovery: {r.run_id} after the kill at t+{r.kill_at - start:.0f}s: "
              f"{'never' if r.seconds is None else f'{r.seconds:.1f} s'}"
              f"{'' if r.worker_up else ' (no other worker up)'}" for r in slow]
    return "\n".join(lines)


def parse_plan(argv: list[str] | None) -> tuple[ChaosPlan, argparse.Namespace]:
    parser = argparse.ArgumentParser(prog="python -m redsearch.harness.chaos", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=None, help="fault schedule seed")
    for f in fields(ChaosPlan):
        if f.name != "seed" and isinstance(f.default, int | float) \
                and not isinstance(f.default, bool):
            parser.add_argument(f"--{f.name.replace('_', '-')}", type=type(f.default),
                                default=FULL_SUITE.get(f.name, f.default))
    parser.add_argument("--db-server", default=DEFAULT_DB_SERVER,
                        help="a PostgreSQL database the suite connects to while it creates "
                        "(and at the end drops) a database of its own")
    parser.add_argument("--soak", type=float, default=0.0, metavar="SECONDS",
                        help="a soak instead (redsearch.harness.chaos_soak): runs arriving at a "
                        "steady rate for SECONDS, a worker killed every few minutes, one "
                        "Redis restart, one database cut, each process's memory sampled")
    parser.add_argument("--json", dest="json_path", help="also write the report as JSON here")
    parser.add_argument("--keep", dest="keep_dir",
                        help="keep the workers' logs and data in this folder")
    args = parser.parse_args(argv)
    values = {f.name: getattr(args, f.name) for f in fields(ChaosPlan)
              if hasattr(args, f.name) and f.name != "seed"}
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6)
    return ChaosPlan(seed=seed, **values), args


def main(argv: list[str] | None = None) -> int:
    plan, args = parse_plan(argv)
    if args.soak > 0:
        from redsearch.harness.chaos_soak import soak_main  # it builds on this module

        return soak_main(plan, args)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="redsearch-chaos-") as tmp:
        folder = Path(args.keep_dir or tmp)
        report = asyncio.run(run_chaos(plan, folder, args.db_server))
    print(render(report, plan, time.monotonic() - started))
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(asdict(report), indent=1, default=str))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
