"""The ARQ worker: `build_worker` and `run_worker` for `redsearch worker` (and `up`'s children).

Models, similarity, corpus and store are loaded once at startup (`Services`), and a
reconciler runs beside the jobs. Shutdown cancels running jobs: each releases its lease, so
another worker (or this one, restarted) resumes the run from its checkpoint at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from arq.worker import Worker, func
from redis.exceptions import RedisError

from contract.queue import (
    JOB_FUNCTION,
    WATCH_JOB_PREFIX,
    JobQueue,
    connect,
    deserialize,
    serialize,
)
from contract.redis_target import RETRY_CAP_S
from research_core.settings import Settings
from research_core.store.jobs import JobRecords
from workers.jobs import run_job
from workers.metrics import JOB_SLOTS, serve_metrics, stop_metrics
from workers.reconciler import reconcile_forever
from workers.services import Services
from workers.sweep import Sweep, sweep_forever
from workers.watch_work import tick_forever

log = logging.getLogger(__name__)

RETRY_TRIES = 2000  # a follow-up retries (every lease_s / 2) until its research has ended
POLL_DELAY_S = 0.5  # a queued job waits at most this long for an idle worker
REDIS_AWAY_PAUSE_S = RETRY_CAP_S  # after a poll's own retries ran out (Redis away ~8 s)


def is_scheduled(job_id: str) -> bool:
    """A watch cycle's job (`JobPayload.watch`; its resumes and recoveries keep the prefix)."""
    return job_id.startswith(WATCH_JOB_PREFIX)


class SteadyWorker(Worker):
    """ARQ's worker, riding out a Redis that restarts or fails over. ARQ ends its main loop
    on the first failed poll, which took every worker down with a Redis restart; here a
    failed poll is logged and tried again after a pause. Running jobs go on: each keeps its
    own lease and gives its run up if Redis stays away longer than the lease.

    Two lanes share ARQ's slots: `run_slots` for runs and the other jobs, the rest for
    scheduled work (watch cycles). With every run slot taken by a long run, a due watch
    waited for one to end (908 s once); now it starts at ARQ's next poll."""

    def __init__(self, *args: Any, run_slots: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.run_slots = run_slots

    async def _poll_iteration(self) -> None:
        try:
            await super()._poll_iteration()
        except (RedisError, OSError) as exc:
            log.warning("Redis unavailable while polling for jobs (%s); trying again", exc)
            await asyncio.sleep(REDIS_AWAY_PAUSE_S)

    async def start_jobs(self, job_ids: list[bytes]) -> None:
        """ARQ's, one job at a time, each only while its lane has a free slot."""
        for job_id in job_ids:
            if self._lane_free(is_scheduled(job_id.decode())):
                await self._start_one(job_id)

    def _lane_free(self, scheduled: bool) -> bool:
        busy = sum(not task.done() and is_scheduled(job) == scheduled
                   for job, task in self.tasks.items())
        return busy < (self.max_jobs - self.run_slots if scheduled else self.run_slots)

    async def _start_one(self, job_id: bytes) -> None:
        try:
            await super().start_jobs([job_id])
        except (RedisError, OSError):
            # ARQ had taken a slot for the job it was starting when Redis failed: give it back
            self.job_counter -= 1
            self.sem.release()
            raise


async def startup(ctx: dict[str, Any]) -> None:
    settings: Settings = ctx.get("settings") or Settings.from_env()
    services = await Services.load(settings, ctx["redis"], ctx.get("backend"),
                                   ctx.get("similarity"))
    ctx["services"] = services
    ctx["reconciler"] = asyncio.create_task(reconcile_forever(
        services.redis, JobQueue(services.redis), settings.worker.lease_s,
        settings.worker.reconcile_every_s))
    ctx["sweep"] = asyncio.create_task(sweep_forever(
        Sweep(services.redis, services.queue, JobRecords(services.store),
              settings.worker.lease_s), settings.worker.sweep_every_s))
    ctx["watch_tick"] = asyncio.create_task(tick_forever(services, settings.worker.watch_tick_s))


async def shutdown(ctx: dict[str, Any]) -> None:
    for name in ("reconciler", "sweep", "watch_tick"):
        task: asyncio.Task[None] | None = ctx.pop(name, None)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    services: Services | None = ctx.pop("services", None)
    if services is not None:
        await services.aclose()


def build_worker(settings: Settings, pool: Any, **ctx: Any) -> Worker:
    """`ctx` may carry a ready `backend` or `similarity` (tests, the playground)."""
    timeout_s, slots = settings.worker.job_timeout_s, settings.worker.max_jobs
    return SteadyWorker(
        functions=[func(run_job, name=JOB_FUNCTION, timeout=timeout_s)], run_slots=slots,
        redis_pool=pool, ctx={"settings": settings, **ctx},
        max_jobs=slots + settings.worker.watch_jobs,
        job_timeout=timeout_s, job_serializer=serialize, job_deserializer=deserialize,
        on_startup=startup, on_shutdown=shutdown, max_tries=RETRY_TRIES,
        poll_delay=POLL_DELAY_S, handle_signals=False)


async def run_worker(settings: Settings, redis_url: str, **ctx: Any) -> None:
    """Run until cancelled; then stop the jobs (their runs resume elsewhere) and clean up.
    With RED_WORKER_METRICS_PORT set, the metrics are served meanwhile."""
    config = settings.worker
    endpoint = serve_metrics(config.metrics_host, config.metrics_port,
                             str(settings.metrics_token)) \
        if config.metrics_port is not None else None
    JOB_SLOTS.set(config.max_jobs)
    try:
        pool = await connect(redis_url)
        worker = build_worker(settings, pool, **ctx)
        try:
            await worker.main()
        finally:
            await _stop(worker)
            await pool.aclose()
    finally:
        stop_metrics(endpoint)


async def _stop(worker: Worker) -> None:
    """ARQ's own close() calls a deprecated redis close(); this does the same by hand."""
    tasks = [t for t in worker.tasks.values() if not t.done()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    try:
        await worker.pool.delete(worker.health_check_key)
    except (RedisError, OSError) as exc:  # Redis away: the key expires by itself
        log.warning("health check key not removed: %s", exc)
    await shutdown(worker.ctx)
