"""The Watch menu under a finished research: the requester picks daily, weekly or monthly
(or Stop watching); a worker stores the choice and the workers' cron runs the cycles
(docs/watch.md). Anyone else's pick gets an ephemeral refusal; what the person is told is in
the question's language."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack_fields import channel_of, clicker_of, object_of
from bot.start import Starter
from contract.blocks import words_of
from contract.mrkdwn import mention
from contract.requests import FINISHED
from contract.slack_client import SLACK_FAILURES, slack_error
from contract.watch_blocks import WATCH_ACTION, parse_choice, watch_confirmation

JSON = dict[str, Any]
log = logging.getLogger(__name__)
_FAILURES = SLACK_FAILURES


def register(app: AsyncApp, starter: Starter) -> None:
    app.action(WATCH_ACTION)(Watching(starter).on_watch)


class Watching:
    def __init__(self, starter: Starter) -> None:
        self.starter = starter

    async def on_watch(self, ack: AsyncAck, body: JSON, action: JSON,
                       client: AsyncWebClient) -> None:
        await ack()
        choice = parse_choice(object_of(action, "selected_option").get("value"))
        user = clicker_of(body)
        if choice is None or user is None:
            log.warning("ignored a watch choice without a usable value or user")
            return
        request = await self.starter.requests.load(choice.request_key)
        if request is None:
            return
        channel, w = channel_of(body) or request.channel, words_of(request)
        if user != request.user:
            text = w("Only {who} can change how this thread is watched.",
                     who=mention(request.user))
        elif request.status != FINISHED and choice.cadence != "stop":
            text = w("Only a finished research can be watched.")
        else:
            if self.starter.queue is not None:
                await self.starter.queue.watch_set(request, user, choice.cadence)
            text = watch_confirmation(choice, w)
        try:
            await client.chat_postEphemeral(channel=channel, user=user,
                                            thread_ts=request.thread_ts, text=text)
        except _FAILURES as exc:
            log.info("watch confirmation not shown: %s", slack_error(exc))
