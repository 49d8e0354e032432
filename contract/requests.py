"""Research requests as the bot and the workers share them in Redis.

A request is created by a mention, chosen (depth) by its requester, then run by one ARQ job
(deterministic id); each follow-up in its thread is one more job. Its Redis keys are in
`contract.keys`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import WatchError

from contract.keys import (
    EVENT_DEDUP_S,
    KEEP_S,
    SEARCH_TOKEN_WAIT_S,
    event_key,
    search_token_key,
    stop_key,
    thread_key,
)
from research_core.settings.values import Secret

UPDATE_ATTEMPTS = 10

CHOOSING = "choosing"
QUEUED = "queued"
RUNNING = "running"
FINISHED = "finished"
STOPPED = "stopped"
FAILED = "failed"
ENDED = (FINISHED, STOPPED, FAILED)
PLANNING = "planning"  # "Preview plan" chosen: a worker is splitting the question
PREVIEW = "preview"  # the plan is shown with Start and Edit (docs/teams.md)
PREVIEW_TTL_S = 86_400  # a preview expires after a day




def job_id(channel: str, ts: str) -> str:
    return f"research:{channel}:{ts}"


def followup_job_id(channel: str, ts: str) -> str:
    return f"followup:{channel}:{ts}"








def run_id_for(key: str) -> str:
    """The engine's run id of a request: stable, so a resumed job finds its checkpoint."""
    return "s" + hashlib.sha256(key.encode()).hexdigest()[:11]


@dataclass(frozen=True)
class ResearchRequestMsg:
    """A research request as stored in Redis and handed to `enqueue` once its depth is chosen."""

    key: str
    user: str
    channel: str
    thread_ts: str
    ts: str
    question: str
    status: str
    depth: str | None = None
    picker_ts: str | None = None
    team: str | None = None  # the workspace it was asked in (a stream names its recipient)
    plan: list[str] | None = None  # the previewed (maybe edited) sub-questions
    preview_at: float | None = None  # when the preview was shown (it expires after a day)
    preview_ts: str | None = None  # the preview message

    def preview_expired(self, now: float) -> bool:
        return self.preview_at is None or now - self.preview_at > PREVIEW_TTL_S

    @property
    def job_id(self) -> str:
        """The deterministic ARQ job id: one job per request, however often it is enqueued."""
        return job_id(self.channel, self.ts)

    @property
    def run_id(self) -> str:
        return run_id_for(self.key)

    def with_(self, **changes: Any) -> ResearchRequestMsg:
        return replace(self, **changes)

    def to_json(self) -> str:
        # its fields read directly: `asdict` deep-copies, a cost on every mention (issue 45)
        return json.dumps({name: getattr(self, name) for name in self.__dataclass_fields__},
                          ensure_ascii=False)

    @classmethod
    def from_json(cls, raw: str | bytes) -> ResearchRequestMsg:
        data = json.loads(raw)
        return cls(**{k: data.get(k) for k in cls.__dataclass_fields__})


Change = Callable[[ResearchRequestMsg], ResearchRequestMsg | None]


class Requests:
    """The requests in Redis (the bot writes them; workers update their status)."""

    def __init__(self, redis: aioredis.Redis) -> None:
        self.redis = redis

    async def load(self, key: str) -> ResearchRequestMsg | None:
        raw = await self.redis.get(key)
        return None if raw is None else ResearchRequestMsg.from_json(raw)

    async def save(self, request: ResearchRequestMsg) -> None:
        await self.redis.set(request.key, request.to_json(), ex=KEEP_S)

    async def for_thread(self, channel: str, thread_ts: str) -> ResearchRequestMsg | None:
        key = await self.redis.get(thread_key(channel, thread_ts))
        return None if key is None else await self.load(_text(key))

    async def link_thread(self, request: ResearchRequestMsg) -> None:
        await self.redis.set(thread_key(request.channel, request.thread_ts), request.key,
                             ex=KEEP_S)

    async def update(self, key: str, change: Change) -> ResearchRequestMsg | None:
        """Read-change-write without losing a concurrent writer's change (WATCH/MULTI, tried
        again on a conflict); `change` returns None to leave the request as it is."""
        for _ in range(UPDATE_ATTEMPTS):
            async with self.redis.pipeline(transaction=True) as pipe:
                try:
                    await pipe.watch(key)
                    raw = await pipe.get(key)
                    changed = None if raw is None else change(ResearchRequestMsg.from_json(raw))
                    if changed is None:
                        return None
                    pipe.multi()  # type: ignore[no-untyped-call]  # untyped in redis-py
                    pipe.set(key, changed.to_json(), ex=KEEP_S)
                    await pipe.execute()
                    return changed
                except WatchError:
                    continue
        raise RuntimeError(f"request {key} kept changing under {UPDATE_ATTEMPTS} updates")

    async def set_status(self, key: str, status: str) -> ResearchRequestMsg | None:
        return await self.update(key, lambda r: r.with_(status=status))

    async def first_delivery(self, event_id: str) -> bool:
        """True the first time an event id is seen (Slack retries deliveries)."""
        return bool(await self.redis.set(event_key(event_id), 1, nx=True,
                                         ex=EVENT_DEDUP_S))

    async def request_stop(self, key: str) -> None:
        await self.redis.set(stop_key(key), 1, ex=KEEP_S)

    async def clear_stop(self, key: str) -> None:
        await self.redis.delete(stop_key(key))

    async def stop_requested(self, key: str) -> bool:
        return bool(await self.redis.exists(stop_key(key)))

    async def keep_search_token(self, job_id: str, token: str) -> None:
        """The action token of the message that asked for `job_id`: it lets the job search
        the workspace's messages as that person. It travels beside the request record, never
        in it (nor in the job's payload or SQL record), and is never logged."""
        await self.redis.set(search_token_key(job_id), token, ex=SEARCH_TOKEN_WAIT_S)

    async def search_token(self, job_id: str, keep_s: int) -> Secret | None:
        """The job's action token (kept `keep_s` longer: the job's time limit), or None."""
        raw = await self.redis.getex(search_token_key(job_id), ex=keep_s)
        return None if raw is None else Secret(_text(raw))

    async def drop_search_token(self, job_id: str) -> None:
        """The job ended: its action token is gone with it."""
        await self.redis.delete(search_token_key(job_id))


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value
