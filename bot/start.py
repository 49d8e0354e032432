"""Opening a research request, however it was asked: a mention, a message in the assistant
container, the "Research this" message shortcut (a thread of its own: the picker goes in it), or
`/research` (no thread yet: the picker, or the status message when a depth was given, starts
one in the channel). Every request is noted for its requester's Home tab.

Choosing the depth is one place too (`choose`): the first choice wins even when two race,
deep is refused for someone not allowed it, and the picker becomes the status message.
A picker Slack does not take (an outage) is posted again later (`bot.pickers`).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

import redis.asyncio as aioredis
from slack_sdk.web.async_client import AsyncWebClient

from bot.metrics import DUPLICATES
from bot.pickers import PendingPickers
from contract.blocks import picker_blocks, picker_text, status_blocks, status_text, words_of
from contract.home import remember
from contract.keys import KEEP_S, chosen_key, request_key
from contract.mrkdwn import NO_PARSE
from contract.redis_server import awaited
from contract.requests import CHOOSING, QUEUED, Requests, ResearchRequestMsg
from contract.slack_client import SLACK_FAILURES, is_outage, slack_error
from research_core.policy import Policy
from research_core.question import is_blank
from research_core.wording import N_, Words, for_question

log = logging.getLogger("bot.start")

EMPTY_REPLY = N_("Please ask a question after mentioning me, for example: "
                 "`@RED how did heat pump sales move in 2026?`")  # no question: English
_ANY_MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")
DEEP_REFUSED = N_("Deep research is not enabled for you here; choose Auto or Standard (an "
                  "admin can allow Deep with RED_DEEP_ALLOWED or the policy file).")


# A request replaced in one round trip only while it is exactly as this bot last wrote it.
_SWAP = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
  return 1
end
return 0
"""
WAKE_EVERY_S = 1.0  # how often mentions look for pickers left pending (a restart, a replica)


class Queue(Protocol):
    """Where chosen requests, follow-ups and feedback go (the ARQ queue); True when newly
    queued."""

    async def research(self, request: ResearchRequestMsg) -> bool: ...

    async def followup(self, request: ResearchRequestMsg, ts: str, user: str,
                       text: str) -> bool: ...

    async def feedback(self, request: ResearchRequestMsg, message_ts: str, user: str,
                       part_key: str, verdict: str) -> bool: ...

    async def preview(self, request: ResearchRequestMsg) -> bool: ...

    async def watch_set(self, request: ResearchRequestMsg, user: str, cadence: str) -> bool: ...


def strip_mention(text: str, bot_user_id: str | None) -> str:
    """The question without the bot's mention (any leading mention when the bot id is unknown)."""
    if bot_user_id:
        return re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", " ", text).strip()
    return _ANY_MENTION.sub(" ", text, count=1).strip()


def too_long(question: str, limit: int) -> str:
    """Why an oversized question is not taken, in its language."""
    w, n, most = for_question(question), format(len(question), ","), format(limit, ",")
    return w("That question is {n} characters long; please keep it under {limit} characters "
             "and ask again.", n=n, limit=most)


Estimate = Callable[[str | None, Words], Awaitable[str]]  # the picker's time line per team


def deep_permitted(user: str, allowed: tuple[str, ...]) -> bool:
    return "*" in allowed or user in allowed


class Starter:
    def __init__(self, redis: aioredis.Redis, queue: Queue | None, max_question_chars: int,
                 deep_allowed: tuple[str, ...], policy: Policy | None = None,
                 estimate: Estimate | None = None) -> None:
        self.requests = Requests(redis)
        self.queue = queue
        self.max_question_chars = max_question_chars
        self.deep_allowed = deep_allowed
        self.policy = policy or Policy()
        self.estimate = estimate
        self.pending = PendingPickers(self.requests, self._post_picker)  # Slack was away
        self._woken_at = -WAKE_EVERY_S

    async def first_delivery(self, event_id: str | None) -> bool:
        """True unless Slack delivered this event id already (a retry: dropped, counted)."""
        if not event_id or await self.requests.first_delivery(event_id):
            return True
        DUPLICATES.inc()
        return False

    def may_deep(self, user: str, channel: str | None) -> bool:
        """Deep for this person in this channel (the policy's per-channel rule, else
        RED_DEEP_ALLOWED)."""
        return self.policy.may_deep(user, channel, self.deep_allowed)

    async def picker(self, request: ResearchRequestMsg) -> list[dict[str, object]]:
        """The depth picker, with the expected tokens and cost from recent runs."""
        line = await self.estimate(request.team, words_of(request)) if self.estimate \
            else ""
        return picker_blocks(request, line)

    def refusal(self, question: str, empty: str = EMPTY_REPLY) -> str | None:
        """Why a question is not taken (empty, oversized), or None."""
        if is_blank(question):
            return empty
        if len(question) > self.max_question_chars:
            return too_long(question, self.max_question_chars)
        return None

    async def refused(self, client: AsyncWebClient, channel: str, thread_ts: str,
                      question: str) -> bool:
        """Empty or oversized questions are answered kindly in the thread, and go no further;
        in a channel the policy leaves out the bot stays silent."""
        if not self.policy.answers_in(channel):
            log.info("not answering in channel %s (the policy's channels)", channel)
            return True
        reply = self.refusal(question)
        if reply is not None:
            await client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=reply)
        return reply is not None

    async def in_thread(self, client: AsyncWebClient, *, user: str, channel: str, ts: str,
                        thread_ts: str, question: str, team: str | None,
                        action_token: str | None = None) -> ResearchRequestMsg:
        """A request for the message `ts`, its picker posted in the thread `thread_ts`;
        `action_token`: the message's, kept for the research when the policy lets it search
        the workspace's messages."""
        request = ResearchRequestMsg(key=request_key(channel, ts), user=user, channel=channel,
                                     thread_ts=thread_ts, ts=ts, question=question,
                                     status=CHOOSING, team=team)
        await self._save(request)
        await self.keep_token(request.job_id, team, action_token)
        if time.monotonic() - self._woken_at >= WAKE_EVERY_S:  # pickers a restart left
            self._woken_at = time.monotonic()
            self.pending.wake()
        try:
            await self._post_picker(client, request)
        except SLACK_FAILURES as exc:
            if not is_outage(exc):
                raise  # Slack's own refusal (not in the channel, say): the caller says so
            await self.pending.later(client, request, slack_error(exc))
        return request

    async def _post_picker(self, client: AsyncWebClient, request: ResearchRequestMsg) -> None:
        posted = await client.chat_postMessage(channel=request.channel,
                                               thread_ts=request.thread_ts,
                                               blocks=await self.picker(request),
                                               text=picker_text(request), **NO_PARSE)
        await self.remember_picker(request, posted.get("ts"))

    async def in_channel(self, client: AsyncWebClient, *, user: str, channel: str,
                         question: str, team: str | None,
                         depth: str | None) -> ResearchRequestMsg:
        """A request without a message of its own (a slash command): its picker — or, with a
        depth given, its status message — is posted in the channel and starts its thread."""
        request = ResearchRequestMsg(key=request_key(channel, f"{time.time():.6f}"),
                                     user=user, channel=channel, thread_ts="", ts="",
                                     question=question, status=CHOOSING, team=team)
        request = request.with_(ts=request.key.rsplit(":", 1)[1])
        if depth is None:
            posted = await client.chat_postMessage(
                channel=channel, blocks=await self.picker(request),
                text=picker_text(request), **NO_PARSE)
        else:
            chosen = request.with_(depth=depth, status=QUEUED)
            posted = await client.chat_postMessage(
                channel=channel, blocks=status_blocks(chosen, QUEUED),
                text=status_text(chosen, QUEUED), **NO_PARSE)
        root = str(posted["ts"])
        request = request.with_(thread_ts=root, picker_ts=root)
        await self._save(request)
        if depth is not None:
            await self.choose(client, request, depth, channel)
        return request

    async def keep_token(self, job_id: str, team: str | None, action_token: str | None) -> None:
        """Keep a message's action token for the job it asks for, when the policy lets runs
        of this workspace search its messages (docs/teams.md: slack_search)."""
        if action_token and self.policy.slack_search.on_in(team):
            await self.requests.keep_search_token(job_id, action_token)

    async def _save(self, request: ResearchRequestMsg) -> None:
        """The request, its thread's link to it and its line on the requester's Home tab, in
        one round trip to Redis (a pipeline, not a transaction: each write stands alone)."""
        async with self.requests.redis.pipeline(transaction=False) as pipe:
            written = Requests(pipe)
            await written.save(request)
            await written.link_thread(request)
            await remember(pipe, request)
            await pipe.execute()

    async def remember_picker(self, request: ResearchRequestMsg, picker_ts: object) -> None:
        """The picker's ts on its request (unless it has one): one compare-and-set while the
        stored request is still `request` (the usual case), else a read-change-write that
        keeps what changed meanwhile (a click that came first)."""
        if not picker_ts or request.picker_ts:
            return
        ts = str(picker_ts)
        if await awaited(self.requests.redis.eval(
                _SWAP, 1, request.key, request.to_json(), request.with_(picker_ts=ts).to_json(),
                str(KEEP_S))):
            return
        await self.requests.update(request.key, lambda r: None if r.picker_ts else r.with_(
            picker_ts=ts))

    async def choose(self, client: AsyncWebClient, request: ResearchRequestMsg, depth: str,
                     channel: str, clicked_ts: str | None = None) -> bool:
        """The requester's choice of depth: queue the research once, and turn the picker into
        the status message. False when it was already chosen (or expired meanwhile)."""
        if not await self.requests.redis.set(chosen_key(request.key), depth, nx=True,
                                             ex=KEEP_S):
            return False  # one winner even when two clicks race
        queued = await self.requests.update(request.key, lambda r: r.with_(
            status=QUEUED, depth=depth, picker_ts=r.picker_ts or clicked_ts))
        if queued is None:
            return False
        try:
            if self.queue is not None:
                await self.queue.research(queued)
        except BaseException:  # not queued: the requester can choose again
            await self.requests.update(request.key, lambda r: r.with_(status=CHOOSING))
            await self.requests.redis.delete(chosen_key(request.key))
            raise
        if queued.picker_ts:
            try:  # queued already: the worker shows the status again when it starts
                await client.chat_update(channel=channel, ts=queued.picker_ts,
                                         text=status_text(queued, QUEUED),
                                         blocks=status_blocks(queued, QUEUED), **NO_PARSE)
            except SLACK_FAILURES as exc:
                log.warning("picker of %s not turned into its status: %s", request.key,
                            slack_error(exc))
        return True
