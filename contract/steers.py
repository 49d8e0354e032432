"""Steers: what a person writes in a request's thread while its research works, kept in Redis
for the run to read at its next step (`research_core.loop.review.steering`).

The bot appends each steer to the request's list (`steer_key`, oldest first); the worker's
`ThreadSteers` is the engine's `SteerSource` over that list: the run keeps how many it read in
its checkpoint and asks for those after them, so a resumed run reads each steer once. Who may
steer is the team policy's word (`Policy.may_steer`); the research is working while its job is
active (queued or running, not yet ended).

When the run has done its last step, its worker closes the list with a mark (`close`): the
steers before the mark that no step read are answered as follow-ups, and a message the bot
appends after it is no steer (`add_steer` says so) but a follow-up at once. The mark is one
RPUSH, so each message falls on one side of it: none is read as a steer and lost as one.

What the bot says when it takes a steer says what the run will do with it (`steer_ack`, read
with the steering grammar, `research_core.text.requests`); the run tells the writer what it
did once it read it.
"""

from __future__ import annotations

import json
import re

import redis.asyncio as aioredis

from contract.keys import ACTIVE_KEY, KEEP_S, steer_key
from contract.mrkdwn import escape, one_line
from contract.redis_server import awaited
from contract.requests import ResearchRequestMsg
from research_core.protocols import Steer
from research_core.text.requests import read_request
from research_core.wording import CHINESE, ENGLISH, N_, Words

MAX_STEERS = 50  # a thread's steers the run reads at most (a flood is not a plan)
STEER_CHARS = 500
TOPIC_CHARS = 80  # what of a topic an acknowledgement quotes
CLOSED = json.dumps({"closed": True})  # the mark after the last steer a run reads
_QUESTION = re.compile(r"[?？]")
_LISTED = {ENGLISH: "; ", CHINESE: "；"}  # between the things a steer will do
ASKED = N_("Your question is also answered once the research is done.")
LATE = N_("The research has done its last step and is writing its answer, so this no longer "
          "changes its plan: I'll answer it as a follow-up right after.")
LATE_READ = N_("Your message came after the research's last step, so it did not change the "
               "plan: I'll answer it as a follow-up once the answer is posted.")


def is_question(text: str) -> bool:
    """A message that asks something is answered as a follow-up after the research too."""
    return _QUESTION.search(text) is not None


def steer_ack(text: str, w: Words) -> str:
    """What the bot says to a steer's writer when it takes it: what the run will do with it
    at its next step, clause by clause, as the rule reads it."""
    plans = []
    for clause in read_request(text):
        topic = f"“{escape(one_line(clause.topic)[:TOPIC_CHARS])}”"
        if clause.way == "away":
            plans.append(w("drop the open sub-questions about {topic}", topic=topic))
        elif clause.way == "plain":
            plans.append(w("move the open sub-questions about {topic} first", topic=topic))
        elif clause.narrows:
            plans.append(w("research {topic} next, as a new sub-question if no open one "
                           "covers it, and drop the open sub-questions far from it",
                           topic=topic))
        else:
            plans.append(w("research {topic} next, as a new sub-question if no open one "
                           "covers it", topic=topic))
    said = w("Noted: at its next step the research will {plan}. I'll tell you here what it "
             "changed.", plan=_LISTED[w.language].join(dict.fromkeys(plans))) if plans else \
        w("Noted, but this names nothing the plan could change, so the plan stays as it is.")
    return f"{said} {w(ASKED)}" if is_question(text) else said


async def research_working(redis: aioredis.Redis, request: ResearchRequestMsg) -> bool:
    """Whether the request's research job is queued or running (not a follow-up's job)."""
    return bool(await awaited(redis.hexists(ACTIVE_KEY, request.job_id)))


async def add_steer(redis: aioredis.Redis, request: ResearchRequestMsg, steer: Steer) -> bool:
    """Keep a steer for the run; whether the run reads it: False when the run has done its
    last step already (the list's close mark comes before it)."""
    record = json.dumps({"who": steer.who, "text": steer.text[:STEER_CHARS], "ts": steer.ts},
                        ensure_ascii=False)
    key = steer_key(request.key)
    count = int(await awaited(redis.rpush(key, record)))
    await redis.expire(key, KEEP_S)
    before = await awaited(redis.lrange(key, 0, count - 2)) if count > 1 else []
    return not any(_closes(item) for item in before)


class ThreadSteers:
    """The `SteerSource` of one request's thread, over its list in Redis. It tells no one
    what a steer did and answers no late steer (the worker's subclass does both)."""

    def __init__(self, redis: aioredis.Redis, request_key: str) -> None:
        self.redis = redis
        self.key = steer_key(request_key)

    async def after(self, read: int) -> list[Steer]:
        """The steers after the first `read`; none once the list is closed."""
        if read >= MAX_STEERS:
            return []
        raw = await awaited(self.redis.lrange(self.key, 0, MAX_STEERS - 1))
        if any(_closes(item) for item in raw):
            return []
        return [_parsed(item) for item in raw[read:]]

    async def tell(self, steer: Steer, text: str) -> None:
        """Nothing to tell through Redis."""

    async def close(self, read: int) -> list[Steer]:
        """Mark the end of steering; the steers before the mark after the first `read` (none
        when the list was closed before: a resumed run's late steers were handed on then)."""
        count = int(await awaited(self.redis.rpush(self.key, CLOSED)))
        await self.redis.expire(self.key, KEEP_S)
        before = await awaited(self.redis.lrange(self.key, 0, count - 2)) if count > 1 else []
        if any(_closes(item) for item in before):
            return []
        return [_parsed(item) for item in before[read:MAX_STEERS]]


def _closes(item: str | bytes) -> bool:
    return (item.decode() if isinstance(item, bytes) else item) == CLOSED


def _parsed(item: str | bytes) -> Steer:
    """A record as a steer; one that cannot be read is an empty steer (read, changing
    nothing), so that the count the run keeps stays in step with the list."""
    try:
        data = json.loads(item)
        return Steer(str(data["who"]), str(data["text"]), str(data.get("ts") or ""))
    except (ValueError, KeyError, TypeError):
        return Steer("", "")
