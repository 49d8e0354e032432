"""The plan preview (docs/teams.md): the picker's fourth choice, "Preview plan", queues one
planner call on a worker, which shows the sub-questions in the thread with Start and Edit.
Edit opens a modal (views.open) with the sub-questions as editable lines and the depth; its
submission (view_submission) saves them. Start queues the research on that plan at that depth.
Only the requester may start or edit; the preview expires after a day. What the requester and
others are told, in the thread and in the modal, is in the question's language.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack_fields import channel_of, clicker_of, message_ts, object_of, slack_id
from bot.start import DEEP_REFUSED, Starter
from contract.blocks import PREVIEW_ACTION, shown, words_of
from contract.keys import REQUEST_KEY
from contract.mrkdwn import NO_PARSE, mention
from contract.plan_blocks import (
    DEPTH_BLOCK,
    PLAN_BLOCK,
    PLAN_EDIT_ACTION,
    PLAN_MODAL,
    PLAN_START_ACTION,
    plan_modal,
    preview_blocks,
    preview_text,
    started_blocks,
    submitted,
)
from contract.requests import CHOOSING, PLANNING, PREVIEW, ResearchRequestMsg
from research_core.loop.planning.plan_preview import edited_lines
from research_core.wording import ENGLISH_WORDS, N_

log = logging.getLogger("bot.plans")

JSON = dict[str, Any]
EXPIRED = N_("This plan preview has expired (a preview lasts a day); mention me again to start "
             "over.")
PLANNING_NOTE = N_("Preview plan — splitting the question into sub-questions…")
ONLY_REQUESTER = {  # what someone other than the requester clicked
    "preview": N_("Only {who} can preview this plan."),
    "start": N_("Only {who} can start this plan."),
    "edit": N_("Only {who} can edit this plan.")}


def register(app: AsyncApp, starter: Starter, limit: int) -> None:
    plans = _Plans(starter, limit)
    app.action(PREVIEW_ACTION)(plans.on_preview)
    app.action(PLAN_START_ACTION)(plans.on_start)
    app.action(PLAN_EDIT_ACTION)(plans.on_edit)
    app.view(PLAN_MODAL)(plans.on_submit)


class _Plans:
    def __init__(self, starter: Starter, limit: int) -> None:
        self.starter = starter
        self.requests = starter.requests
        self.limit = limit

    async def _request(self, key: object) -> ResearchRequestMsg | None:
        if not isinstance(key, str) or not REQUEST_KEY.fullmatch(key):
            return None
        return await self.requests.load(key)

    async def _requester(self, client: AsyncWebClient, body: JSON, request: ResearchRequestMsg,
                         what: str) -> str | None:
        """The clicker when they are the requester; anyone else is told so (ephemeral)."""
        clicker = clicker_of(body)
        if clicker is None:
            return None
        if clicker != request.user:
            await client.chat_postEphemeral(
                channel=channel_of(body) or request.channel, user=clicker,
                thread_ts=request.thread_ts,
                text=words_of(request)(ONLY_REQUESTER[what], who=mention(request.user)))
            return None
        return clicker

    async def on_preview(self, ack: AsyncAck, body: JSON, action: JSON,
                         client: AsyncWebClient) -> None:
        """"Preview plan" on the picker: a worker splits the question once."""
        await ack()
        request = await self._request(action.get("value"))
        if request is None or request.status != CHOOSING:
            return
        if await self._requester(client, body, request, "preview") is None:
            return
        planning = await self.requests.update(request.key, lambda r: r.with_(
            status=PLANNING, picker_ts=r.picker_ts or message_ts(body))
            if r.status == CHOOSING else None)
        if planning is None:
            return  # a second click, or a depth chosen meanwhile
        if planning.picker_ts:
            w = words_of(planning)
            await client.chat_update(
                channel=planning.channel, ts=planning.picker_ts, text=w(PLANNING_NOTE),
                blocks=[{"type": "section", "text": {"type": "mrkdwn", "text": (
                    w("*Research request from {who}:*", who=mention(planning.user))
                    + f"\n>{shown(planning.question)}")[:3000]}},
                    {"type": "context", "elements": [{"type": "mrkdwn",
                                                      "text": w(PLANNING_NOTE)}]}],
                **NO_PARSE)
        if self.starter.queue is not None:
            await self.starter.queue.preview(planning)

    async def _previewed(self, client: AsyncWebClient, body: JSON, action: JSON,
                         what: str) -> ResearchRequestMsg | None:
        """The clicked preview when the requester clicked it and it has not expired."""
        request = await self._request(action.get("value"))
        if request is None or request.status != PREVIEW:
            return None
        clicker = await self._requester(client, body, request, what)
        if clicker is None:
            return None
        if request.preview_expired(time.time()):
            await client.chat_postEphemeral(channel=channel_of(body) or request.channel,
                                            user=clicker, thread_ts=request.thread_ts,
                                            text=words_of(request)(EXPIRED))
            return None
        return request

    async def on_start(self, ack: AsyncAck, body: JSON, action: JSON,
                       client: AsyncWebClient) -> None:
        """Start: the research runs on the previewed plan, at the depth chosen in the modal."""
        await ack()
        request = await self._previewed(client, body, action, "start")
        if request is None:
            return
        depth = request.depth or "auto"
        channel = channel_of(body) or request.channel
        if depth == "deep" and not self.starter.may_deep(request.user, channel):
            await client.chat_postEphemeral(channel=channel, user=request.user,
                                            thread_ts=request.thread_ts,
                                            text=words_of(request)(DEEP_REFUSED))
            return
        if not await self.starter.choose(client, request, depth, channel):
            return
        if request.preview_ts:
            await client.chat_update(channel=request.channel, ts=request.preview_ts,
                                     text=preview_text(request),
                                     blocks=started_blocks(request), **NO_PARSE)

    async def on_edit(self, ack: AsyncAck, body: JSON, action: JSON,
                      client: AsyncWebClient) -> None:
        """Edit: the modal with the sub-questions as lines and the depth."""
        await ack()
        request = await self._previewed(client, body, action, "edit")
        trigger = body.get("trigger_id")
        if request is None or not isinstance(trigger, str):
            return
        await client.views_open(trigger_id=trigger, view=plan_modal(request, self.limit))

    async def on_submit(self, ack: AsyncAck, body: JSON, view: JSON,
                        client: AsyncWebClient) -> None:
        """The modal's Save: checked (who, how many lines, Deep here), then kept and shown."""
        request = await self._request(view.get("private_metadata"))
        user = slack_id(object_of(body, "user").get("id"))
        w = words_of(request) if request is not None else ENGLISH_WORDS
        if request is None or request.status != PREVIEW or request.preview_expired(time.time()):
            await ack(response_action="errors", errors={PLAN_BLOCK: w(EXPIRED)})
            return
        if user != request.user:
            await ack(response_action="errors", errors={PLAN_BLOCK: w(
                "Only the requester ({who}) can edit this plan.", who=request.user)})
            return
        text, depth = submitted(view)
        lines, problem = edited_lines(text, self.limit, w)
        if problem is not None:
            await ack(response_action="errors", errors={PLAN_BLOCK: problem[:150]})
            return
        if depth == "deep" and not self.starter.may_deep(user, request.channel):
            await ack(response_action="errors", errors={DEPTH_BLOCK: w(DEEP_REFUSED)[:150]})
            return
        await ack()
        saved = await self.requests.update(request.key, lambda r: r.with_(
            plan=lines, depth=depth or r.depth) if r.status == PREVIEW else None)
        if saved is not None and saved.preview_ts:
            await client.chat_update(channel=saved.channel, ts=saved.preview_ts,
                                     text=preview_text(saved), blocks=preview_blocks(saved),
                                     **NO_PARSE)
