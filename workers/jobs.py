"""The ARQ job: research a request, or answer a follow-up, under the run's lease.

A job first takes the run's lease (one worker per run at a time; a follow-up waits for the
research to end by retrying later). While it works, a watchdog renews the lease every heartbeat
and polls the Stop flag. Stop cancels the work and closes the thread with a "stopped" message;
a lost lease cancels the work silently (another worker has the run now). A worker that dies
leaves the job marked started with an expiring lease: the reconciler re-enqueues it and the
new job resumes from the checkpoint, editing the messages already posted (the outbox).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from typing import Any

from arq import Retry

from bot.requests import FAILED, FINISHED, RUNNING, STOPPED, ResearchRequestMsg
from research_core.errors import RunError, RunNotFound
from research_core.restore import load_state
from research_core.state import RunState
from workers import thread_messages as msgs
from workers.lease import Lease
from workers.queue import FOLLOWUP, JobPayload
from workers.services import Services
from workers.slack_publisher import SlackPublisher

log = logging.getLogger(__name__)

STARTED_TTL_S = 7 * 24 * 3600
STOP_POLL_S = 1.0


def started_key(job_id: str) -> str:
    return f"red:started:{job_id}"


def progress_key(job_id: str) -> str:
    return f"red:progress:{job_id}"


class LeaseLost(Exception):
    """Another worker took this run over (this one stalled past its lease)."""


async def run_job(ctx: dict[str, Any], data: dict[str, Any]) -> str:
    """ARQ entry point; returns a one-line outcome that ARQ stores as the job result."""
    return await JobRunner(ctx["services"], JobPayload.from_dict(data)).run()


class JobRunner:
    def __init__(self, services: Services, payload: JobPayload) -> None:
        self.sv = services
        self.p = payload
        self.cfg = services.settings.worker

    async def run(self) -> str:
        if not await self.sv.queue.is_active(self.p.job_id):
            return "already ended"
        request = await self.sv.requests.load(self.p.request_key)
        if request is None:
            await self.sv.queue.ended(self.p.job_id)
            return "request expired"
        if self.p.kind == FOLLOWUP and await self.sv.queue.is_active(request.job_id):
            raise Retry(defer=self.cfg.lease_s / 2)  # answered once the research has ended
        lease = Lease(self.sv.redis, self.p.run_id, self.p.job_id, self.cfg.lease_s)
        if not await lease.acquire():
            if await lease.holder_job() == self.p.job_id:
                return "already running on another worker"
            raise Retry(defer=self.cfg.lease_s / 2)  # another job of this run is working
        await self.sv.redis.set(started_key(self.p.job_id), 1, ex=STARTED_TTL_S)
        try:
            outcome = await self._guarded(lease, request)
        except LeaseLost:
            log.warning("job %s lost its lease (event loop stalled past %gs?); another "
                        "worker resumes the run", self.p.job_id, self.cfg.lease_s)
            return "lease lost; another worker resumes the run"
        except Exception:
            await self.sv.queue.ended(self.p.job_id)  # a bug: reported, not retried forever
            raise
        await self.sv.queue.ended(self.p.job_id)
        await lease.release()
        return outcome

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
            if not work.done() or work.cancelled() or work.exception() is not None:
                await lease.release()  # interrupted: let the reconciler hand it on at once
        if not work.cancelled():
            return work.result()
        if watch.result() == "lost":
            raise LeaseLost(self.p.run_id)
        return await self._stopped(request)

    async def _watch(self, lease: Lease, key: str) -> str:
        """Returns "stop" when the requester pressed Stop, "lost" when the lease is gone."""
        since_renew = 0.0
        poll_s = min(STOP_POLL_S, self.cfg.heartbeat_s)
        while True:
            await asyncio.sleep(poll_s)
            if await self.sv.requests.stop_requested(key):
                return "stop"
            since_renew += poll_s
            if since_renew >= self.cfg.heartbeat_s:
                since_renew = 0.0
                if not await lease.renew():
                    return "lost"

    async def _work(self, request: ResearchRequestMsg) -> str:
        try:
            if self.p.kind == FOLLOWUP:
                return await self._followup(request)
            return await self._research(request)
        except RunError as exc:
            await self._failed(request, str(exc))
            return f"failed: {exc}"
        except Exception:
            await self._failed(request, "an internal error; the worker log has the details")
            raise

    async def _research(self, request: ResearchRequestMsg) -> str:
        await self._status(request, RUNNING)
        state = await self._state(request)
        publisher = await self._publisher(request)
        try:
            report = await self.sv.engine(publisher).run(state)
        finally:
            await publisher.close()
        note, blocks = msgs.finished_message(state, report)
        await msgs.post_once(self.sv.slack, self.sv.store, request, note, blocks)
        await self._status(request, FINISHED)
        return f"finished run {state.run_id} in {state.step} steps"

    async def _followup(self, request: ResearchRequestMsg) -> str:
        try:
            state = await load_state(self.sv.store, self.p.run_id, self.sv.settings)
        except RunNotFound:
            await self.sv.slack.chat_postMessage(
                channel=request.channel, thread_ts=request.thread_ts,
                text="I have no research in this thread to follow up on yet.")
            return "no run to follow up"
        ended_as = request.status
        await self._status(request, RUNNING)
        publisher = await self._publisher(request)
        try:
            done = await self.sv.engine(publisher).follow_up(
                state, self.p.followup_text, f"followup-{self.p.followup_ts}")
        finally:
            await publisher.close()
        await self._status(request, ended_as if ended_as in (FINISHED, STOPPED) else FINISHED)
        return f"follow-up answered ({done.researched_steps} research steps)"

    async def _state(self, request: ResearchRequestMsg) -> RunState:
        """The run's checkpoint when one exists (a resumed job), else a new run."""
        try:
            return await load_state(self.sv.store, self.p.run_id, self.sv.settings)
        except RunNotFound:
            pass
        settings = self.sv.settings
        state = RunState.new(request.question, settings.as_of or dt.date.today(), settings,
                             mode=request.depth or "auto", requester=request.user)
        state.run_id = self.p.run_id
        return state

    async def _publisher(self, request: ResearchRequestMsg) -> SlackPublisher:
        raw = await self.sv.redis.get(progress_key(self.p.job_id))
        key = progress_key(self.p.job_id)

        async def remember(ts: str) -> None:
            await self.sv.redis.set(key, ts, ex=STARTED_TTL_S)

        return SlackPublisher(self.sv.slack, request.channel, request.thread_ts,
                              progress_interval=self.sv.settings.slack.progress_interval_s,
                              progress_ts=raw.decode() if raw else None,
                              on_progress_ts=remember)

    async def _stopped(self, request: ResearchRequestMsg) -> str:
        try:
            state = await load_state(self.sv.store, self.p.run_id, self.sv.settings)
        except RunNotFound:
            state = await self._state(request)
        state.status = STOPPED
        await self.sv.store.save_checkpoint(state)
        note, blocks = msgs.stopped_message(state, request, self.p.job_id)
        await msgs.post_once(self.sv.slack, self.sv.store, request, note, blocks)
        await self._status(request, STOPPED)
        await self.sv.requests.clear_stop(request.key)
        return f"stopped at step {state.step}"

    async def _failed(self, request: ResearchRequestMsg, why: str) -> None:
        note, blocks = msgs.failed_message(self.p.run_id, self.p.job_id, why)
        await msgs.post_once(self.sv.slack, self.sv.store, request, note, blocks)
        await self._status(request, FAILED)

    async def _status(self, request: ResearchRequestMsg, status: str) -> None:
        updated = await self.sv.requests.set_status(request.key, status)
        await msgs.show_status(self.sv.slack, updated or request, status)
