"""`/research [auto|standard|deep] question` and the "Research this" message shortcut.

The command has no thread of its own: its picker (or, with a depth, its status message) is
posted in the channel and starts one. The shortcut researches a message's text in that
message's thread, for the person who used it. Problems are answered to that person only
(the command's ack, or the interaction's `response_url`), one line each.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext, AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot import keeping
from bot.slack_fields import channel_of, clicker_of, object_of, slack_id, text_of
from bot.start import DEEP_REFUSED, Starter, strip_mention
from contract.keys import request_key
from contract.mrkdwn import from_slack
from contract.slack_client import SLACK_FAILURES, is_outage, slack_error
from research_core.wording import ENGLISH_WORDS, N_, Words, for_question

log = logging.getLogger("bot.commands")

JSON = dict[str, Any]
COMMAND = "/research"
SHORTCUT = "research_this"
USAGE = N_("Usage: `/research [auto|standard|deep] your question`, for example "
           "`/research deep how did heat pump prices move in 2026?`")  # no question: English
NO_TEXT = N_("That message has no text to research.")
TAKEN = N_("This thread already has a research request; ask a follow-up in the thread "
           "instead.")
NOT_HERE = N_("I do not answer in this channel (the team policy); ask an admin where I do.")
_DEPTH = re.compile(r"^\s*(auto|standard|deep)\b[\s:,-]*", re.IGNORECASE)


def parse_command(text: str) -> tuple[str | None, str]:
    """(depth or None, question) of the command's text."""
    found = _DEPTH.match(text)
    if found is None:
        return None, text.strip()
    return found.group(1).lower(), text[found.end():].strip()


def cannot_post(exc: BaseException, w: Words = ENGLISH_WORDS) -> str:
    if is_outage(exc):
        return w("Slack did not take my message ({error}); please ask again in a minute.",
                 error=slack_error(exc))
    return w("I cannot post here ({error}): invite me to the channel with `/invite @RED`, or "
             "ask in a channel I am in.", error=slack_error(exc))


def register(app: AsyncApp, starter: Starter) -> None:
    commands = _Commands(starter)
    app.command(COMMAND)(commands.on_command)
    app.shortcut(SHORTCUT)(commands.on_shortcut)


class _Commands:
    def __init__(self, starter: Starter) -> None:
        self.starter = starter

    async def on_command(self, ack: AsyncAck, command: JSON, client: AsyncWebClient,
                         respond: AsyncRespond) -> None:
        user, channel = slack_id(command.get("user_id")), slack_id(command.get("channel_id"))
        if user is None or channel is None:
            await ack()
            log.warning("ignored a %s command without a usable user or channel", COMMAND)
            return
        kept = await keeping.from_command(self.starter, from_slack(text_of(command.get("text"))),
                                          user, slack_id(command.get("team_id")))
        if kept is not None:  # `/research canvas|export [RUN_ID]` (bot/keeping.py)
            await ack(text=kept)
            return
        depth, question = parse_command(from_slack(text_of(command.get("text"))))
        reply = self.starter.refusal(question, USAGE)
        if reply is not None:
            await ack(text=reply)
            return
        note, w = None, for_question(question)
        if not self.starter.policy.answers_in(channel):
            await ack(text=w(NOT_HERE))
            return
        if depth == "deep" and not self.starter.may_deep(user, channel):
            depth, note = None, w(DEEP_REFUSED)
        await ack()
        try:
            await self.starter.in_channel(client, user=user, channel=channel,
                                          question=question, team=slack_id(
                                              command.get("team_id")), depth=depth)
        except SLACK_FAILURES as exc:
            await respond(cannot_post(exc, w))
            return
        if note is not None:
            await respond(note)

    async def on_shortcut(self, ack: AsyncAck, body: JSON, client: AsyncWebClient,
                          respond: AsyncRespond, context: AsyncBoltContext) -> None:
        await ack()
        message = object_of(body, "message")
        user, channel, ts = clicker_of(body), channel_of(body), slack_id(message.get("ts"))
        if user is None or channel is None or ts is None:
            log.warning("ignored a %s shortcut without a usable user, channel or message",
                        SHORTCUT)
            return
        thread_ts = slack_id(message.get("thread_ts")) or ts
        question = from_slack(strip_mention(text_of(message.get("text")),
                                            context.bot_user_id))
        reply, w = self.starter.refusal(question, NO_TEXT), for_question(question)
        if reply is None and not self.starter.policy.answers_in(channel):
            reply = w(NOT_HERE)
        requests = self.starter.requests
        if reply is None and (await requests.for_thread(channel, thread_ts) is not None
                              or await requests.load(request_key(channel, ts)) is not None):
            reply = w(TAKEN)
        if reply is not None:
            await respond(reply)
            return
        team = object_of(body, "team").get("id")
        try:
            await self.starter.in_thread(client, user=user, channel=channel, ts=ts,
                                         thread_ts=thread_ts, question=question,
                                         team=slack_id(team))
        except SLACK_FAILURES as exc:
            await respond(cannot_post(exc, w))
