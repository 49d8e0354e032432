"""What the canvas and the export jobs share (issue 46): the job's run and thread, the run's
document (`contract.research_document`) with a link back to its thread, the replies in the
thread, and what a failed Slack call is told as: a missing scope, a rate limit, an answer that
is not Slack's JSON, canvases switched off, or any other refusal, each a clear line in the
thread instead of a click that seems to do nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

import redis.asyncio as aioredis
from arq import Retry
from slack_sdk.errors import SlackApiError, SlackRequestError
from slack_sdk.web.async_client import AsyncWebClient

from contract.keys import keep_key, request_channel
from contract.queue import JobPayload
from contract.requests import FINISHED, ResearchRequestMsg
from contract.research_document import ResearchDocument, research_document
from contract.slack_client import SLACK_FAILURES, is_outage, slack_error
from research_core.errors import RunNotFound
from research_core.loop.memory.state import RunState
from research_core.settings import Settings
from research_core.store.restore import load_state
from research_core.store.sql import SqlStore
from research_core.wording import ENGLISH_WORDS, Words, for_question
from workers.services import Services

log = logging.getLogger(__name__)

KEEP_FAILURES = (*SLACK_FAILURES, SlackRequestError)  # files_upload_v2's upload step raises this
LOCK_S = 60.0  # one canvas or export job of a run at a time
LOCK_WAIT_S = 20.0
DISABLED = frozenset({"canvas_disabled_user_team", "team_tier_cannot_create_channel_canvases",
                      "free_team_canvas_tab_already_exists", "feature_not_enabled",
                      "canvas_creation_failed", "not_allowed_token_type", "restricted_action"})


@dataclass(frozen=True)
class KeepJob:
    """Whose click, for which run, answered in which thread."""

    run_id: str
    request_key: str
    channel: str
    thread_ts: str
    user: str

    @classmethod
    def of(cls, payload: JobPayload) -> KeepJob:
        return cls(payload.run_id, payload.request_key, request_channel(payload.request_key),
                   payload.message_ts, payload.voter)

    def thread(self, question: str) -> ResearchRequestMsg:
        """The thread as `workers.thread_messages.post_once` names it."""
        return ResearchRequestMsg(self.request_key, self.user, self.channel, self.thread_ts,
                                  self.thread_ts, question, FINISHED)


@dataclass(frozen=True)
class Keeper:
    """What the jobs use: Slack (the job's workspace), the run store and Redis."""

    slack: AsyncWebClient
    store: SqlStore
    redis: aioredis.Redis
    settings: Settings

    @classmethod
    def of(cls, services: Services) -> Keeper:
        return cls(services.slack, services.store, services.redis, services.settings)

    async def document(self, job: KeepJob) -> tuple[RunState, ResearchDocument] | None:
        """The run and its document; None (told in the thread) when the run is gone or has
        no report yet."""
        try:
            state = await load_state(self.store, job.run_id, self.settings)
        except RunNotFound:
            w = ENGLISH_WORDS
            await self.reply(job, w("This research is no longer stored, so it cannot be kept."))
            return None
        found = research_document(state, await self.thread_link(job))
        if found is None:
            w = for_question(state.question)
            await self.reply(job, w("This research has no report yet; keep it once it has "
                                    "finished."))
            return None
        return state, found

    async def thread_link(self, job: KeepJob) -> str:
        """The thread's permalink ("" when Slack does not give one)."""
        try:
            resp = await self.slack.chat_getPermalink(channel=job.channel,
                                                      message_ts=job.thread_ts)
        except SLACK_FAILURES as exc:
            log.info("no permalink for %s: %s", job.request_key, slack_error(exc))
            return ""
        return str(resp.get("permalink") or "")

    async def reply(self, job: KeepJob, text: str) -> None:
        """A line in the job's thread (logged when Slack does not take it either)."""
        try:
            await self.slack.chat_postMessage(channel=job.channel, thread_ts=job.thread_ts,
                                              text=text)
        except SLACK_FAILURES as exc:
            log.error("reply to %s not posted (%s): %s", job.request_key, slack_error(exc),
                      text)

    async def tell(self, job: KeepJob, text: str) -> None:
        """A line for the person who clicked only (best effort)."""
        try:
            await self.slack.chat_postEphemeral(channel=job.channel, user=job.user,
                                                thread_ts=job.thread_ts, text=text)
        except SLACK_FAILURES as exc:
            log.info("note to %s not shown: %s", job.user, slack_error(exc))

    @contextlib.asynccontextmanager
    async def run_lock(self, run_id: str) -> AsyncIterator[None]:
        """One canvas or export job of a run at a time (two quick clicks make one canvas);
        a job that cannot get it in LOCK_WAIT_S runs again later."""
        key, waited = keep_key(run_id), 0.0
        while not await self.redis.set(key, 1, nx=True, px=int(LOCK_S * 1000)):
            if waited >= LOCK_WAIT_S:
                raise Retry(defer=LOCK_WAIT_S)
            await asyncio.sleep(0.2)
            waited += 0.2
        try:
            yield
        finally:
            await self.redis.delete(key)


def why_failed(exc: BaseException, w: Words) -> str:
    """What a failed Slack call means for the person, in one clause."""
    error = slack_error(exc)
    data = getattr(getattr(exc, "response", None), "data", None)
    if error == "missing_scope":
        needed = str(data.get("needed") or "") if isinstance(data, dict) else ""
        return w("the app lacks the Slack permission {scope}; a workspace admin can add it by "
                 "reinstalling the app from its manifest", scope=needed or error)
    if isinstance(exc, SlackApiError) and error in ("ratelimited", "HTTP 429"):
        return w("Slack is limiting how often the app may call it; please try again in a "
                 "minute")
    if isinstance(exc, SlackRequestError):
        return w("the file did not reach Slack; please try again in a minute")
    if is_outage(exc) and error.startswith("HTTP 2"):  # an empty or cut body
        return w("Slack's answer was not the JSON it sends; please try again in a minute")
    if is_outage(exc):
        return w("Slack's answer could not be read ({error}); please try again in a minute",
                 error=error)
    if error in DISABLED:
        return w("canvases are not available to the app in this workspace ({error}); "
                 "Export as Markdown keeps the report as a file instead", error=error)
    return w("Slack refused it ({error})", error=error)
