"""Slack's agent surfaces around the research: the agent view (its Chat tab is the app's
messages tab: `app_home_opened` with tab `messages`; the person is greeted once, and the
manifest's suggested prompts show there), the older assistant container (a greeting and
suggested prompts when a person opens a thread with the app, `assistant_thread_started`,
still sent to workspaces that have it), a question's thread titled with it, the App Home
tab (published when opened) and the feedback buttons under answers (each click queued for
a worker to store with the run: who, which message, which verdict).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack_fields import channel_of, clicker_of, object_of, slack_id
from bot.start import Starter, deep_permitted
from contract.blocks import FEEDBACK_ACTION, parse_feedback, words_of
from contract.home import home_words, publish_home, usage_text
from contract.keys import GREETED_S, greeted_key
from contract.mrkdwn import one_line
from contract.slack_client import SLACK_FAILURES, slack_error
from research_core.settings import BudgetSettings
from research_core.store.usage import UsageLine
from research_core.wording import N_

log = logging.getLogger("bot.surfaces")

JSON = dict[str, Any]
TITLE_CHARS = 120
# No question yet, and no locale (the app does not read users.info): the greeting, the prompts
# (the manifest's too) and the Home tab are in English; what follows a question is in its language.
GREETING = N_("Hi! Ask me a research question and I will offer Auto, Standard or Deep, then "
              "work through it step by step in this thread, with sources.")
PROMPTS_TITLE = N_("Try a question on the sample sources")
PROMPTS = [  # also the manifest's agent_view.suggested_prompts (tests/test_manifest.py)
    {"title": "Heat pump sales", "message": "How did European heat pump sales move in 2026, "
                                            "and why?"},
    {"title": "Heat pump prices", "message": "What happened to heat pump prices in Europe in "
                                             "2026?"},
    {"title": "Exports to Europe", "message": "How did Chinese heat pump exports to Europe "
                                              "change in 2026?"},
]
THANKS = N_("Thanks: your feedback on this answer is recorded.")
_FAILURES = SLACK_FAILURES


UsageReader = Callable[[], Awaitable[list[UsageLine]]]  # everyone's usage, for admins


def register(app: AsyncApp, starter: Starter, budget: BudgetSettings,
             usage: UsageReader | None = None) -> None:
    surfaces = _Surfaces(starter, budget, usage)
    app.event("assistant_thread_started")(surfaces.on_thread_started)
    app.event("app_home_opened")(surfaces.on_home_opened)
    app.action(FEEDBACK_ACTION)(surfaces.on_feedback)


async def set_title(client: AsyncWebClient, channel: str, thread_ts: str, question: str) -> None:
    """Title an assistant thread with its question (best effort)."""
    title = one_line(question)
    title = title if len(title) <= TITLE_CHARS else title[:TITLE_CHARS - 1] + "…"
    try:
        await client.assistant_threads_setTitle(channel_id=channel, thread_ts=thread_ts,
                                                title=title)
    except _FAILURES as exc:
        log.info("assistant thread %s not titled: %s", thread_ts, slack_error(exc))


async def set_status(client: AsyncWebClient, channel: str, thread_ts: str, status: str) -> None:
    """The thread's loading status, at once (best effort): a sign of life while a job is
    queued; the worker that takes the job keeps it set and clears it."""
    try:
        await client.assistant_threads_setStatus(channel_id=channel, thread_ts=thread_ts,
                                                 status=status)
    except _FAILURES as exc:
        log.info("assistant status of %s not set: %s", thread_ts, slack_error(exc))


class _Surfaces:
    def __init__(self, starter: Starter, budget: BudgetSettings,
                 usage: UsageReader | None) -> None:
        self.starter = starter
        self.budget = budget
        self.usage = usage

    async def _fresh(self, body: JSON) -> bool:
        return await self.starter.first_delivery(slack_id(body.get("event_id")))

    async def on_thread_started(self, ack: AsyncAck, body: JSON, event: JSON,
                                client: AsyncWebClient) -> None:
        """A person opened a thread with the app: a greeting and suggested prompts."""
        await ack()
        thread = object_of(event, "assistant_thread")
        channel, thread_ts = slack_id(thread.get("channel_id")), slack_id(thread.get("thread_ts"))
        if channel is None or thread_ts is None or not await self._fresh(body):
            return
        try:
            await client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=GREETING)
            await client.assistant_threads_setSuggestedPrompts(
                channel_id=channel, thread_ts=thread_ts, title=PROMPTS_TITLE, prompts=PROMPTS)
        except _FAILURES as exc:
            log.warning("assistant thread %s not set up: %s", thread_ts, slack_error(exc))

    async def on_home_opened(self, ack: AsyncAck, body: JSON, event: JSON,
                             client: AsyncWebClient) -> None:
        await ack()
        user = slack_id(event.get("user"))
        if user is not None and event.get("tab") == "messages":
            await self._agent_view_opened(body, event, user, client)
            return
        if user is None or event.get("tab") not in (None, "home") or not await self._fresh(body):
            return  # a repeat of one delivery (its event id) publishes nothing again
        allowed = deep_permitted(user, self.starter.deep_allowed)
        w = await home_words(client, user)
        everyone = None
        if self.usage is not None and self.starter.policy.is_admin(user):
            everyone = usage_text(await self.usage(), self.starter.policy.caps, w)
        await publish_home(client, self.starter.requests.redis, user, self.budget, allowed,
                           everyone, w)

    async def _agent_view_opened(self, body: JSON, event: JSON, user: str,
                                 client: AsyncWebClient) -> None:
        """The agent view (the app's Chat tab) opened: the person is greeted there the first
        time only (Slack sends this event every time the tab is opened); its suggested
        prompts are the manifest's. A question written there arrives as `message.im`."""
        channel = slack_id(event.get("channel"))
        if channel is None or not channel.startswith("D"):
            return
        first = await self.starter.requests.redis.set(
            greeted_key(slack_id(body.get("team_id")), user), 1, nx=True, ex=GREETED_S)
        if not first:
            return
        try:
            await client.chat_postMessage(channel=channel, text=GREETING)
        except _FAILURES as exc:
            log.warning("agent view greeting for %s not posted: %s", user, slack_error(exc))

    async def on_feedback(self, ack: AsyncAck, body: JSON, action: JSON,
                          client: AsyncWebClient) -> None:
        """Thumbs up or down on an answer: queued for a worker to store with its run."""
        await ack()
        found = parse_feedback(action.get("value"))
        user, channel = clicker_of(body), channel_of(body)
        container = object_of(body, "container")
        message_ts = slack_id(container.get("message_ts"))
        thread_ts = slack_id(container.get("thread_ts")) or slack_id(
            object_of(body, "message").get("thread_ts"))
        if found is None or user is None or channel is None or message_ts is None \
                or thread_ts is None:
            log.warning("ignored a feedback click without a usable value, user or message")
            return
        verdict, run_id, part_key = found
        request = await self.starter.requests.for_thread(channel, thread_ts)
        if request is None or request.run_id != run_id:
            log.warning("ignored feedback for run %s: not this thread's run", run_id)
            return
        if self.starter.queue is not None:
            await self.starter.queue.feedback(request, message_ts, user, part_key, verdict)
        try:
            await client.chat_postEphemeral(channel=channel, user=user, thread_ts=thread_ts,
                                            text=words_of(request)(THANKS))
        except _FAILURES as exc:
            log.info("feedback thanks not shown: %s", slack_error(exc))
