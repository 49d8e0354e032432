"""The chaos suite's plan: how many runs, workers and faults, the workers' lease timing, and
the fault schedule drawn from a seed (printed, so that a run can be repeated)."""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass

from contract.redis_target import RETRY_CAP_S

KILL = "kill"
REDIS_RESTART = "redis-restart"
DB_CUT = "db-cut"
STORM = "slack-429-storm"
REDIS_LOSS = "redis-write-loss"  # Redis back without its last writes (a failover's loss)
ARQ_POLL_S = 0.5  # how often an idle worker polls the queue (workers/worker.py)
MARGIN_S = 3.0  # loading the checkpoint and the first call on a loaded machine


@dataclass(frozen=True, order=True)
class Outage:
    """Redis away (epoch seconds); `lost_writes`: it came back without its last writes."""

    start: float
    end: float
    lost_writes: bool = False


@dataclass(frozen=True)
class ChaosPlan:
    seed: int
    runs: int = 6  # research runs kept in flight while faults remain
    workers: int = 3
    kills: int = 20
    redis_restarts: int = 1
    db_cuts: int = 1
    storm_s: float = 30.0  # 0: no storm
    storm_share: float = 1 / 3
    storm_retry_after_s: int = 2
    model_delay_s: float = 2.5  # per model call, like a hosted model: runs take minutes
    warmup_s: float = 8.0  # after the first runs start, before the first fault
    window_s: float = 240.0  # faults fall at random moments within this window
    finish_timeout_s: float = 300.0  # after the last fault, for the runs to finish
    lease_s: float = 8.0
    heartbeat_s: float = 1.0
    reconcile_s: float = 1.0
    worker_jobs: int = 4
    redis_down_s: float = 3.0
    # Redis killed right after runs were queued and leases renewed, and back without those
    # writes. 0 here, so that a plan (and a seed's schedule) written before this fault keeps
    # its faults; the full suite (`make chaos`, FULL_SUITE) has one.
    redis_losses: int = 0
    loss_runs: int = 2  # runs asked between the snapshot and the kill (their jobs are lost)
    keep_runs_in_flight: bool = True  # a run that ends while faults remain is replaced
    arrival_s: float = 0.0  # > 0: a new run every this many seconds instead (the soak)
    aim_at_runs: bool = False  # a kill hits a worker holding a run (short suites), not any

    @property
    def recovery_bound_s(self) -> float:
        """The documented bound: lease + reconcile interval + ARQ's poll delay, plus a margin
        for loading the checkpoint and the first call (one model call's latency and 3 s:
        this is a loaded machine)."""
        return self.lease_s + self.reconcile_s + ARQ_POLL_S + self.model_delay_s + MARGIN_S

    @property
    def loss_bound_s(self) -> float:
        """After a write loss, from Redis back to each caught run's next call: the clients
        reconnect, then the sweep queues a job again once it has seen it without traces in
        two rounds a lease apart (a round every lease: two leases), plus ARQ's poll, one
        model call and the margin."""
        return 2 * self.lease_s + RETRY_CAP_S + ARQ_POLL_S + self.model_delay_s + MARGIN_S

    def bound_after(self, kill_at: float, outages: Iterable[Outage]) -> float:
        """The bound of a kill at `kill_at` (epoch seconds): `recovery_bound_s`, or, when
        Redis was away before the run could be handed on, the end of that outage plus what
        follows it: every client reconnected (the retries' back-off cap), a reconcile round,
        ARQ's poll, one model call and the margin; after an outage that lost writes (the
        lease and the job may be gone with them), what the sweep needs (`loss_bound_s`).
        Nobody can hand a run on while Redis is away; the bound asks that nothing waits
        longer."""
        bound = self.recovery_bound_s
        after_s = RETRY_CAP_S + self.reconcile_s + ARQ_POLL_S + self.model_delay_s + MARGIN_S
        for outage in sorted(outages):
            if outage.start < kill_at + bound and outage.end > kill_at:
                wait_s = self.loss_bound_s if outage.lost_writes else after_s
                bound = max(bound, outage.end - kill_at + wait_s)
        return bound


FULL_SUITE = {"redis_losses": 1}  # `python -m redsearch.harness.chaos` defaults beyond ChaosPlan's


@dataclass(frozen=True)
class Fault:
    at_s: float  # seconds after the first runs started
    kind: str
    worker: int = -1  # the worker a kill hits

    def describe(self) -> str:
        what = f"{self.kind} worker {self.worker}" if self.kind == KILL else self.kind
        return f"t+{self.at_s:6.1f}s  {what}"


def schedule(plan: ChaosPlan) -> list[Fault]:
    """Every fault at a random moment of the window (the storm ends within it), in order."""
    rng = random.Random(plan.seed)
    start, end = plan.warmup_s, plan.warmup_s + plan.window_s
    faults = [Fault(rng.uniform(start, end), KILL, rng.randrange(plan.workers))
              for _ in range(plan.kills)]
    faults += [Fault(rng.uniform(start, end), REDIS_RESTART) for _ in range(plan.redis_restarts)]
    faults += [Fault(rng.uniform(start, end), DB_CUT) for _ in range(plan.db_cuts)]
    if plan.storm_s > 0:
        faults.append(Fault(rng.uniform(start, max(start, end - plan.storm_s)), STORM))
    # drawn last: the faults above fall where they did before this kind existed
    faults += [Fault(rng.uniform(start, end), REDIS_LOSS) for _ in range(plan.redis_losses)]
    return sorted(faults, key=lambda f: f.at_s)
