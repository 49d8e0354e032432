"""The ARQ queue between the bot and the workers: JSON jobs with deterministic ids.

Every job is `run_job(payload)`; the payload says which request (and which follow-up) it
serves. Jobs that should run until they end are kept in the `red:active` hash (job id →
payload): the workers' reconciler re-enqueues one whose run lost its lease (its worker died),
so it resumes from its checkpoint within lease + reconcile interval, not ARQ's job timeout.
Given `records` (the SQL `jobs` table), such a job is also recorded there before it is queued
and marked ended there before `red:active` forgets it: Redis can lose its last writes in a
failover, and the workers' sweep (`workers/sweep.py`) queues again what the record holds
unfinished and Redis no longer does.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from arq.connections import ArqRedis, create_pool

from contract.keys import ACTIVE_KEY
from contract.metrics import JOBS_QUEUED
from contract.redis_server import awaited
from contract.redis_target import is_sentinel, redis_settings, sentinel_pool
from contract.requests import ResearchRequestMsg, followup_job_id, run_id_for

JOB_FUNCTION = "run_job"
RESEARCH = "research"
FOLLOWUP = "followup"
FEEDBACK = "feedback"  # a person's verdict on an answer, stored with the run by a worker
PREVIEW = "preview"  # split the question once and show the plan (docs/teams.md)
WATCH_SET = "watch-set"  # the requester chose a watch cadence (or stop): stored by a worker
WATCH = "watch"  # one watch cycle of a thread, as of a date (docs/watch.md)
MAX_TEXT_CHARS = 2000  # a stored failure's text


def serialize(data: dict[str, Any]) -> bytes:
    """ARQ's job serializer: JSON, never pickle. It also stores each job's result, which for
    a failed job is its exception: anything JSON cannot hold is stored as one line of text
    (`_as_text`), so a failure is always recorded, never lost to a TypeError. Text that is
    not valid Unicode (a lone surrogate) is kept as its escape."""
    return json.dumps(data, ensure_ascii=False, default=_as_text).encode("utf-8",
                                                                        "backslashreplace")


def _as_text(value: object) -> str:
    """A value JSON cannot hold, as bounded one-line text ("AttributeError: …")."""
    if isinstance(value, BaseException):
        said = " ".join(str(value).split())
        text = f"{type(value).__name__}: {said}" if said else type(value).__name__
    else:
        text = " ".join(repr(value).split())
    return text[:MAX_TEXT_CHARS]


def deserialize(raw: bytes) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(raw)
    return data


async def connect(redis_url: str) -> ArqRedis:
    """ARQ's pool for a plain or a Sentinel URL (`contract.redis_target`), with retries."""
    if is_sentinel(redis_url):
        return await sentinel_pool(redis_url, serialize, deserialize)
    return await create_pool(redis_settings(redis_url), job_serializer=serialize,
                             job_deserializer=deserialize)


WATCH_JOB_PREFIX = "watch:"  # a watch cycle's job id: scheduled work, in a lane of its own


@dataclass(frozen=True)
class JobPayload:
    """What a job does: research a request, or answer one follow-up in its thread."""

    kind: str
    job_id: str
    request_key: str
    followup_ts: str = ""
    followup_user: str = ""
    followup_text: str = ""
    message_ts: str = ""  # feedback: the answer's message, who judged it, the part, the verdict
    voter: str = ""
    part_key: str = ""
    verdict: str = ""
    cadence: str = ""  # watch-set: daily, weekly, monthly or stop
    as_of: str = ""  # watch: the cycle's date (ISO)
    team: str = ""  # the workspace: the worker speaks to Slack with this team's token
    clicked_at: str = ""  # feedback: when the bot took the click (epoch s); the latest counts

    @property
    def run_id(self) -> str:
        return run_id_for(self.request_key)

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobPayload:
        return cls(**{k: str(data.get(k) or "") for k in cls.__dataclass_fields__})

    @classmethod
    def research(cls, request: ResearchRequestMsg) -> JobPayload:
        return cls(RESEARCH, request.job_id, request.key, team=request.team or "")

    @classmethod
    def followup(cls, request: ResearchRequestMsg, ts: str, user: str, text: str) -> JobPayload:
        return cls(FOLLOWUP, followup_job_id(request.channel, ts), request.key, ts, user, text,
                   team=request.team or "")

    @classmethod
    def feedback(cls, request: ResearchRequestMsg, message_ts: str, user: str, part_key: str,
                 verdict: str) -> JobPayload:
        now = f"{time.time():.6f}"
        job = f"feedback:{request.channel}:{message_ts}:{user}:{now}"
        return cls(FEEDBACK, job, request.key, message_ts=message_ts, voter=user,
                   part_key=part_key, verdict=verdict, team=request.team or "", clicked_at=now)

    @classmethod
    def watch_set(cls, request: ResearchRequestMsg, user: str, cadence: str) -> JobPayload:
        job = f"watchset:{request.channel}:{request.thread_ts}:{user}:{time.time():.6f}"
        return cls(WATCH_SET, job, request.key, voter=user, cadence=cadence,
                   team=request.team or "")

    @classmethod
    def watch(cls, request_key: str, channel: str, thread_ts: str, as_of: str,
              team: str = "") -> JobPayload:
        """One cycle per thread and date: ARQ drops the same job id queued twice."""
        return cls(WATCH, f"{WATCH_JOB_PREFIX}{channel}:{thread_ts}:{as_of}", request_key,
                   as_of=as_of, team=team)

    @classmethod
    def preview(cls, request: ResearchRequestMsg) -> JobPayload:
        return cls(PREVIEW, f"preview:{request.channel}:{request.ts}", request.key,
                   team=request.team or "")


class JobRecords(Protocol):
    """The durable record of unfinished jobs (`research_core.store.jobs.JobRecords`)."""

    async def queued(self, job_id: str, run_id: str, kind: str, payload: dict[str, Any],
                     request: dict[str, Any] | None) -> bool: ...

    async def ended(self, job_id: str) -> None: ...

    async def has_ended(self, job_id: str) -> bool: ...

    async def request_of(self, job_id: str) -> dict[str, Any] | None: ...


class JobQueue:
    """Enqueues jobs once each (ARQ drops a job id it already has) and tracks them as active;
    with `records`, also in the SQL store, which outlives a Redis that lost its writes."""

    def __init__(self, pool: ArqRedis, records: JobRecords | None = None) -> None:
        self.pool = pool
        self.records = records

    async def submit(self, payload: JobPayload, request: ResearchRequestMsg | None = None) -> bool:
        """True when this call queued the job (False: that job id was already queued, or it
        ended already). Recorded in SQL first, so a Redis that loses what follows cannot lose
        the job; `request` is kept with it, to restore a request record Redis lost."""
        if self.records is not None and not await self.records.queued(
                payload.job_id, payload.run_id, payload.kind, payload.to_dict(),
                asdict(request) if request is not None else None):
            return False
        await awaited(self.pool.hset(ACTIVE_KEY, payload.job_id, json.dumps(payload.to_dict())))
        return await self._new(payload)

    async def resubmit(self, payload: JobPayload, job_id: str) -> bool:
        """Enqueue an active job under `job_id` (its entry in `red:active` stays as it is)."""
        job = await self.pool.enqueue_job(JOB_FUNCTION, payload.to_dict(), _job_id=job_id)
        return job is not None

    async def _new(self, payload: JobPayload) -> bool:
        """Enqueue a new job under its own id, counted as queued (a resume or a recovery is
        queued again with `resubmit`, and counted where that happens)."""
        queued = await self.resubmit(payload, payload.job_id)
        if queued:
            JOBS_QUEUED.labels(payload.kind).inc()
        return queued

    async def research(self, request: ResearchRequestMsg) -> bool:
        return await self.submit(JobPayload.research(request), request)

    async def followup(self, request: ResearchRequestMsg, ts: str, user: str,
                       text: str) -> bool:
        return await self.submit(JobPayload.followup(request, ts, user, text), request)

    async def feedback(self, request: ResearchRequestMsg, message_ts: str, user: str,
                       part_key: str, verdict: str) -> bool:
        """Queue a verdict to be stored; not tracked as active (it holds no run's lease, and
        storing it twice keeps one row per person and message)."""
        payload = JobPayload.feedback(request, message_ts, user, part_key, verdict)
        return await self._new(payload)

    async def preview(self, request: ResearchRequestMsg) -> bool:
        """Queue the plan preview of a request: one planner call, no lease (not tracked as
        active; the requester can ask again if a worker dies under it)."""
        payload = JobPayload.preview(request)
        return await self._new(payload)

    async def watch_set(self, request: ResearchRequestMsg, user: str, cadence: str) -> bool:
        """Queue a watch choice to be stored (not tracked as active: it holds no lease)."""
        payload = JobPayload.watch_set(request, user, cadence)
        return await self._new(payload)

    async def active(self) -> list[JobPayload]:
        raw = await awaited(self.pool.hgetall(ACTIVE_KEY))
        return [JobPayload.from_dict(json.loads(v)) for v in raw.values()]

    async def is_active(self, job_id: str) -> bool:
        return bool(await awaited(self.pool.hexists(ACTIVE_KEY, job_id)))

    async def ended(self, job_id: str) -> None:
        """Marked ended in SQL first, then forgotten in Redis: a job the record holds
        unfinished has not ended (a failure between the two leaves it active, and it runs
        again, finding itself ended in `has_ended`)."""
        if self.records is not None:
            await self.records.ended(job_id)
        await self.forget(job_id)

    async def forget(self, job_id: str) -> None:
        """Drop a job from `red:active` only (its record says it ended)."""
        await awaited(self.pool.hdel(ACTIVE_KEY, job_id))

    async def has_ended(self, job_id: str) -> bool:
        """Whether the SQL record says the job ended (False without records)."""
        return self.records is not None and await self.records.has_ended(job_id)

    async def recorded_request(self, job_id: str) -> ResearchRequestMsg | None:
        """The request the job was queued with, from its SQL record (None without one)."""
        found = await self.records.request_of(job_id) if self.records is not None else None
        return None if found is None else ResearchRequestMsg.from_json(json.dumps(found))
