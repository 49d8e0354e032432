"""The ARQ job: a request's research or one follow-up, under the run's lease.

A job first takes the run's lease (one worker per run at a time; a follow-up waits for the
research to end by retrying later). While it works, a watchdog renews the lease every heartbeat
and polls the Stop flag. Stop cancels the work and closes the thread with a "stopped" message;
a lost lease cancels the work silently (another worker has the run now). The lease is given
back only after the job is marked ended, so the reconciler never revives a job that is
closing. A worker that dies leaves the job started with an expiring lease: the reconciler
re-enqueues it and the new job resumes from the checkpoint, editing the messages already
posted (the outbox). A job past its time limit fails with a message instead of being cancelled
by ARQ (which would leave it to be resumed again and again). A job whose worker died under it
`max_crashes` times (a native crash it causes, say) is not run again: the thread is told which
step it was on, what was published stays, and the worker goes on with the next job.
A Slack outage (no answer, a 429 or 5xx past the client's own retries, an answer that is not
Slack's JSON) puts the job off instead of failing it: it keeps its place among the active
jobs, gives its lease back and runs again after a growing pause (at most OUTAGE_WAIT_S), then
resumes from its checkpoint, its outbox finding what had already reached the thread; only
after OUTAGE_TRIES outages in a row is the thread told that Slack kept failing.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from typing import Any

from arq import Retry
from redis.exceptions import RedisError

from contract.blocks import words_of
from contract.installations import NotInstalled
from contract.keeping import CANVAS, KEEP_KINDS
from contract.keys import (
    KEEP_S,
    claim_key,
    crashes_key,
    doing_key,
    handover_key,
    outages_key,
    request_channel,
    started_key,
)
from contract.queue import FEEDBACK, FOLLOWUP, PREVIEW, WATCH, WATCH_SET, JobPayload
from contract.requests import ResearchRequestMsg
from contract.slack_client import is_outage, slack_error
from research_core import log_context
from research_core.errors import RunError
from workers.canvas_export import save_canvas
from workers.kept_research import Keeper, KeepJob
from workers.lease import Lease
from workers.markdown_export import export_markdown
from workers.metrics import JOBS_ENDED, JOBS_STARTED, QUEUE_WAIT, RUNS_IN_FLIGHT
from workers.services import Services
from workers.team_rules import preview_job
from workers.thread_work import ThreadWork
from workers.watch_work import record_watch

log = logging.getLogger(__name__)

STOP_POLL_S = 1.0
TIME_LIMIT_MARGIN_S = 60
OUTAGE_TRIES = 30  # with OUTAGE_WAIT_S, a Slack outage of about half an hour is waited out
OUTAGE_WAIT_S = 60.0
OUTAGE_CLAIM_LEASES = 10  # a put-off job's claim outlasts its pause by this many leases


class LeaseLost(Exception):
    """Another worker took this run over (this one stalled past its lease)."""


class SlackAway(Exception):
    """The work met a Slack outage: the job is to run again later (`defer_s` from now)."""

    def __init__(self, error: str, defer_s: float) -> None:
        super().__init__(error)
        self.error = error
        self.defer_s = defer_s


async def run_job(ctx: dict[str, Any], data: dict[str, Any]) -> str:
    """ARQ entry point; returns a one-line outcome that ARQ stores as the job result. Its
    log lines carry the job's run id, team and channel (`research_core.log_context`)."""
    payload = JobPayload.from_dict(data)
    _count_wait(ctx, payload.kind)
    with log_context.bound(run_id=payload.run_id, team=payload.team,
                           channel=request_channel(payload.request_key)):
        return await _run(ctx, payload)


def _count_wait(ctx: dict[str, Any], kind: str) -> None:
    """The time a job waited for a worker, on its first try (a retry waited on purpose)."""
    queued = ctx.get("enqueue_time")
    if ctx.get("job_try", 1) == 1 and isinstance(queued, dt.datetime):
        waited = (dt.datetime.now(dt.UTC) - queued).total_seconds()
        QUEUE_WAIT.labels(kind).observe(max(waited, 0.0))


async def _run(ctx: dict[str, Any], payload: JobPayload) -> str:
    services: Services = ctx["services"]
    if payload.kind not in (FEEDBACK, WATCH_SET):  # they only store what a person chose
        try:  # the job speaks to Slack with its own workspace's token, never another's
            services = await services.for_team(payload.team)
        except NotInstalled as exc:
            return await _not_installed(services, payload, exc)
    if payload.kind in (FEEDBACK, WATCH_SET, PREVIEW, *KEEP_KINDS):
        return await _short_job(services, payload)
    return await JobRunner(services, payload).run()


async def _short_job(services: Services, payload: JobPayload) -> str:
    """A job that holds no run's lease: a verdict or a watch choice stored, a plan preview,
    a research kept as a canvas or a file."""
    JOBS_STARTED.labels(payload.kind).inc()
    outcome = "failed"
    try:
        if payload.kind == FEEDBACK:
            said = await record_feedback(services, payload)
        elif payload.kind == WATCH_SET:
            said = await record_watch(services, payload)
        elif payload.kind in KEEP_KINDS:
            said = await keep_research(services, payload)
        else:
            said = await preview_job(services, payload)
        outcome = "finished"
        return said
    finally:
        JOBS_ENDED.labels(payload.kind, outcome).inc()


async def keep_research(services: Services, payload: JobPayload) -> str:
    """Save as canvas, or Export as Markdown (`contract.keeping`), in the job's thread."""
    keeper, job = Keeper.of(services), KeepJob.of(payload)
    if payload.kind == CANVAS:
        return await save_canvas(keeper, job)
    return await export_markdown(keeper, job, payload.job_id)


async def _not_installed(services: Services, payload: JobPayload, exc: NotInstalled) -> str:
    log.error("job %s not run: %s", payload.job_id, exc)
    JOBS_ENDED.labels(payload.kind, "failed").inc()
    await services.queue.ended(payload.job_id)
    return f"not run: {exc}"


async def record_feedback(services: Services, payload: JobPayload) -> str:
    """A person's verdict on an answer, stored with the run (their latest click counts)."""
    clicked = (dt.datetime.fromtimestamp(float(payload.clicked_at), dt.UTC)
               if payload.clicked_at else None)  # a job queued before the field: now
    await services.store.record_feedback(payload.run_id, payload.message_ts, payload.voter,
                                         payload.part_key, payload.verdict, clicked)
    return f"{payload.verdict} feedback on {payload.part_key} recorded"


class JobRunner:
    def __init__(self, services: Services, payload: JobPayload) -> None:
        self.services = services
        self.payload = payload
        self.config = services.settings.worker
        self.work = ThreadWork(services, payload)
        self.outcome = "finished"  # how the job ended (workers.metrics.JOB_OUTCOMES)

    async def run(self) -> str:
        if not await self.services.queue.is_active(self.payload.job_id):
            return "already ended"
        request = await self.services.requests.load(self.payload.request_key) \
            or await self._recorded_request()
        if request is None:
            await self.services.queue.ended(self.payload.job_id)
            return "request expired"
        if self.payload.kind in (FOLLOWUP, WATCH) \
                and await self.services.queue.is_active(request.job_id):
            raise Retry(defer=self.config.lease_s / 2)  # answered once the research has ended
        lease = Lease(self.services.redis, self.payload.run_id, self.payload.job_id,
                      self.config.lease_s)
        if not await lease.acquire():
            if await lease.holder_job() == self.payload.job_id:
                return "already running on another worker"
            raise Retry(defer=self.config.lease_s / 2)  # another job of this run is working
        if await self.services.queue.has_ended(self.payload.job_id):
            return await self._ended_before(lease)
        await self.services.redis.set(started_key(self.payload.job_id), 1, ex=KEEP_S)
        await self.services.redis.delete(claim_key(self.payload.job_id))  # a resume has taken over
        crashes = int(await self.services.redis.get(crashes_key(self.payload.job_id)) or 0)
        if crashes >= self.config.max_crashes:
            return await self._give_up(lease, request, crashes)
        # what an earlier attempt was doing is no longer true (see reconciler._count_crash)
        await self.services.redis.delete(doing_key(self.payload.job_id))
        return await self._holding(lease, request)

    async def _recorded_request(self) -> ResearchRequestMsg | None:
        """The request as the job was queued with it, written back to Redis: a failover can
        lose the request record and keep the job queued after it (the bot's enqueue landing
        on the new primary)."""
        request = await self.services.queue.recorded_request(self.payload.job_id)
        if request is not None:
            log.warning("job %s: its request was lost by Redis; restored from the SQL record",
                        self.payload.job_id)
            await self.services.requests.save(request)
            await self.services.requests.link_thread(request)
        return request

    async def _ended_before(self, lease: Lease) -> str:
        """The SQL record says an earlier attempt ended this job, and Redis lost that (a
        failover's write loss): it was revived as active. A job is marked ended before its
        lease is given back, so holding the lease and finding it ended settles it."""
        log.warning("job %s had ended; Redis had lost that, not running it again",
                    self.payload.job_id)
        await self.services.queue.forget(self.payload.job_id)
        await lease.release()
        return "already ended"

    async def _give_up(self, lease: Lease, request: ResearchRequestMsg, crashes: int) -> str:
        """The job took its worker down `crashes` times: say where, keep what was published."""
        raw = await self.services.redis.get(doing_key(self.payload.job_id))
        doing = raw.decode() if isinstance(raw, bytes) else "an unknown step"
        log.error("job %s crashed its worker %d times (last at %s); not resuming it",
                  self.payload.job_id, crashes, doing)
        JOBS_ENDED.labels(self.payload.kind, "given_up").inc()
        try:
            w = words_of(request)
            await self.work.failed(request, w("the worker crashed {n} times at {doing}; what "
                                              "was published above is kept", n=crashes,
                                              doing=doing))
        finally:
            await self._end(lease)
        return f"gave up after {crashes} crashes at {doing}"

    async def _holding(self, lease: Lease, request: ResearchRequestMsg) -> str:
        """The job at work, counted: started, in flight, and how it ended."""
        JOBS_STARTED.labels(self.payload.kind).inc()
        try:
            with RUNS_IN_FLIGHT.track_inprogress():
                return await self._held(lease, request)
        finally:
            JOBS_ENDED.labels(self.payload.kind, self.outcome).inc()

    async def _held(self, lease: Lease, request: ResearchRequestMsg) -> str:
        """The job with its lease: ended first, lease given back last, whatever happens."""
        try:
            outcome = await self._guarded(lease, request)
        except LeaseLost:
            self.outcome = "lease_lost"
            log.warning("job %s lost its lease (event loop stalled past %gs?); another "
                        "worker resumes the run", self.payload.job_id, self.config.lease_s)
            return "lease lost; another worker resumes the run"
        except SlackAway as away:  # still active: it runs again, resuming from its checkpoint
            self.outcome = "deferred"
            log.warning("job %s put off for %gs: Slack is away (%s)", self.payload.job_id,
                        away.defer_s, away.error)
            await self._put_off(lease, away.defer_s)
            raise Retry(defer=away.defer_s) from away
        except asyncio.CancelledError:  # shutdown: the reconciler hands the run on at once
            self.outcome = "handed_over"
            await self.services.redis.set(handover_key(self.payload.job_id), 1, ex=KEEP_S)
            await lease.release()
            raise
        except BaseException:
            self.outcome = "failed"
            await self._end(lease)  # a bug: reported to the user, not resumed forever
            raise
        await self._end(lease)
        return outcome

    async def _put_off(self, lease: Lease, defer_s: float) -> None:
        """Give the lease back for a retry ARQ runs in `defer_s`: claimed meanwhile, so that
        the reconciler does not take the run for one whose worker died (the retry deletes
        the claim once it holds the lease; a lost retry's claim expires and it is revived)."""
        claim_ms = int((defer_s + OUTAGE_CLAIM_LEASES * self.config.lease_s) * 1000)
        await self.services.redis.set(claim_key(self.payload.job_id), 1, px=claim_ms)
        await lease.release()

    async def _end(self, lease: Lease) -> None:
        await self.services.queue.ended(self.payload.job_id)
        await self.services.requests.drop_search_token(self.payload.job_id)  # none beyond it
        await lease.release()

    async def _guarded(self, lease: Lease, request: ResearchRequestMsg) -> str:
        """The work, with a watchdog that renews the lease and listens for Stop."""
        work = asyncio.create_task(self._work(request))
        watch = asyncio.create_task(self._watch(lease, request.key))
        try:
            await asyncio.wait({work, watch}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (work, watch):
                task.cancel()
            await asyncio.gather(work, watch, return_exceptions=True)
        if not work.cancelled():
            return work.result()
        if watch.result() == "lost":
            raise LeaseLost(self.payload.run_id)
        self.outcome = "stopped"
        return await self.work.stopped(request)

    async def _watch(self, lease: Lease, key: str) -> str:
        """"stop" when the requester pressed Stop; "lost" when the lease is someone else's,
        or could not be renewed (Redis away) for longer than the lease lasts."""
        poll_s = min(STOP_POLL_S, self.config.heartbeat_s)
        renewed = time.monotonic()
        while True:
            await asyncio.sleep(poll_s)
            try:
                if await self.services.requests.stop_requested(key):
                    return "stop"
                if time.monotonic() - renewed >= self.config.heartbeat_s:
                    if not await lease.renew():
                        return "lost"
                    renewed = time.monotonic()
            except RedisError as exc:
                log.warning("job %s: Redis unavailable (%s); retrying", self.payload.job_id, exc)
                if time.monotonic() - renewed > self.config.lease_s:
                    return "lost"

    async def _work(self, request: ResearchRequestMsg) -> str:
        try:
            outcome = await self._within_limit(request)
        except RunError as exc:
            self.outcome = "failed"
            await self.work.failed(request, str(exc))
            return f"failed: {exc}"
        except Exception as exc:
            if is_outage(exc):
                return await self._outage(request, exc)
            self.outcome = "failed"
            # logged first: if telling the thread fails too, its error must not hide this one
            log.exception("job %s failed", self.payload.job_id)
            w = words_of(request)
            await self.work.failed(request, w("an internal error; the worker log has the "
                                              "details"))
            raise
        await self.services.redis.delete(outages_key(self.payload.job_id))
        if self.work.refused:
            self.outcome = "refused"
        return outcome

    async def _within_limit(self, request: ResearchRequestMsg) -> str:
        limit_s = max(self.config.job_timeout_s - TIME_LIMIT_MARGIN_S, 1)
        try:
            async with asyncio.timeout(limit_s) as deadline:
                return await self.work.run(request)
        except TimeoutError:
            if not deadline.expired():
                raise
            self.outcome = "failed"
            w = words_of(request)
            await self.work.failed(request, w("it ran past the job time limit of {n} s",
                                              n=limit_s))
            return "failed: time limit"

    async def _outage(self, request: ResearchRequestMsg, exc: Exception) -> str:
        """SlackAway (the job runs again later), or after OUTAGE_TRIES outages in a row the
        thread is told (if Slack takes that message)."""
        key = outages_key(self.payload.job_id)
        outages = int(await self.services.redis.incr(key))
        await self.services.redis.expire(key, KEEP_S)
        if outages < OUTAGE_TRIES:
            defer_s = min(self.config.lease_s / 2 * 2 ** (outages - 1), OUTAGE_WAIT_S)
            raise SlackAway(slack_error(exc), defer_s) from exc
        log.error("job %s: Slack failed %d times in a row (%s); giving up",
                  self.payload.job_id, outages, slack_error(exc))
        self.outcome = "failed"
        w = words_of(request)
        await self.work.failed(request, w("Slack kept failing ({error})",
                                          error=slack_error(exc)))
        return f"failed: Slack kept failing ({slack_error(exc)})"
