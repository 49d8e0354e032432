"""Steers: what a person writes in a request's thread while its research works, kept in Redis
for the run to read at its next step (`research_core.loop.review.steering`).

The bot appends each steer to the request's list (`steer_key`, oldest first); the worker's
`ThreadSteers` is the engine's `SteerSource` over that list: the run keeps how many it read in
its checkpoint and asks for those after them, so a resumed run reads each steer once. Who may
steer is the team policy's word (`Policy.may_steer`); the research is working while its job is
active (queued or running, not yet ended).
"""

from __future__ import annotations

import json
import re

import redis.asyncio as aioredis

from contract.keys import ACTIVE_KEY, KEEP_S, steer_key
from contract.redis_server import awaited
from contract.requests import ResearchRequestMsg
from research_core.protocols import Steer

MAX_STEERS = 50  # a thread's steers the run reads at most (a flood is not a plan)
STEER_CHARS = 500
_QUESTION = re.compile(r"[?？]")


def is_question(text: str) -> bool:
    """A message that asks something is answered as a follow-up after the research too."""
    return _QUESTION.search(text) is not None


async def research_working(redis: aioredis.Redis, request: ResearchRequestMsg) -> bool:
    """Whether the request's research job is queued or running (not a follow-up's job)."""
    return bool(await awaited(redis.hexists(ACTIVE_KEY, request.job_id)))


async def add_steer(redis: aioredis.Redis, request: ResearchRequestMsg, steer: Steer) -> int:
    """Keep a steer for the run; returns how many the thread has now."""
    record = json.dumps({"who": steer.who, "text": steer.text[:STEER_CHARS], "ts": steer.ts},
                        ensure_ascii=False)
    key = steer_key(request.key)
    count = int(await awaited(redis.rpush(key, record)))
    await redis.expire(key, KEEP_S)
    return count


class ThreadSteers:
    """The `SteerSource` of one request's thread."""

    def __init__(self, redis: aioredis.Redis, request_key: str) -> None:
        self.redis = redis
        self.key = steer_key(request_key)

    async def after(self, read: int) -> list[Steer]:
        if read >= MAX_STEERS:
            return []
        raw = await awaited(self.redis.lrange(self.key, read, MAX_STEERS - 1))
        return [_parsed(item) for item in raw]


def _parsed(item: str | bytes) -> Steer:
    """A record as a steer; one that cannot be read is an empty steer (read, changing
    nothing), so that the count the run keeps stays in step with the list."""
    try:
        data = json.loads(item)
        return Steer(str(data["who"]), str(data["text"]), str(data.get("ts") or ""))
    except (ValueError, KeyError, TypeError):
        return Steer("", "")
